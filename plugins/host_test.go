package plugins

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/internal/testlog"
	"github.com/grasp-dev/grasp/internal/testwait"
)

func TestConcurrentAcceptIsRaceFree(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "p.js", `let seen = 0; module.exports = { accept(e, ctx) {
		seen++; grasp.ratelimit(e.pubkey, 1e9, 1e9); grasp.kv.set("last", e.content, 60);
		if (e.content.startsWith("bad")) return "bad " + e.content;
	} };`)
	reg := prometheus.NewRegistry()
	// A long queue wait: this test is about correctness under contention, not overload.
	h, err := New(Options{Dir: dir, PoolSize: 3, QueueTimeout: time.Minute, Clock: clock.NewFake(t0), Accept: []Spec{acceptSpec("p", "p.js")}, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	const workers, perWorker = 16, 100
	var wg sync.WaitGroup
	errs := make(chan string, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				content := fmt.Sprintf("good-%d-%d", w, i)
				if i%3 == 0 {
					content = fmt.Sprintf("bad-%d-%d", w, i)
				}
				v := h.Accept(context.Background(), testEvent(1, content), clientMeta())
				bad := strings.HasPrefix(content, "bad")
				if bad && v.Msg != "blocked: bad "+content || !bad && v.Action != policy.Accept {
					errs <- fmt.Sprintf("%s: %+v", content, v)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var calls uint64
	for _, mf := range mfs {
		if mf.GetName() == "grasp_plugin_call_seconds" {
			for _, m := range mf.GetMetric() {
				calls += m.GetHistogram().GetSampleCount()
			}
		}
	}
	if calls != workers*perWorker {
		t.Fatalf("call histogram counted %d calls, want %d", calls, workers*perWorker)
	}
}

func TestReloadSwapsAndFailureKeepsOldSet(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "p.js", `module.exports = { accept() { return "v1" } };`)
	var logs testlog.Buffer
	opts := Options{Dir: dir, PoolSize: 2, Clock: clock.NewFake(t0), Accept: []Spec{acceptSpec("p", "p.js")}, Logger: testLogger(&logs)}
	h, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	msg := func() string { return h.Accept(context.Background(), testEvent(1, ""), clientMeta()).Msg }
	if msg() != "blocked: v1" {
		t.Fatal(msg())
	}
	write(t, dir, "p.js", `module.exports = { accept() { return "v2" } };`)
	swaps := 0
	h.OnReload(func() { swaps++ })
	if err := h.Reload(opts); err != nil {
		t.Fatal(err)
	}
	if swaps != 1 {
		t.Fatalf("OnReload hooks ran %d times, want 1", swaps)
	}
	if msg() != "blocked: v2" {
		t.Fatalf("after reload: %s", msg())
	}
	bad := map[string]string{
		"syntax error":      `module.exports = { accept() { return "v3" `,
		"missing export":    `module.exports = { acept() { return "v3" } };`,
		"throws at load":    `throw new Error("no"); module.exports = {}`,
		"no module.exports": `module.exports = undefined;`,
	}
	for name, body := range bad {
		write(t, dir, "p.js", body)
		if err := h.Reload(opts); err == nil {
			t.Fatalf("%s: reload succeeded", name)
		}
		if msg() != "blocked: v2" {
			t.Fatalf("%s: running set replaced by a broken one: %s", name, msg())
		}
	}
	write(t, dir, "p.js", `module.exports = { accept() { return "v3" } };`)
	bogus := opts
	bogus.Accept = []Spec{{Name: "p", File: "p.js", OnError: "maybe"}}
	if err := h.Reload(bogus); err == nil || !strings.Contains(err.Error(), "on_error") {
		t.Fatalf("bad on_error: %v", err)
	}
	if msg() != "blocked: v2" {
		t.Fatal(msg())
	}
	if swaps != 1 {
		t.Fatalf("OnReload ran after a failed reload (%d)", swaps)
	}
	// The error goes back to the caller, who logs it once (cmd/grasp's
	// reload); the host logging it too doubled every failed reload.
	if strings.Contains(logs.String(), "[ERROR]") {
		t.Fatalf("failed reload logged by the host as well as returned: %s", logs.String())
	}
	// A pool size change is applied only at restart.
	bigger := opts
	bigger.PoolSize = 5
	if err := h.Reload(bigger); err != nil {
		t.Fatal(err)
	}
	if !h.RestartPending() || h.Current().poolSize() != 2 {
		t.Fatalf("pool size: restart=%v size=%d", h.RestartPending(), h.Current().poolSize())
	}
	if msg() != "blocked: v3" {
		t.Fatal(msg())
	}
}

func TestReloadUnderLoad(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "p.js", `module.exports = { accept() { return "v0" } };`)
	opts := Options{Dir: dir, PoolSize: 2, QueueTimeout: time.Minute, Clock: clock.NewFake(t0), Accept: []Spec{acceptSpec("p", "p.js")}}
	h, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000 && ctx.Err() == nil; i++ {
				if v := h.Accept(context.Background(), testEvent(1, ""), clientMeta()); !strings.HasPrefix(v.Msg, "blocked: v") {
					t.Errorf("verdict during reload: %+v", v)
					return
				}
			}
		}()
	}
	for i := 1; i <= 5; i++ {
		write(t, dir, "p.js", fmt.Sprintf(`module.exports = { accept() { return "v%d" } };`, i))
		if err := h.Reload(opts); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	wg.Wait()
}

