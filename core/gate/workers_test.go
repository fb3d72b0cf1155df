package gate

import (
	"sync"
	"testing"

	"github.com/grasp-dev/grasp/internal/testkit"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// TestWorkersAddNoBoundKeepFewIdleAndEndOnClose: run never waits for a
// worker (twice maxIdleWorkers tasks all run at once: the callers' slots
// stay the only bound), at most maxIdleWorkers wait afterwards, the next
// task is taken by one of them, and close ends the idle ones.
func TestWorkersAddNoBoundKeepFewIdleAndEndOnClose(t *testing.T) {
	w := newWorkers()
	const n = 2 * maxIdleWorkers
	var started sync.WaitGroup
	started.Add(n)
	release := make(chan struct{})
	for range n {
		w.run(func() { started.Done(); <-release })
	}
	started.Wait() // every task runs while none has finished
	close(release)
	testwait.For(t, "idle workers settle at the bound", func() bool { return w.idle.Load() == maxIdleWorkers })

	ran := make(chan struct{})
	hold := make(chan struct{})
	w.run(func() { close(ran); <-hold })
	<-ran
	if got := w.idle.Load(); got != maxIdleWorkers-1 {
		t.Fatalf("a task after the burst should take an idle worker: %d idle, want %d", got, maxIdleWorkers-1)
	}
	close(hold)
	testwait.For(t, "the worker is idle again", func() bool { return w.idle.Load() == maxIdleWorkers })

	w.close()
	testwait.For(t, "idle workers end on close", func() bool { return w.idle.Load() == 0 })
	done := make(chan struct{})
	w.run(func() { close(done) })
	select {
	case <-done:
	case <-testwait.After(t):
		t.Fatal("run after close did not run its task")
	}
}

// deepTask uses about as much stack as an EVENT's acceptance: frames of
// 1 KB, depth levels deep.
//
//go:noinline
func deepTask(depth int) byte {
	var buf [1024]byte
	buf[depth%len(buf)] = byte(depth)
	if depth == 0 {
		return buf[0]
	}
	return deepTask(depth-1) + buf[depth%len(buf)]
}

// BenchmarkEventWorkers: a client's EVENTs one after another (run, wait
// for the answer), each needing ~48 KB of stack, on a goroutine per
// message (before) and on the workers (after), in alternating rounds of
// the same run:
//
//	go test -run '^$' -bench EventWorkers -benchmem ./core/gate/
func BenchmarkEventWorkers(b *testing.B) {
	w := newWorkers()
	defer w.close()
	var sink byte
	var mu sync.Mutex
	task := func(done chan struct{}) func() {
		return func() {
			v := deepTask(48)
			mu.Lock()
			sink += v
			mu.Unlock()
			close(done)
		}
	}
	perMessage := func(fn func()) { go fn() }
	side := func(name string, start func(func())) testkit.Side {
		return testkit.Side{Name: name, Run: func(int) {
			done := make(chan struct{})
			start(task(done))
			<-done
		}}
	}
	testkit.AlternateRounds(b, "event", side("goroutine", perMessage), side("workers", w.run))
	_ = sink
}
