package catchup

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy/storage/vector"

	"github.com/grasp-dev/grasp/core/negguard"
	"github.com/grasp-dev/grasp/core/negindex"
	"github.com/grasp-dev/grasp/core/nip34"
)

// negEnd is how one negentropy session ended when it did not succeed.
type negEnd struct {
	retry    bool   // the peer lost the session: start a new one
	fallback string // the peer cannot do it: page with REQ instead
	err      error  // give up the catch-up
}

// reconcile runs negentropy sessions until one completes, handing the ids
// the peer has that we lack to f as each round finds them (f fetches them
// meanwhile). A non-empty fallback says why REQ paging must be used instead;
// err is then set too if the connection itself failed.
func (s *session) reconcile(filter nostr.Filter, vec negentropy.Storage, f *fetcher, res *Result) (fallback string, err error) {
	for attempt := 0; ; attempt++ {
		// A sealed set can back a new engine: the old one is never used
		// again once its session has ended.
		needed, lacks, end := s.negSession(filter, vec, attempt, f, res)
		switch {
		case end.retry && attempt < s.opts.Retries:
			res.Retries++
			continue
		case end.retry:
			return "error: peer kept closing the session", nil
		case end.fallback != "":
			return end.fallback, end.err
		case end.err != nil:
			return "", end.err
		}
		res.Needed, res.PeerLacks = needed, lacks
		if needed > s.opts.MaxEvents {
			s.c.log.Warn("peer claims more events than one catch-up fetches", "relay", s.url, "claimed", needed, "max", s.opts.MaxEvents)
		}
		return "", nil
	}
}

// localSet is our side of a reconciliation: a negindex.Snapshot, whose
// fingerprints cost two running sums where go-nostr's vector re-adds every
// id of the range (a pass over the whole set per round when the sets differ
// everywhere: 12 s of CPU for 1 % missing at 1,000,000 events, issue 27
// part 3); the vector only if an item does not fit a Snapshot (a created_at
// past 2^32 or before 1970, which no store here keeps). Malformed ids are
// left out either way (the vector panics on them).
func localSet(items []Item) negentropy.Storage {
	b := negindex.NewSnapshotBuilder(len(items))
	for _, it := range items {
		if it.CreatedAt < 0 || it.CreatedAt > math.MaxUint32 {
			vec := vector.New()
			for _, it := range validItems(items) {
				vec.Insert(it.CreatedAt, it.ID)
			}
			vec.Seal()
			return vec
		}
		b.Add(it.CreatedAt, it.ID) // false: a malformed id, left out
	}
	return b.Snapshot()
}