func TestKVAndRateLimitSurviveReload(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "p.js", `module.exports = { accept(e) { const n = (grasp.kv.get("n") || 0) + 1; grasp.kv.set("n", n, 60); return "n=" + n } };`)
	opts := Options{Dir: dir, PoolSize: 1, Clock: clock.NewFake(t0), Accept: []Spec{acceptSpec("p", "p.js")}}
	h, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	h.Accept(context.Background(), testEvent(1, ""), clientMeta())
	if err := h.Reload(opts); err != nil {
		t.Fatal(err)
	}
	if v := h.Accept(context.Background(), testEvent(1, ""), clientMeta()); v.Msg != "blocked: n=2" {
		t.Fatalf("kv lost across reload: %s", v.Msg)
	}
}

func TestWatchCallsOnChange(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "p.js", `module.exports = { accept() {} };`)
	clk := clock.NewFake(t0)
	h, err := New(Options{Dir: dir, PoolSize: 1, Clock: clk, WatchInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	changes := make(chan struct{}, 10)
	done := make(chan struct{})
	go func() { h.Watch(ctx, []string{dir}, func() { changes <- struct{}{} }); close(done) }()
	if !clk.BlockUntil(1, testwait.Limit(t)) {
		t.Fatal("watcher did not arm its ticker")
	}
	write(t, dir, "p.js", `module.exports = { accept() { return "x" } };`)
	clk.Advance(time.Second)
	select {
	case <-changes:
	case <-testwait.After(t):
		t.Fatal("edit not detected")
	}
	cancel()
	<-done
}

func TestHashPathsDetectsChanges(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, "a.js", "1")
	cfg := write(t, t.TempDir(), "grasp.toml", "x = 1")
	paths := []string{dir, cfg}
	h0 := hashPaths(paths)
	if hashPaths(paths) != h0 {
		t.Fatal("hash not stable")
	}
	steps := []func(){
		func() { write(t, dir, "a.js", "2") },
		func() { write(t, dir, "sub/b.js", "") },
		func() { write(t, filepath.Dir(cfg), "grasp.toml", "x = 2") },
		func() { _ = os.Remove(p) },
	}
	prev := h0
	for i, step := range steps {
		step()
		h := hashPaths(paths)
		if h == prev {
			t.Fatalf("step %d not detected", i)
		}
		prev = h
	}
}
