package catchup

import (
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/sigcheck"
)

// fetcher asks the peer for the ids reconciliation finds, in REQs of
// IDsPerReq ids, at most InFlight outstanding, over the session's
// connection, and delivers each verified event. It starts while the
// negentropy session is still running: each round's ids are requested as
// soon as a full batch has gathered, so the peer looks events up and we check
// their signatures while the next round is computed (issue 27 part 3); once
// the session has ended, what is left is asked for in batches as they fit.
// Ids the peer does not send are counted as Missing.
//
// Only the goroutine that called CatchUp uses a fetcher.
type fetcher struct {
	filter nostr.Filter
	sink   Sink
	opts   Options
	res    *Result
	// flush: the session has ended, so a partial batch is asked for too
	flush   bool
	pending []string
	// queued is every id ever queued: a restarted session finds the same
	// ids again, and they are asked for once.
	queued map[string]struct{}
	open   map[string]*idBatch
	got    map[string]struct{}
}

type idBatch struct{ want map[string]struct{} }

func newFetcher(filter nostr.Filter, sink Sink, opts Options, res *Result) *fetcher {
	return &fetcher{filter: filter, sink: sink, opts: opts, res: res,
		queued: map[string]struct{}{}, open: map[string]*idBatch{}, got: map[string]struct{}{}}
}

// add queues the ids not queued before, MaxEvents in all at most.
func (f *fetcher) add(ids []string) {
	for _, id := range ids {
		if len(f.queued) >= f.opts.MaxEvents {
			return
		}
		if _, ok := f.queued[id]; ok {
			continue
		}
		f.queued[id] = struct{}{}
		f.pending = append(f.pending, id)
	}
}

// launch sends REQs for pending ids while fewer than InFlight are open:
// full batches only until flush is set.
func (f *fetcher) launch(s *session) error {
	for len(f.pending) > 0 && len(f.open) < f.opts.InFlight && (f.flush || len(f.pending) >= f.opts.IDsPerReq) {
		n := min(f.opts.IDsPerReq, len(f.pending))
		chunk := f.pending[:n:n]
		f.pending = f.pending[n:]
		b := &idBatch{want: make(map[string]struct{}, len(chunk))}
		for _, id := range chunk {
			b.want[id] = struct{}{}
		}
		sub := s.subID("ids-")
		f.open[sub] = b
		f.res.Rounds++
		if err := s.sendReq(sub, nostr.Filter{IDs: chunk, Limit: len(chunk)}); err != nil {
			return fmt.Errorf("request events: %w", err)
		}
	}
	if len(f.pending) == 0 {
		f.pending = nil // let the consumed backing array go
	}
	return nil
}

// wanted reports whether an EVENT on sub with id is one an open request
// waits for: only those are verified.
func (f *fetcher) wanted(sub, id string) bool {
	b := f.open[sub]
	if b == nil {
		return false
	}
	_, ok := b.want[id]
	return ok
}

// handle takes one frame that may answer an id request (EVENT, EOSE,
// CLOSED of one of ours); any other frame is left alone.
func (f *fetcher) handle(s *session, fr *frame) error {
	switch fr.label {
	case "EVENT":
		b := f.open[fr.sub]
		if fr.evt == nil || b == nil {
			return nil // unparseable, or not one of our open requests
		}
		if _, asked := b.want[fr.evt.ID]; !asked {
			if _, dup := f.got[fr.evt.ID]; !dup {
				s.bad(fr.evt, "not requested", f.res)
			}
			return nil
		}
		if !s.accept(fr, f.filter, f.res) {
			return nil // stays wanted: a valid copy may still come
		}
		delete(b.want, fr.evt.ID)
		f.got[fr.evt.ID] = struct{}{}
		s.deliver(f.sink, fr.evt, f.res)
	case "EOSE":
		var env nostr.EOSEEnvelope
		if env.FromJSON(string(fr.raw)) != nil {
			return nil
		}
		sub := string(env)
		b := f.open[sub]
		if b == nil {
			return nil
		}
		f.res.Missing += len(b.want)
		delete(f.open, sub)
		if err := s.sendClose(sub); err != nil {
			return fmt.Errorf("close subscription: %w", err)
		}
		return f.launch(s)
	case "CLOSED":
		var env nostr.ClosedEnvelope
		if env.FromJSON(string(fr.raw)) != nil {
			return nil
		}
		b := f.open[env.SubscriptionID]
		if b == nil {
			return nil
		}
		f.res.Missing += len(b.want)
		delete(f.open, env.SubscriptionID)
		if fatalClosed(env.Reason) {
			return fmt.Errorf("fetch events: %w: %s", errRefused, env.Reason)
		}
		s.c.log.Debug("peer closed an id request", "relay", s.url, "reason", env.Reason)
		return f.launch(s)
	}
	return nil
}

