package gate

import "sync/atomic"

// maxIdleWorkers bounds the goroutines kept waiting for work between
// messages, relay-wide. It bounds memory only (an idle worker holds its
// stack, which the collector halves at each cycle while it waits); how
// many messages run at once is bounded, as before, by each connection's
// slots (max_unanswered) and max_inflight_event_bytes.
const maxIdleWorkers = 64

// workers runs the work of a client message (an EVENT's acceptance, a
// REQ's stored events, a COUNT) on a goroutine kept after its work. A
// goroutine made per message starts with a 2 KB stack and regrew it,
// copying it at each doubling, up to the depth of the acceptance path
// (signature check, policy, visibility, the store): ~25 µs of every
// event (issue 27 part 5, BenchmarkEventWorkers). A worker's stack stays
// grown from one message to the next.
//
// It adds no bound and no order: run starts a goroutine whenever no
// worker is idle, exactly as the per-message goroutine did, so the
// callers' bounds (goWork's slots) stay the only ones.
type workers struct {
	tasks chan func()
	quit  chan struct{}
	idle  atomic.Int32
}

func newWorkers() *workers {
	return &workers{tasks: make(chan func()), quit: make(chan struct{})}
}

// run runs fn on an idle worker, or on a new one if none is waiting. fn
// must not panic (goWork recovers inside it).
func (w *workers) run(fn func()) {
	select {
	case w.tasks <- fn:
	default:
		go w.loop(fn)
	}
}

// loop runs fn, then waits for the next task while fewer than
// maxIdleWorkers wait, until close.
func (w *workers) loop(fn func()) {
	for {
		fn()
		if w.idle.Add(1) > maxIdleWorkers {
			w.idle.Add(-1)
			return
		}
		select {
		case fn = <-w.tasks:
			w.idle.Add(-1)
		case <-w.quit:
			w.idle.Add(-1)
			return
		}
	}
}

// close ends the idle workers; busy ones end after their task. run still
// works after close (on a goroutine that ends with its task).
func (w *workers) close() { close(w.quit) }
