package catchup

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/nbd-wtf/go-nostr"
)

// fetchIDs asks the peer for ids in batches of IDsPerReq, at most InFlight
// REQs outstanding, over the session's connection, and delivers each
// verified event. Ids the peer does not send are counted as Missing.
func (s *session) fetchIDs(filter nostr.Filter, ids []string, sink Sink, res *Result) error {
	type batch struct{ want map[string]struct{} }
	open := map[string]*batch{}
	got := make(map[string]struct{}, len(ids))
	next := 0
	launch := func() error {
		for next < len(ids) && len(open) < s.opts.InFlight {
			chunk := ids[next:min(next+s.opts.IDsPerReq, len(ids))]
			next += len(chunk)
			b := &batch{want: make(map[string]struct{}, len(chunk))}
			for _, id := range chunk {
				b.want[id] = struct{}{}
			}
			sub := s.subID("ids-")
			open[sub] = b
			if err := s.sendReq(sub, nostr.Filter{IDs: chunk, Limit: len(chunk)}); err != nil {
				return fmt.Errorf("request events: %w", err)
			}
			res.Rounds++
		}
		return nil
	}
	if err := launch(); err != nil {
		return err
	}
	for len(open) > 0 {
		batch, err := s.nextFrames(func(sub, id string) bool {
			b := open[sub]
			if b == nil {
				return false
			}
			_, ok := b.want[id]
			return ok
		})
		if errors.Is(err, errTimeout) {
			return fmt.Errorf("fetch events: %w (%s)", err, s.opts.RoundTimeout)
		}
		if err != nil {
			return fmt.Errorf("fetch events: %w", err)
		}
		for i := range batch {
			fr := &batch[i]
			switch fr.label {
			case "EVENT":
				b := open[fr.sub]
				if fr.evt == nil || b == nil {
					continue // unparseable, or a subscription we already closed
				}
				if _, asked := b.want[fr.evt.ID]; !asked {
					if _, dup := got[fr.evt.ID]; !dup {
						s.bad(fr.evt, "not requested", res)
					}
					continue
				}
				if !s.accept(fr, filter, res) {
					continue // stays wanted: a valid copy may still come
				}
				delete(b.want, fr.evt.ID)
				got[fr.evt.ID] = struct{}{}
				s.deliver(sink, fr.evt, res)
			case "EOSE":
				var env nostr.EOSEEnvelope
				if env.FromJSON(string(fr.raw)) != nil {
					continue
				}
				sub := string(env)
				b := open[sub]
				if b == nil {
					continue
				}
				res.Missing += len(b.want)
				delete(open, sub)
				if err := s.sendClose(sub); err != nil {
					return fmt.Errorf("close subscription: %w", err)
				}
				if err := launch(); err != nil {
					return err
				}
			case "CLOSED":
				var env nostr.ClosedEnvelope
				if env.FromJSON(string(fr.raw)) != nil {
					continue
				}
				b := open[env.SubscriptionID]
				if b == nil {
					continue
				}
				res.Missing += len(b.want)
				delete(open, env.SubscriptionID)
				if fatalClosed(env.Reason) {
					return fmt.Errorf("fetch events: peer closed the request: %s", env.Reason)
				}
				s.c.log.Debug("peer closed an id request", "relay", s.url, "reason", env.Reason)
				if err := launch(); err != nil {
					return err
				}
			case "NOTICE":
				var env nostr.NoticeEnvelope
				_ = env.FromJSON(string(fr.raw))
				s.c.log.Debug("notice while fetching", "relay", s.url, "notice", string(env))
			}
		}
	}
	return nil
}

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

func sortedIDs(set map[string]struct{}) []string {
	out := make([]string, 0, len(set))
	for id := range set {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// verifyAll checks id and signature of the events at idx in batch, spread
// over the available cores.
func verifyAll(batch []frame, idx []int) {
	workers := min(runtime.GOMAXPROCS(0), len(idx))
	if workers <= 1 {
		for _, i := range idx {
			batch[i].why = checkEvent(batch[i].evt)
		}
		return
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for k := w; k < len(idx); k += workers {
				batch[idx[k]].why = checkEvent(batch[idx[k]].evt)
			}
		}(w)
	}
	wg.Wait()
}

// checkEvent is the trust boundary: the id is recomputed (go-nostr never
// does) and the signature checked.
func checkEvent(evt *nostr.Event) string {
	if !evt.CheckID() {
		return "id does not match content"
	}
	if ok, err := evt.CheckSignature(); !ok || err != nil {
		return "bad signature"
	}
	return ""
}
