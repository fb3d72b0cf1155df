package profiling

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestStartStopWritesProfile(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	file := filepath.Join(t.TempDir(), "cpu.pprof")
	post := func(path string) int {
		resp, err := http.Post(srv.URL+path, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("/stop"); code != http.StatusConflict {
		t.Fatalf("stop without start: %d, want 409", code)
	}
	if code := post("/start?file=" + file); code != http.StatusOK {
		t.Fatalf("start: %d", code)
	}
	if code := post("/start?file=" + file); code != http.StatusConflict {
		t.Fatalf("second start: %d, want 409", code)
	}
	if code := post("/stop"); code != http.StatusOK {
		t.Fatalf("stop: %d", code)
	}
	if st, err := os.Stat(file); err != nil || st.Size() == 0 {
		t.Fatalf("profile file: %v, %v", st, err)
	}
}

func TestListenLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "localhost:0", "10.0.0.1:0"} {
		if _, err := Listen(addr); err == nil {
			t.Errorf("Listen(%q) accepted a non-loopback address", addr)
		}
	}
	got, err := Listen("127.0.0.1:0")
	if err != nil || got == "" {
		t.Fatalf("Listen(127.0.0.1:0) = %q, %v", got, err)
	}
}

// Issue 27 part 3: the scale bench reads the collector's figures around each
// phase from GET /runtime; a collection in between shows in the cycles.
func TestRuntimeAnswersTheCollectorFigures(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	get := func() map[string]float64 {
		resp, err := http.Get(srv.URL + "/runtime")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /runtime: %s", resp.Status)
		}
		var m map[string]float64
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatal(err)
		}
		for _, name := range RuntimeMetrics {
			if _, ok := m[name]; !ok {
				t.Errorf("GET /runtime lacks %s", name)
			}
		}
		return m
	}
	before := get()
	runtime.GC()
	runtime.GC()
	after := get()
	const cycles = "/gc/cycles/total:gc-cycles"
	if after[cycles] < before[cycles]+2 {
		t.Errorf("gc cycles %v then %v after two runtime.GC()", before[cycles], after[cycles])
	}
	if after["/gc/heap/goal:bytes"] <= 0 || after["/cpu/classes/total:cpu-seconds"] <= 0 {
		t.Errorf("heap goal %v, total CPU %v: want both > 0", after["/gc/heap/goal:bytes"], after["/cpu/classes/total:cpu-seconds"])
	}
}
