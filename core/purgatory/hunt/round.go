package hunt

import (
	"context"
	"sync/atomic"

	"github.com/grasp-dev/grasp/core/nip34"
)

// round is the task of one hunt round for a repository: drop objects that
// are already here, then fetch from one URL after another, each with a
// throttle slot granted by the owner, until the owner says the round is
// over. I/O happens here, never in the owner goroutine.
func (h *Hunter) round(ctx context.Context, e *entry, repo nip34.RepoRef, oids []string) {
	defer h.done(1)
	present, err := h.sc.Has(ctx, repo, oids)
	if err != nil {
		h.log.Warn("checking objects before hunting failed", "repo", repo.URLPath(), "error", err)
	}
	if len(present) > 0 && ctx.Err() == nil {
		h.sc.Arrived(ctx, repo)
	}
	h.post(msgPresent{e: e, present: present})
	for {
		g, ok := h.acquire(ctx, e)
		if !ok {
			return
		}
		fetched, err := h.sc.Fetch(ctx, repo, g.url, g.oids)
		if len(fetched) > 0 && ctx.Err() == nil {
			h.sc.Arrived(ctx, repo)
		}
		h.post(msgResult{e: e, g: g, fetched: fetched, err: err})
	}
}

// waiter is a task parked in acquire. Its state settles the race between
// the owner answering and the task giving up on a cancelled context: exactly
// one of them wins, so a slot is never lost and busy never drifts.
type waiter struct {
	ch    chan grant
	state atomic.Int32 // waiting, answered, abandoned
}

const (
	waiting int32 = iota
	answered
	abandoned
)

// acquire asks the owner for the next fetch and parks until it answers.
func (h *Hunter) acquire(ctx context.Context, e *entry) (grant, bool) {
	w := &waiter{ch: make(chan grant, 1)}
	h.post(msgAcquire{e: e, w: w})
	h.done(1) // parked
	select {
	case g := <-w.ch:
		return g, g.ok
	case <-ctx.Done():
		if w.state.CompareAndSwap(waiting, abandoned) {
			h.busy.Add(1)
			return grant{}, false
		}
		// The owner answered first; its grant is on the way.
		if g := <-w.ch; g.ok {
			h.post(msgResult{e: e, g: g, err: ctx.Err()})
		}
		return grant{}, false
	}
}
