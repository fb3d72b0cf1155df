package catchup

import (
	"errors"
	"fmt"
	"slices"

	"github.com/nbd-wtf/go-nostr"
)

// pager walks a filter's history newest first with REQ+EOSE. Relays cap the
// events one REQ returns (strfry at 500, badger at MaxLimit/4 when asked for
// more), and the cap is not advertised reliably, so nothing here depends on
// knowing it: a page ends the walk only when it is empty.
type pager struct {
	s      *session
	filter nostr.Filter
	known  map[string]struct{} // held locally before the run: not delivered
	seen   map[string]struct{} // verified or known during this run
	sink   Sink
	res    *Result
	// most is the largest number of events one REQ has returned: a query
	// returning fewer than that was not cut short by the peer's cap.
	most int
}

type page struct {
	n        int // events returned that match the filter (including known)
	old, new nostr.Timestamp
}

// paginate pages filter by until = oldest created_at seen. The next page is
// inclusive of that second, so events sharing it are not skipped. When a
// page is all one second, more events of that second may exist than the peer
// returns at once: that second is listed on its own (splitting the filter if
// needed) and paging continues below it. until strictly decreases, so the
// walk ends.
func (s *session) paginate(filter nostr.Filter, known map[string]struct{}, sink Sink, res *Result) error {
	p := &pager{s: s, filter: filter, known: known, seen: map[string]struct{}{}, sink: sink, res: res}
	until := filter.Until
	for {
		if until != nil && filter.Since != nil && *until < *filter.Since {
			return nil
		}
		f := filter
		f.Until, f.Limit, f.LimitZero = until, s.opts.PageLimit, false
		pg, err := p.query(f)
		if err != nil {
			return err
		}
		if pg.n == 0 {
			return nil
		}
		if len(p.seen) >= s.opts.MaxEvents {
			return fmt.Errorf("page events: stopped after %d events (MaxEvents)", len(p.seen))
		}
		if pg.old < pg.new {
			u := pg.old
			until = &u
			continue
		}
		if err := p.second(filter, pg.old); err != nil {
			return err
		}
		if pg.old == 0 {
			return nil
		}
		u := pg.old - 1
		until = &u
	}
}

// second lists every event of filter created in second ts.
func (p *pager) second(filter nostr.Filter, ts nostr.Timestamp) error {
	f := filter
	f.Since, f.Until = &ts, &ts
	return p.exhaust(f)
}

// exhaust queries f (confined to one second) with a generous limit. A result
// smaller than the most the peer has ever returned is complete; otherwise the
// peer may have cut it, and the filter is split in two along a list it holds
// (kinds, authors, tag values, ids) and each half is listed. A filter that
// cannot be split is counted as Truncated.
func (p *pager) exhaust(f nostr.Filter) error {
	f.Limit = p.s.opts.PageLimit * 10
	most := p.most
	pg, err := p.query(f)
	if err != nil {
		return err
	}
	if pg.n < most || pg.n == 0 {
		return nil
	}
	a, b, ok := split(f)
	if !ok {
		p.res.Truncated++
		p.s.c.log.Warn("cannot prove every event of one second was listed", "relay", p.s.url, "second", int64(*f.Since), "got", pg.n)
		return nil
	}
	if err := p.exhaust(a); err != nil {
		return err
	}
	return p.exhaust(b)
}

// split halves the first list of f that has more than one value.
func split(f nostr.Filter) (nostr.Filter, nostr.Filter, bool) {
	a, b := f, f
	switch {
	case len(f.Kinds) > 1:
		h := len(f.Kinds) / 2
		a.Kinds, b.Kinds = f.Kinds[:h:h], f.Kinds[h:]
	case len(f.Authors) > 1:
		h := len(f.Authors) / 2
		a.Authors, b.Authors = f.Authors[:h:h], f.Authors[h:]
	case len(f.IDs) > 1:
		h := len(f.IDs) / 2
		a.IDs, b.IDs = f.IDs[:h:h], f.IDs[h:]
	default:
		keys := make([]string, 0, len(f.Tags))
		for k, v := range f.Tags {
			if len(v) > 1 {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 {
			return f, f, false
		}
		slices.Sort(keys)
		k := keys[0]
		h := len(f.Tags[k]) / 2
		a.Tags, b.Tags = cloneTags(f.Tags), cloneTags(f.Tags)
		a.Tags[k], b.Tags[k] = f.Tags[k][:h:h], f.Tags[k][h:]
	}
	return a, b, true
}

func cloneTags(t nostr.TagMap) nostr.TagMap {
	out := make(nostr.TagMap, len(t))
	for k, v := range t {
		out[k] = v
	}
	return out
}

// query sends one REQ and handles its events until EOSE.
func (p *pager) query(f nostr.Filter) (page, error) {
	s := p.s
	sub := s.subID("page-")
	if err := s.sendReq(sub, f); err != nil {
		return page{}, fmt.Errorf("request page: %w", err)
	}
	p.res.Rounds++
	var pg page
	for {
		batch, err := s.nextFrames(func(sb, id string) bool {
			_, seen := p.seen[id]
			_, known := p.known[id]
			return sb == sub && !seen && !known
		})
		if errors.Is(err, errTimeout) {
			return pg, fmt.Errorf("page events: %w (%s)", err, s.opts.RoundTimeout)
		}
		if err != nil {
			return pg, fmt.Errorf("page events: %w", err)
		}
		for i := range batch {
			fr := &batch[i]
			switch fr.label {
			case "EVENT":
				if fr.evt != nil && fr.sub == sub {
					p.event(f, fr, &pg)
				}
			case "EOSE":
				var env nostr.EOSEEnvelope
				if env.FromJSON(string(fr.raw)) != nil || string(env) != sub {
					continue
				}
				if pg.n > p.most {
					p.most = pg.n
				}
				// Frames after our EOSE in this batch can only belong to
				// subscriptions already finished: dropping them is safe.
				if err := s.sendClose(sub); err != nil {
					return pg, fmt.Errorf("close page: %w", err)
				}
				return pg, nil
			case "CLOSED":
				var env nostr.ClosedEnvelope
				if env.FromJSON(string(fr.raw)) != nil || env.SubscriptionID != sub {
					continue
				}
				return pg, fmt.Errorf("page events: peer closed the request: %s", env.Reason)
			case "NOTICE":
				var env nostr.NoticeEnvelope
				_ = env.FromJSON(string(fr.raw))
				s.c.log.Debug("notice while paging", "relay", s.url, "notice", string(env))
			}
		}
	}
}

func (p *pager) event(f nostr.Filter, fr *frame, pg *page) {
	evt := fr.evt
	if !f.Matches(evt) {
		// Not what we asked for; its created_at must not steer the paging.
		p.s.bad(evt, "does not match the page filter", p.res)
		return
	}
	if pg.n == 0 || evt.CreatedAt < pg.old {
		pg.old = evt.CreatedAt
	}
	if pg.n == 0 || evt.CreatedAt > pg.new {
		pg.new = evt.CreatedAt
	}
	pg.n++
	if _, dup := p.seen[evt.ID]; dup {
		return
	}
	if _, ok := p.known[evt.ID]; ok {
		// Events we hold are not delivered again, so their claims need no trust.
		p.seen[evt.ID] = struct{}{}
		p.res.Known++
		p.s.c.m.events.WithLabelValues(sourceLabel, "known").Inc()
		return
	}
	if !p.s.accept(fr, p.filter, p.res) {
		return
	}
	p.seen[evt.ID] = struct{}{}
	p.s.deliver(p.sink, evt, p.res)
}
