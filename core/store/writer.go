package store

import (
	"context"
	"sync"

	"github.com/fiatjaf/eventstore"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/outcome"
)

// errClosed is returned for writes submitted after Close began.
var errClosed = outcome.Errorf(outcome.Error, "store is closed")

type opKind uint8

const (
	opSave opKind = iota
	opReplace
	opDelete
	// opBarrier carries no write: the side tables commit their own
	// transaction and then wait on a barrier for the next group fsync.
	opBarrier
	// opSweep removes orphaned large-content records; it runs on the writer
	// so that no write is between an event's two records (large.go).
	opSweep
)

func (k opKind) String() string {
	switch k {
	case opSave:
		return "save"
	case opReplace:
		return "replace"
	case opDelete:
		return "delete"
	case opSweep:
		return "sweep"
	default:
		return "barrier"
	}
}

type op struct {
	kind opKind
	ctx  context.Context
	evt  *nostr.Event
	// content is the content record of evt (large.go) under contentPrefix,
	// written before evt, whose content is then a stub.
	content       []byte
	contentPrefix byte
	// swept reports what an opSweep removed.
	swept int
	// vlog marks a write that may have gone to badger's value log.
	vlog bool
	done chan error // buffered: the writer never blocks on a caller that gave up
}

// writer is the single goroutine that applies event writes in arrival order
// and makes each batch durable with one sync. Serialising the writes also
// closes two races of the badger backend: its duplicate check and its
// replaceable-event check run in separate transactions that do not conflict
// with each other, so concurrent identical or competing events could both be
// stored.
type writer struct {
	s     *Store
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
}

func newWriter(s *Store, max int) *writer {
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

func (w *writer) run() {
	batch := make([]*op, 0, w.max)
	errs := make([]error, 0, w.max)
	for {
		var first *op
		select {
		case first = <-w.queue:
		case <-w.stopCh:
			w.drainAndExit(batch, errs)
			return
		}
		batch = append(batch[:0], first)
	fill:
		for len(batch) < w.max {
			select {
			case o := <-w.queue:
				batch = append(batch, o)
			default:
				break fill
			}
		}
		w.commit(batch, errs[:0])
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
		w.commit(batch, errs[:0])
	}
	w.lastErr = w.sync(true)
}

// commit applies every op of the batch, syncs once, then answers each caller.
func (w *writer) commit(batch []*op, errs []error) {
	vlog := false
	for _, o := range batch {
		errs = append(errs, w.apply(o))
		vlog = vlog || o.vlog
	}
	syncErr := w.sync(vlog)
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

// apply runs one write against the backend. A panic in the backend must not
// kill the only writer, or every later save would hang.
func (w *writer) apply(o *op) (err error) {
	defer func() {
		if r := recover(); r != nil {
			w.s.log.Error("event store panicked", "op", o.kind.String(), "panic", r)
			err = outcome.Errorf(outcome.Error, "event store failed on %s: %v", o.kind, r)
		}
	}()
	b := w.s.backend
	if o.content != nil {
		if o.kind == opSave {
			// A duplicate (clients resend) must not leave a content record
			// the stored copy does not use.
			dup, err := w.s.stored(o.evt.ID)
			if err != nil {
				return outcome.Errorf(outcome.Error, "look for a duplicate of %s: %w", o.evt.ID, err)
			}
			if dup {
				return eventstore.ErrDupEvent
			}
		}
		if err := w.s.putContent(o.contentPrefix, o.evt.ID, o.content); err != nil {
			return err
		}
	}
	switch o.kind {
	case opSave:
		if err := b.SaveEvent(o.ctx, o.evt); err != nil {
			return err
		}
		w.s.indexed(true, o.evt)
		return nil
	case opReplace:
		return w.replace(o)
	case opDelete:
		stored := w.lookupForIndex(o.evt.ID)
		if err := b.DeleteEvent(o.ctx, o.evt); err != nil {
			return err
		}
		if stored != nil {
			w.s.indexed(false, stored)
		}
		return w.s.dropLarge(o.evt.ID)
	case opSweep:
		o.swept, err = w.s.sweepLarge()
		return err
	default:
		return nil
	}
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

// replace runs the backend's ReplaceEvent, which deletes older versions
// inside its own transaction without saying which: the versions before and
// after tell the negentropy index what changed.
func (w *writer) replace(o *op) error {
	if w.s.neg == nil {
		return w.s.backend.ReplaceEvent(o.ctx, o.evt)
	}
	before, err := w.s.versions(o.evt)
	if err != nil {
		w.indexFailed(err)
	}
	if err := w.s.backend.ReplaceEvent(o.ctx, o.evt); err != nil {
		return err
	}
	after, aerr := w.s.versions(o.evt)
	if err != nil || aerr != nil {
		w.indexFailed(aerr)
		return nil
	}
	kept := make(map[string]bool, len(after))
	for _, evt := range after {
		kept[evt.ID] = true
	}
	for _, evt := range before {
		if !kept[evt.ID] {
			w.s.indexed(false, evt)
			if err := w.s.dropLarge(evt.ID); err != nil {
				w.s.log.Error("dropping the content of a replaced version failed; maintenance sweeps it", "id", evt.ID, "error", err)
			}
		}
	}
	if o.content != nil && !kept[o.evt.ID] {
		// Refused as older than the stored version.
		if err := w.s.dropLarge(o.evt.ID); err != nil {
			w.s.log.Error("dropping the content of a refused version failed; maintenance sweeps it", "id", o.evt.ID, "error", err)
		}
	}
	for _, evt := range after {
		w.s.indexed(true, evt)
	}
	return nil
}

// lookupForIndex finds the stored version of an event about to be deleted
// (a caller may pass only its id).
func (w *writer) lookupForIndex(id string) *nostr.Event {
	if w.s.neg == nil {
		return nil
	}
	evt, err := w.s.storedByID(id)
	if err != nil {
		w.indexFailed(err)
	}
	return evt
}

func (w *writer) indexFailed(err error) {
	if err == nil {
		return
	}
	w.s.log.Error("negentropy index cannot follow a write; NIP-77 sessions query the store until restart", "error", err)
	w.s.neg.fail()
}