// negSession is one NEG-OPEN … NEG-CLOSE exchange. The engine pushes ids into
// its Haves/HaveNots channels from inside Reconcile, which runs here; both
// are drained concurrently or Reconcile blocks once 64 ids pile up (the
// nip77.NegentropySync deadlock). After each round the HaveNots found so
// far go to f, which asks the peer for them while the next round is
// computed; frames answering f's requests are handled as they come, NEG-MSGs
// of a batch first. It returns how many distinct ids the peer has that we
// lack and how many we have that it lacks.
func (s *session) negSession(filter nostr.Filter, vec negentropy.Storage, attempt int, f *fetcher, res *Result) (int, int, negEnd) {
	sub := s.subID("neg-")
	neg, err := negindex.NewReconciler(vec, max(s.frame, s.opts.FrameLimit))
	if err != nil {
		return 0, 0, negEnd{err: fmt.Errorf("negentropy: %w", err)}
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	haveNots := newIDSet(s.opts.MaxEvents + 1)
	var haves int
	wg.Add(2)
	go func() {
		defer wg.Done()
		haveNots.drain(neg.HaveNots(), stop)
	}()
	go func() {
		defer wg.Done()
		haves = len(drainIDs(neg.Haves(), stop, 0))
	}()
	fail := func(end negEnd) (int, int, negEnd) {
		close(stop) // Reconcile is not running: it is only called below
		wg.Wait()
		return 0, 0, end
	}

	open, err := nip77.OpenEnvelope{SubscriptionID: sub, Filter: filter, Message: neg.Start()}.MarshalJSON()
	if err != nil {
		return fail(negEnd{err: fmt.Errorf("encode NEG-OPEN: %w", err)})
	}
	if err := s.send(open); err != nil {
		return fail(negEnd{fallback: "connection: " + err.Error(), err: err})
	}
	replied := false
	firstRound := res.Rounds + 1
	// round handles one NEG-MSG-like frame; done says the session is over,
	// with end set if it did not succeed.
	round := func(fr []byte) (done bool, end negEnd) {
		switch label(fr) {
		case "NEG-MSG":
			var env nip77.MessageEnvelope
			if env.FromJSON(string(fr)) != nil || env.SubscriptionID != sub {
				return false, negEnd{}
			}
			replied = true
			res.Rounds++
			// the peer is untrusted: a crafted message must not panic the
			// engine (and with it the process)
			checked, err := negguard.Check(env.Message)
			if err != nil {
				s.negClose(sub)
				return true, negEnd{fallback: "protocol: " + err.Error()}
			}
			out, err := reconcile(neg, checked)
			if err != nil {
				s.negClose(sub)
				return true, negEnd{fallback: "protocol: " + err.Error()}
			}
			if out == "" {
				s.negClose(sub)
				return true, negEnd{}
			}
			if attempt > 0 && res.Rounds == firstRound {
				// A retried session lost the race once: give the peer time to
				// store the session before our first NEG-MSG can overtake it.
				if err := s.pause(time.Duration(attempt) * s.opts.RetryDelay); err != nil {
					return true, negEnd{err: fmt.Errorf("negentropy: %w", err)}
				}
			}
			msg, _ := nip77.MessageEnvelope{SubscriptionID: sub, Message: out}.MarshalJSON()
			if len(out)/2 > s.opts.FrameLimit {
				s.sentLarge = true
			}
			if err := s.send(msg); err != nil {
				return true, negEnd{err: fmt.Errorf("negentropy: %w", err)}
			}
		case "NEG-ERR", "NEG-ERROR":
			// NIP-77 says NEG-ERR; khatru sends NEG-ERROR. Both mean the same.
			var env nip77.ErrorEnvelope
			if env.FromJSON(string(fr)) != nil || env.SubscriptionID != sub {
				return false, negEnd{}
			}
			if isClosedReason(env.Reason) {
				// khatru answers a NEG-MSG that overtook the storing of its
				// session, and any relay an idle-expired one, with "closed".
				s.c.log.Debug("negentropy session closed by peer", "relay", s.url, "reason", env.Reason)
				return true, negEnd{retry: true}
			}
			return true, negEnd{fallback: "error: " + env.Reason}
		case "NOTICE":
			var env nostr.NoticeEnvelope
			_ = env.FromJSON(string(fr))
			if !replied {
				// A relay without NIP-77 answers the unknown verb with a NOTICE.
				s.negClose(sub)
				return true, negEnd{fallback: "notice: " + string(env)}
			}
			s.c.log.Debug("notice during negentropy", "relay", s.url, "notice", string(env))
		}
		return false, negEnd{}
	}
	for {
		batch, err := s.takeFrames()
		if errors.Is(err, errTimeout) {
			s.negClose(sub)
			return fail(negEnd{fallback: fmt.Sprintf("timeout: no negentropy answer within %s", s.opts.RoundTimeout)})
		}
		if err != nil {
			if errors.Is(err, errConn) && !replied {
				return fail(negEnd{fallback: "connection: " + err.Error(), err: err})
			}
			return fail(negEnd{err: fmt.Errorf("negentropy: %w", err)})
		}
		// The session's frames first: our next message is on its way
		// before the batch's events are checked, and a NEG-MSG that arrives
		// while they are is answered between two chunks of them, its ids
		// asked for at once.
		var done bool
		var end negEnd
		for i := range batch {
			switch batch[i].label {
			case "NEG-MSG", "NEG-ERR", "NEG-ERROR", "NOTICE":
				if !done {
					done, end = round(batch[i].raw)
				}
			}
		}
		var failed error
		verifyWantedBetween(batch, f.wanted, func() {
			for !done && failed == nil {
				raw, ok := s.q.popNeg()
				if !ok {
					return
				}
				if done, end = round(raw); done {
					return
				}
				f.add(haveNots.take())
				failed = f.launch(s)
			}
		})
		if failed != nil {
			return fail(negEnd{err: failed})
		}
		for i := range batch {
			if err := f.handle(s, &batch[i]); err != nil {
				return fail(negEnd{err: err})
			}
		}
		if done {
			if end != (negEnd{}) {
				return fail(end)
			}
			// The engine closed both channels: the drainers finish.
			wg.Wait()
			f.add(haveNots.take())
			return haveNots.len(), haves, negEnd{}
		}
		f.add(haveNots.take())
		if err := f.launch(s); err != nil {
			return fail(negEnd{err: err})
		}
	}
}

func (s *session) negClose(sub string) {
	b, _ := nip77.CloseEnvelope{SubscriptionID: sub}.MarshalJSON()
	// Best effort: if the write fails the next read reports it.
	_ = s.send(b)
}

func isClosedReason(r string) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(r)), "closed")
}

// drainIDs collects distinct valid ids from ch until it is closed or stop
// is. Past max (0: unbounded) ids are read and dropped, so a peer claiming
// millions of ids can neither block the engine nor exhaust memory.
func drainIDs(ch <-chan string, stop <-chan struct{}, max int) map[string]struct{} {
	set := newIDSet(max)
	set.drain(ch, stop)
	return set.ids
}

// idSet is the distinct valid ids a drainer has read, max at most (0:
// unbounded); fresh are those not yet taken. The drainer adds while the
// session's goroutine takes.
type idSet struct {
	mu    sync.Mutex
	ids   map[string]struct{}
	fresh []string
	max   int
}

func newIDSet(max int) *idSet { return &idSet{ids: map[string]struct{}{}, max: max} }

func (c *idSet) drain(ch <-chan string, stop <-chan struct{}) {
	for {
		select {
		case id, ok := <-ch:
			if !ok {
				return
			}
			c.add(id)
		case <-stop:
			return
		}
	}
}

func (c *idSet) add(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.ids[id]; dup || (c.max > 0 && len(c.ids) >= c.max) || !nip34.IsHex64(id) {
		return
	}
	c.ids[id] = struct{}{}
	c.fresh = append(c.fresh, id)
}

// take returns the ids added since the last take.
func (c *idSet) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.fresh
	c.fresh = nil
	return out
}

func (c *idSet) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ids)
}

// reconcile runs one engine round, turning a panic the checks did not
// foresee into an error instead of a crashed process.
func reconcile(neg negindex.Reconciler, msg string) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("negentropy engine failed on the peer's message: %v", r)
		}
	}()
	return neg.Reconcile(msg)
}