// finish asks for everything still pending and waits for every open
// request to end.
func (f *fetcher) finish(s *session) error {
	f.flush = true
	if err := f.launch(s); err != nil {
		return err
	}
	for len(f.open) > 0 {
		batch, err := s.nextFrames(f.wanted)
		if errors.Is(err, errTimeout) {
			return fmt.Errorf("fetch events: %w (%s)", err, s.opts.RoundTimeout)
		}
		if err != nil {
			return fmt.Errorf("fetch events: %w", err)
		}
		for i := range batch {
			fr := &batch[i]
			if fr.label == "NOTICE" {
				var env nostr.NoticeEnvelope
				_ = env.FromJSON(string(fr.raw))
				s.c.log.Debug("notice while fetching", "relay", s.url, "notice", string(env))
				continue
			}
			if err := f.handle(s, fr); err != nil {
				return err
			}
		}
	}
	return nil
}

// lost puts the ids of the open requests back in front of the pending ones:
// the connection they were asked on is gone, the next one asks again.
func (f *fetcher) lost() {
	var again []string
	for _, sub := range slices.Sorted(maps.Keys(f.open)) {
		for id := range f.open[sub].want {
			again = append(again, id)
		}
	}
	clear(f.open)
	f.pending = append(again, f.pending...)
}

// abandon closes the open requests: the catch-up pages with REQ instead,
// and the ids already fetched are known to it.
func (f *fetcher) abandon(s *session) {
	for sub := range f.open {
		_ = s.sendClose(sub) // best effort: paging ignores their frames anyway
	}
	clear(f.open)
	f.pending = nil
}

// errRefused marks a CLOSED that will recur on every further REQ (rate
// limit, auth, policy): not something a new connection mends.
var errRefused = errors.New("peer closed the request")

// fatalClosed reports CLOSED reasons that will recur on every further REQ.
func fatalClosed(reason string) bool {
	for _, p := range []string{"rate-limited:", "auth-required:", "restricted:"} {
		if strings.HasPrefix(reason, p) {
			return true
		}
	}
	return false
}

// accept counts fr's event as fetched if it passed verification and matches
// the filter it was asked for; otherwise it is counted bad and dropped.
func (s *session) accept(fr *frame, filter nostr.Filter, res *Result) bool {
	if fr.why != "" {
		s.bad(fr.evt, fr.why, res)
		return false
	}
	if !filter.Matches(fr.evt) {
		s.bad(fr.evt, "does not match the filter", res)
		return false
	}
	res.Fetched++
	return true
}

func (s *session) bad(evt *nostr.Event, why string, res *Result) {
	res.Bad++
	s.c.m.events.WithLabelValues(sourceLabel, "bad").Inc()
	s.c.log.Debug("dropped event from peer", "relay", s.url, "id", evt.ID, "why", why)
}

// deliver hands a verified event the local store did not have to the sink.
// Live sync should have brought it, so each one accepted is a sync gap.
func (s *session) deliver(sink Sink, evt *nostr.Event, res *Result) {
	if !sink.Deliver(s.ctx, evt) {
		res.Rejected++
		s.c.m.events.WithLabelValues(sourceLabel, "rejected").Inc()
		return
	}
	res.Delivered++
	s.c.m.events.WithLabelValues(sourceLabel, "delivered").Inc()
	res.Gaps++
	s.c.m.gaps.Inc()
}

// verifyAll checks id and signature of the events at idx in batch, spread
// over the available cores.
func verifyAll(batch []frame, idx []int) {
	workers := min(runtime.GOMAXPROCS(0), len(idx))
	if workers <= 1 {
		checkEvents(batch, idx)
		return
	}
	// contiguous shares, so that each worker's signatures are verified as
	// batches (sigcheck.Events)
	var wg sync.WaitGroup
	per := (len(idx) + workers - 1) / workers
	for lo := 0; lo < len(idx); lo += per {
		wg.Add(1)
		go func(share []int) {
			defer wg.Done()
			checkEvents(batch, share)
		}(idx[lo:min(lo+per, len(idx))])
	}
	wg.Wait()
}

// checkEvents is the trust boundary: each event's id is recomputed (go-nostr
// never does) and its signature checked, by the write path's own check
// (core/sigcheck: one serialisation and hash for both, recent authors' keys
// kept decompressed; the checks were ~2.7 s of a million-event 1 % fetch's
// ~4.2 s of client CPU, issue 27 part 3), the signatures of idx verified as
// batches (sigcheck.Events: a signature's share of a batch of 16 is ~0.65 of
// a single check).
func checkEvents(batch []frame, idx []int) {
	evts := make([]*nostr.Event, len(idx))
	for k, i := range idx {
		evts[k] = batch[i].evt
	}
	res := make([]sigcheck.Result, len(idx))
	sigcheck.Events(evts, res)
	for k, i := range idx {
		batch[i].why = why(res[k])
	}
}

// why is the reason an event with check result r is refused, "" if it is
// not.
func why(r sigcheck.Result) string {
	switch r {
	case sigcheck.BadID:
		return "id does not match content"
	case sigcheck.BadSignature:
		return "bad signature"
	}
	return ""
}
