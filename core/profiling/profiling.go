// Package profiling owns the CPU-profile switch that grasp-bench uses to
// profile one benchmark scenario at a time inside a server process: an HTTP
// handler whose /start and /stop write one CPU profile per scenario, next to
// net/http/pprof's usual endpoints.
//
// It is linked into grasp only by the benchprofile build tag
// (cmd/grasp/profile_benchprofile.go) and into grasp-bench's baseline relay;
// it must never be reachable in a release build, and it listens on loopback
// only.
package profiling

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime/metrics"
	runpprof "runtime/pprof"
	"sync"
)

// Listen serves the switch on addr, which must be a loopback address
// ("127.0.0.1:0" picks a free port), and returns the address it listens on.
func Listen(addr string) (string, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("profiling listener %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return "", fmt.Errorf("profiling listener %q: only a loopback IP address is allowed", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("profiling listener: %w", err)
	}
	go func() { _ = http.Serve(ln, Handler()) }()
	return ln.Addr().String(), nil
}

// Handler is the switch: POST /start?file=PATH begins a CPU profile written
// to PATH, POST /stop ends it and answers once the file is complete; the
// /debug/pprof/ endpoints (heap, goroutine, ...) are served as usual.
// GET /runtime answers the runtime's collector figures (RuntimeMetrics) as
// a JSON object, so that a benchmark can take them before and after a
// phase and say how much of it the collector had.
func Handler() http.Handler {
	var s cpuSwitch
	mux := http.NewServeMux()
	mux.HandleFunc("POST /start", s.start)
	mux.HandleFunc("POST /stop", s.stop)
	mux.HandleFunc("GET /runtime", serveRuntime)
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	return mux
}

type cpuSwitch struct {
	mu sync.Mutex
	f  *os.File
}

func (s *cpuSwitch) start(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Query().Get("file")
	if path == "" {
		http.Error(w, "file is required", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		http.Error(w, "a profile is already running", http.StatusConflict)
		return
	}
	f, err := os.Create(path)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if err := runpprof.StartCPUProfile(f); err != nil {
		f.Close()
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	s.f = f
}

func (s *cpuSwitch) stop(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		http.Error(w, "no profile is running", http.StatusConflict)
		return
	}
	runpprof.StopCPUProfile()
	err := s.f.Close()
	s.f = nil
	if err != nil {
		http.Error(w, errors.Join(errors.New("write profile"), err).Error(), http.StatusInternalServerError)
	}
}

// RuntimeMetrics are the runtime/metrics samples GET /runtime answers:
// collections completed, the CPU the collector used (its background mark
// workers, the assists it asked of allocating goroutines, its pauses) and
// all the process's CPU, as the runtime estimates them, and the heap's live
// bytes, goal and limit. A benchmark takes them before and after a phase:
// a collector paced by the memory limit shows as many cycles and a large
// GC share of the CPU.
var RuntimeMetrics = []string{
	"/gc/cycles/total:gc-cycles",
	"/cpu/classes/gc/total:cpu-seconds",
	"/cpu/classes/gc/mark/assist:cpu-seconds",
	"/cpu/classes/total:cpu-seconds",
	"/cpu/classes/idle:cpu-seconds",
	"/gc/heap/live:bytes",
	"/gc/heap/goal:bytes",
	"/gc/gomemlimit:bytes",
}

func serveRuntime(w http.ResponseWriter, _ *http.Request) {
	samples := make([]metrics.Sample, len(RuntimeMetrics))
	for i, name := range RuntimeMetrics {
		samples[i].Name = name
	}
	metrics.Read(samples)
	out := make(map[string]float64, len(samples))
	for _, s := range samples {
		switch s.Value.Kind() {
		case metrics.KindUint64:
			out[s.Name] = float64(s.Value.Uint64())
		case metrics.KindFloat64:
			out[s.Name] = s.Value.Float64()
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}
