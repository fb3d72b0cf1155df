package profiling

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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
