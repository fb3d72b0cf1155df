package store

import (
	"context"
	"sync"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/outcome"
)

// op is one entry of the writer's queue.
type op struct {
	kind opKind
	ctx  context.Context
	evt  *nostr.Event
	// content is the content record of evt (badger_large.go) under contentPrefix,
	// written before evt, whose content is then a stub.
	content       []byte
	contentPrefix byte
	// prep is evt's record and index keys (badger_write.go).
	prep *prepared
	// swept reports what an opSweep removed.
	swept int
	// vlog marks a barrier whose side-table write went to badger's value
	// log.
	vlog bool
	done chan error // buffered: the writer never blocks on a caller that gave up
}

// writer is the single goroutine that applies event writes in arrival order;
// its syncer goroutine makes each batch durable with one sync while the next
// batch is applied (run). Serialising the writes also
// closes two races of the badger backend: its duplicate check and its
// replaceable-event check run in separate transactions that do not conflict
// with each other, so concurrent identical or competing events could both be
// stored.
type writer struct {
	s     *badgerStore
	max   int
	queue chan *op

	mu      sync.RWMutex // held shared while sending, exclusively to stop
	stopped bool
	closing chan struct{} // closed first, so blocked senders give up
	stopCh  chan struct{} // closed once no sender remains: drain and exit
	exited  chan struct{}
	lastErr error // result of the final sync, read after exited

	// syncFn makes a batch durable; tests replace it to observe batching.
	syncFn func(vlog bool) error
	// serial makes run sync each batch before applying the next, as the
	// writer did before issue 27 part 5: BenchmarkGroupCommitOverlap's
	// baseline, set only there.
	serial bool
}

func newWriter(s *badgerStore, max int) *writer {
	w := &writer{
		s:       s,
		max:     max,
		queue:   make(chan *op, max),
		closing: make(chan struct{}),
		stopCh:  make(chan struct{}),
		exited:  make(chan struct{}),
	}
	w.syncFn = s.syncDurable
	return w
}

// submit queues o and waits until it is applied and synced.
func (w *writer) submit(ctx context.Context, o *op) error {
	o.done = make(chan error, 1)
	o.ctx = ctx
	w.mu.RLock()
	if w.stopped {
		w.mu.RUnlock()
		return errClosed
	}
	select {
	case w.queue <- o:
	case <-w.closing:
		w.mu.RUnlock()
		return errClosed
	case <-ctx.Done():
		w.mu.RUnlock()
		return outcome.Errorf(outcome.Error, "%s not queued: %w", o.kind, ctx.Err())
	}
	w.mu.RUnlock()

	select {
	case err := <-o.done:
		return err
	case <-ctx.Done():
		// The write may still commit; the caller only stops waiting.
		return outcome.Errorf(outcome.Error, "gave up waiting for the %s to commit: %w", o.kind, ctx.Err())
	}
}

// run applies batches and hands each to the syncer goroutine, which makes
// it durable and then answers its callers. The two overlap: batch N+1 is
// applied while batch N's sync runs (a sync is a device flush, long next to
// applying a batch, and applying is CPU the flush does not use). Syncs stay
// one at a time and in batch order, and each starts only after its batch
// was applied, so it covers that batch and every earlier one: no caller is
// answered before a sync that began after its write (issue 27 part 5).
func (w *writer) run() {
	var bufs [2]struct {
		batch []*op
		errs  []error
	}
	for i := range bufs {
		bufs[i].batch = make([]*op, 0, w.max)
		bufs[i].errs = make([]error, w.max)
	}
	jobs := make(chan syncJob)
	synced := make(chan struct{})
	go w.syncer(jobs, synced)
	syncing := false // a batch was handed to the syncer and is not answered yet
	waitSynced := func() {
		if syncing {
			<-synced
			syncing = false
		}
	}
	for cur := 0; ; cur ^= 1 {
		b := &bufs[cur]
		var first *op
		select {
		case first = <-w.queue:
		case <-w.stopCh:
			waitSynced()
			close(jobs)
			w.drainAndExit(b.batch, b.errs)
			return
		}
		batch := append(b.batch[:0], first)
	fill:
		for len(batch) < w.max {
			select {
			case o := <-w.queue:
				batch = append(batch, o)
			default:
				break fill
			}
		}
		if w.serial {
			w.commit(batch, b.errs)
			continue
		}
		errs := b.errs[:len(batch)]
		clear(errs)
		vlog := w.s.applyBatch(batch, errs)
		// The buffers of the batch before the previous one are reused
		// next: its answers must have gone out, and syncs go in order.
		waitSynced()
		jobs <- syncJob{batch: batch, errs: errs, vlog: vlog}
		syncing = true
	}
}

// syncJob is one applied batch waiting for its sync.
type syncJob struct {
	batch []*op
	errs  []error
	vlog  bool
}

// syncer makes each applied batch durable, then answers its callers, and
// tells run it is done with the batch.
func (w *writer) syncer(jobs <-chan syncJob, synced chan<- struct{}) {
	for j := range jobs {
		w.answer(j.batch, j.errs, w.sync(j.vlog))
		synced <- struct{}{}
	}
}

func (w *writer) drainAndExit(batch []*op, errs []error) {
	defer close(w.exited)
	for {
		batch = batch[:0]
	fill:
		for len(batch) < w.max {
			select {
			case o := <-w.queue:
				batch = append(batch, o)
			default:
				break fill
			}
		}
		if len(batch) == 0 {
			break
		}
		w.commit(batch, errs)
	}
	w.lastErr = w.sync(true)
}

// commit applies every op of the batch, syncs once, then answers each caller.
func (w *writer) commit(batch []*op, errs []error) {
	errs = errs[:len(batch)]
	clear(errs)
	vlog := w.s.applyBatch(batch, errs)
	w.answer(batch, errs, w.sync(vlog))
}

// answer tells each caller of a batch its result once the batch's sync
// returned syncErr.
func (w *writer) answer(batch []*op, errs []error, syncErr error) {
	w.s.m.batchOps.Observe(float64(len(batch)))
	for i, o := range batch {
		err := errs[i]
		if err == nil && syncErr != nil {
			err = outcome.Errorf(outcome.Error, "%s applied but not made durable: %w", o.kind, syncErr)
		}
		if o.kind != opBarrier && o.kind != opSweep {
			w.s.m.countWrite(o.kind, err)
		}
		o.done <- err
	}
}

func (w *writer) sync(vlog bool) error {
	if w.s.opts.UnsafeNoSync {
		return nil
	}
	start := w.s.env.Clock.Now()
	err := w.syncFn(vlog)
	w.s.m.syncSeconds.Observe(w.s.env.Clock.Since(start).Seconds())
	if err != nil {
		w.s.log.Error("group commit sync failed", "error", err)
	}
	return err
}

// stop refuses new writes, lets the writer drain what is queued and returns
// the final sync's error.
func (w *writer) stop() error {
	close(w.closing)
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	close(w.stopCh)
	<-w.exited
	return w.lastErr
}
