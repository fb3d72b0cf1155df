package catchup

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/internal/testwait"
	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/grasp-dev/grasp/core/env"
)

// Negentropy against plain khatru: more than 64 one-sided differences each
// way (nip77.NegentropySync deadlocks there), over 1,000 events, 600 of them
// in one second.
func TestG02_1_NegentropyConvergesWithKhatru(t *testing.T) {
	evts := testPool(t)
	url := upstream(t, evts, upstreamOpts{negentropy: true})
	ours := corpus(t, 100, 0) // events only we hold
	for _, e := range ours {
		e.CreatedAt -= 50 // interleave with the peer's
	}
	local := newMem(append(ours, evts[300:1000]...)...)
	reg := prometheus.NewRegistry()
	c := newClient(t, Config{}, env.Env{Metrics: reg})

	res, err := c.CatchUp(ctxFor(t), url, allKinds, local, local, realClock(t, Options{Negentropy: true}))
	if err != nil {
		t.Fatal(err)
	}
	want := len(evts) - 700
	if res.Method != MethodNegentropy || res.FallbackReason != "" {
		t.Fatalf("method %s (%q), want negentropy", res.Method, res.FallbackReason)
	}
	if res.Needed != want || res.Delivered != want || res.Gaps != want || res.PeerLacks != 100 || res.Bad != 0 || res.Missing != 0 {
		t.Fatalf("result %+v, want needed=delivered=gaps=%d, peerLacks=100", res, want)
	}
	if res.Local != 800 || res.Rounds < 1 || res.BytesSent == 0 || res.BytesReceived == 0 {
		t.Fatalf("result %+v: local, rounds or byte counts wrong", res)
	}
	requireHolds(t, local, evts)
	if got := counterValue(c.m.gaps); got != float64(want) {
		t.Fatalf("gap metric %v, want %d", got, want)
	}
	if got := counterValue(c.m.runs.WithLabelValues("negentropy", "ok")); got != 1 {
		t.Fatalf("runs{negentropy,ok} = %v", got)
	}

	// Up to date now: nothing needed, only our own 100 differ.
	again, err := c.CatchUp(ctxFor(t), url, allKinds, local, local, realClock(t, Options{Negentropy: true}))
	if err != nil {
		t.Fatal(err)
	}
	if again.Needed != 0 || again.Delivered != 0 || again.Gaps != 0 || again.PeerLacks != 100 || again.Rounds > 3 {
		t.Fatalf("second run %+v, want nothing needed in at most 3 rounds", again)
	}
	requireNoLeak(t)
}

// A peer without NIP-77 answers NEG-OPEN with a NOTICE; catch-up pages with
// REQ instead, through a 500-per-REQ cap (strfry's) and a 600-event second,
// and logs the fallback once per relay.
func TestG02_5_FallbackWhenPeerLacksNIP77(t *testing.T) {
	evts := testPool(t)
	url := upstream(t, evts, upstreamOpts{negentropy: false, reqCap: 500})
	var logs bytes.Buffer
	c := newClient(t, Config{}, env.Env{Log: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn})})
	local := newMem(evts[1000:1100]...)

	res, err := c.CatchUp(ctxFor(t), url, allKinds, local, local, realClock(t, Options{Negentropy: true}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Method != MethodReq || !strings.HasPrefix(res.FallbackReason, "notice:") {
		t.Fatalf("method %s reason %q, want req after a notice", res.Method, res.FallbackReason)
	}
	want := len(evts) - 100
	if res.Delivered != want || res.Gaps != want || res.Known != 100 || res.Bad != 0 || res.Truncated != 0 {
		t.Fatalf("result %+v, want %d delivered, 100 known", res, want)
	}
	requireHolds(t, local, evts)

	if _, err := c.CatchUp(ctxFor(t), url, allKinds, local, local, realClock(t, Options{Negentropy: true})); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), "falling back"); n != 1 {
		t.Fatalf("fallback logged %d times, want once:\n%s", n, logs.String())
	}
	if got := counterValue(c.m.fallbacks.WithLabelValues("notice")); got != 2 {
		t.Fatalf("fallback metric %v, want 2", got)
	}
	requireNoLeak(t)
}

// REQ paging alone (Negentropy off) must list everything from peers that cap
// results, including seconds holding more events than the cap. The corpus is
// the big one's shape at a fifth of the size: 130 of 240 events in one
// second, 65 of each kind.
func TestG02_5_ReqPagingThroughCaps(t *testing.T) {
	evts := corpus(t, 240, 130)
	for _, tc := range []struct {
		name      string
		cap, page int
		filter    nostr.Filter
		truncated bool
	}{
		{name: "uncapped", page: 100, filter: allKinds},
		{name: "cap 100", cap: 100, filter: allKinds},
		{name: "cap 100, small pages", cap: 100, page: 30, filter: allKinds},
		{name: "cap 50, second split by kind", cap: 50, filter: allKinds, truncated: true},
		{name: "cap 100, one kind", cap: 100, filter: nostr.Filter{Kinds: []int{kindPatch}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := upstream(t, evts, upstreamOpts{reqCap: tc.cap})
			local := newMem()
			c := newClient(t, Config{}, env.Env{})
			res, err := c.CatchUp(ctxFor(t), url, tc.filter, local, local, realClock(t, Options{PageLimit: tc.page}))
			if err != nil {
				t.Fatal(err)
			}
			var want []*nostr.Event
			for _, e := range evts {
				if tc.filter.Matches(e) {
					want = append(want, e)
				}
			}
			if tc.truncated {
				// 65 events of each kind share t0, more than the cap: the
				// kind halves cannot be split further, and that is reported.
				if res.Truncated != 2 || res.Delivered != len(want)-2*(65-50) {
					t.Fatalf("result %+v, want 2 truncated seconds and %d delivered", res, len(want)-30)
				}
				return
			}
			if res.Method != MethodReq || res.Delivered != len(want) || res.Truncated != 0 || res.Bad != 0 {
				t.Fatalf("result %+v, want %d delivered by req", res, len(want))
			}
			requireHolds(t, local, want)
			if local.len() != len(want) {
				t.Fatalf("local holds %d, want %d", local.len(), len(want))
			}
		})
	}
	requireNoLeak(t)
}

// Untrusted peers: an event whose signature is valid for its stated id but
// whose content was changed, and one with a broken signature, are dropped
// and counted, whichever method found them.
func TestR1_BadEventsFromPeerAreDropped(t *testing.T) {
	good := corpus(t, 200, 0)
	wrongID := *corpus(t, 1, 0)[0]
	wrongID.Content = "tampered"
	badSig := *corpus(t, 1, 0)[0]
	badSig.Sig = strings.Repeat("0", 128-len("ab")) + "ab"
	peer := append([]*nostr.Event{&wrongID, &badSig}, good...)

	for _, neg := range []bool{true, false} {
		url := upstream(t, peer, upstreamOpts{negentropy: true})
		local := newMem()
		reg := prometheus.NewRegistry()
		c := newClient(t, Config{}, env.Env{Metrics: reg})
		res, err := c.CatchUp(ctxFor(t), url, allKinds, local, local, realClock(t, Options{Negentropy: neg}))
		if err != nil {
			t.Fatal(err)
		}
		if res.Bad != 2 || res.Delivered != len(good) || local.has(wrongID.ID) || local.has(badSig.ID) {
			t.Fatalf("negentropy=%v: result %+v, want 2 bad dropped and %d delivered", neg, res, len(good))
		}
		if neg && res.Missing != 2 {
			t.Fatalf("missing %d, want the 2 bad ids", res.Missing)
		}
		if got := counterValue(c.m.events.WithLabelValues(sourceLabel, "bad")); got != 2 {
			t.Fatalf("bad metric %v, want 2", got)
		}
	}
}

// A peer that sends events nobody asked for cannot slip them in through an
// id fetch, and events outside the filter are dropped whichever the method.
func TestR1_UnrequestedEventsAreDropped(t *testing.T) {
	good := corpus(t, 50, 0)
	stranger := corpus(t, 3, 0) // valid and matching, but never listed
	offFilter := &nostr.Event{Kind: 1, CreatedAt: t0, Content: "not a patch"}
	if err := offFilter.Sign(testKey); err != nil {
		t.Fatal(err)
	}
	p := &scripted{events: good, extra: func(string, nostr.Filter) []*nostr.Event {
		return append(append([]*nostr.Event(nil), stranger...), offFilter)
	}}
	url := p.serve(t)

	local := newMem()
	res, err := newClient(t, Config{}, env.Env{}).CatchUp(ctxFor(t), url, allKinds, local, local, realClock(t, Options{Negentropy: true}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Method != MethodNegentropy || res.Delivered != len(good) || local.len() != len(good) || res.Bad != 4 {
		t.Fatalf("negentropy: result %+v, want only the %d listed events and 4 bad", res, len(good))
	}

	local = newMem()
	res, err = newClient(t, Config{}, env.Env{}).CatchUp(ctxFor(t), url, allKinds, local, local, realClock(t, Options{}))
	if err != nil {
		t.Fatal(err)
	}
	if local.has(offFilter.ID) || res.Bad == 0 || res.Delivered != len(good)+len(stranger) {
		t.Fatalf("req: result %+v, want the off-filter event dropped and %d delivered", res, len(good)+len(stranger))
	}
}

// NIP-77 says NEG-ERR, khatru says NEG-ERROR: both end negentropy at once
// and the catch-up completes by REQ.
func TestR2_NegErrBothLabelsFallBack(t *testing.T) {
	evts := corpus(t, 120, 0)
	khatruURL := upstream(t, evts, upstreamOpts{negentropy: true, rejectNeg: true})
	nipURL := (&scripted{events: evts, errLabel: "NEG-ERR", errReason: "blocked: too many records"}).serve(t)
	for name, url := range map[string]string{"NEG-ERROR from khatru": khatruURL, "NEG-ERR": nipURL} {
		t.Run(name, func(t *testing.T) {
			local := newMem()
			res, err := newClient(t, Config{}, env.Env{}).CatchUp(ctxFor(t), url, allKinds, local, local, realClock(t, Options{Negentropy: true}))
			if err != nil {
				t.Fatal(err)
			}
			if res.Method != MethodReq || !strings.HasPrefix(res.FallbackReason, "error: blocked:") || res.Delivered != len(evts) {
				t.Fatalf("result %+v, want a REQ fallback after the peer's error", res)
			}
		})
	}
}

// khatru's race: a NEG-MSG that overtakes the storing of the session gets
// NEG-ERROR "CLOSED". One retry with a fresh session recovers.
func TestR2_RetriesAfterPeerLosesSession(t *testing.T) {
	evts := corpus(t, 150, 0)
	p := &scripted{events: evts, loseFirst: true}
	url := p.serve(t)
	local := newMem(evts[:70]...)
	res, err := newClient(t, Config{}, env.Env{}).CatchUp(ctxFor(t), url, allKinds, local, local, realClock(t, Options{Negentropy: true}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Method != MethodNegentropy || res.Retries != 1 || res.Delivered != 80 {
		t.Fatalf("result %+v, want negentropy after one retry, 80 delivered", res)
	}

	// With retries off the lost session sends us to REQ paging.
	p2 := &scripted{events: evts, loseFirst: true}
	local2 := newMem(evts[:70]...)
	res, err = newClient(t, Config{}, env.Env{}).CatchUp(ctxFor(t), p2.serve(t), allKinds, local2, local2, realClock(t, Options{Negentropy: true, Retries: -1}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Method != MethodReq || res.Delivered != 80 {
		t.Fatalf("result %+v, want REQ fallback delivering 80", res)
	}
}

// A peer that never answers NEG-OPEN: after one round timeout (fake clock)
// catch-up gives up on negentropy and pages with REQ.
func TestG02_5_SilentNegentropyTimesOut(t *testing.T) {
	evts := corpus(t, 80, 0)
	p := &scripted{events: evts, silentNeg: true, gotOpen: make(chan struct{}, 1)}
	url := p.serve(t)
	fake := clock.NewFake(time.Unix(1_760_000_000, 0))
	c := newClient(t, Config{}, env.Env{Clock: fake})
	local := newMem()
	type out struct {
		res Result
		err error
	}
	done := make(chan out, 1)
	ctx := ctxFor(t)
	go func() {
		r, err := c.CatchUp(ctx, url, allKinds, local, local, Options{Negentropy: true, RoundTimeout: time.Minute})
		done <- out{r, err}
	}()
	select {
	case <-p.gotOpen:
	case <-testwait.After(t):
		t.Fatal("peer never saw NEG-OPEN")
	}
	// The dial's timer is stopped before NEG-OPEN goes out, so the one armed
	// now is the wait for the answer.
	if !fake.BlockUntil(1, testwait.Limit(t)) {
		t.Fatal("catch-up never waited for the answer")
	}
	fake.Advance(time.Minute)
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.res.Method != MethodReq || !strings.HasPrefix(o.res.FallbackReason, "timeout") || o.res.Delivered != len(evts) {
		t.Fatalf("result %+v, want REQ after a timeout", o.res)
	}
	requireNoLeak(t)
}

// A relay that vanishes mid-sync: a clean error, no hang, nothing leaked.
func TestCatchUpRelayDropsMidSync(t *testing.T) {
	evts := testPool(t)
	url := upstream(t, evts, upstreamOpts{negentropy: true})
	for _, tc := range []struct {
		name  string
		after int64
		neg   bool
	}{
		{"during negentropy fetch", 150_000, true},
		{"during REQ paging", 100_000, false},
		{"on NEG-OPEN", 200, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proxy := cutProxy(t, url, tc.after)
			local := newMem()
			reg := prometheus.NewRegistry()
			c := newClient(t, Config{}, env.Env{Metrics: reg})
			res, err := c.CatchUp(ctxFor(t), proxy, allKinds, local, local, realClock(t, Options{Negentropy: tc.neg}))
			if err == nil {
				t.Fatalf("no error after the relay dropped; result %+v", res)
			}
			if !errors.Is(err, errConn) {
				t.Fatalf("error %v, want a connection error", err)
			}
			if res.Delivered != local.len() || res.Delivered >= len(evts) {
				t.Fatalf("result %+v with %d held: partial progress misreported", res, local.len())
			}
			if got := counterValue(c.m.runs.WithLabelValues(string(res.Method), "error")); got != 1 {
				t.Fatalf("runs{%s,error} = %v", res.Method, got)
			}
			requireNoLeak(t)
		})
	}
}

// Cancelling ctx ends a catch-up stuck waiting on a silent peer at once.
func TestCatchUpHonoursContext(t *testing.T) {
	p := &scripted{events: corpus(t, 10, 0), silentNeg: true, gotOpen: make(chan struct{}, 1)}
	url := p.serve(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		local := newMem()
		_, err := newClient(t, Config{}, env.Env{}).CatchUp(ctx, url, allKinds, local, local, Options{Negentropy: true, RoundTimeout: time.Hour})
		done <- err
	}()
	<-p.gotOpen
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error %v, want context.Canceled", err)
		}
	case <-testwait.After(t):
		t.Fatal("catch-up did not return after ctx was cancelled")
	}
	requireNoLeak(t)
}

// Already in sync, negentropy costs under 1% of the bytes of downloading
// everything with REQ (the bench measures the same at 50,000 events).
func TestG02_1_InSyncNegentropyCostsUnderOnePercentOfReq(t *testing.T) {
	evts := testPool(t)
	url := upstream(t, evts, upstreamOpts{negentropy: true})
	c := newClient(t, Config{}, env.Env{})
	full := newMem(evts...)
	// Paging with everything held still downloads every event (the cost
	// negentropy saves) but verifies none, which keeps this test cheap.
	req, err := c.CatchUp(ctxFor(t), url, allKinds, full, full, realClock(t, Options{}))
	if err != nil {
		t.Fatal(err)
	}
	neg, err := c.CatchUp(ctxFor(t), url, allKinds, full, full, realClock(t, Options{Negentropy: true}))
	if err != nil {
		t.Fatal(err)
	}
	if req.Known != len(evts) || neg.Method != MethodNegentropy {
		t.Fatalf("req %+v neg %+v: want a full listing and a negentropy run", req, neg)
	}
	reqBytes := req.BytesSent + req.BytesReceived
	negBytes := neg.BytesSent + neg.BytesReceived
	if neg.Needed != 0 || negBytes*100 >= reqBytes {
		t.Fatalf("in-sync negentropy moved %d bytes, full REQ %d: want under 1%%", negBytes, reqBytes)
	}
}

// Local entries the negentropy vector would reject are dropped, not fatal.
func TestCatchUpIgnoresMalformedLocalIDs(t *testing.T) {
	evts := corpus(t, 40, 0)
	url := upstream(t, evts, upstreamOpts{negentropy: true})
	local := newMem()
	bogus := localFunc(func(context.Context, nostr.Filter) ([]Item, error) {
		return []Item{{ID: "xyz", CreatedAt: 1}, {ID: strings.ToUpper(evts[0].ID), CreatedAt: evts[0].CreatedAt}}, nil
	})
	res, err := newClient(t, Config{}, env.Env{}).CatchUp(ctxFor(t), url, allKinds, bogus, local, realClock(t, Options{Negentropy: true}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Local != 0 || res.Delivered != len(evts) {
		t.Fatalf("result %+v, want malformed ids ignored and all delivered", res)
	}
}

type localFunc func(context.Context, nostr.Filter) ([]Item, error)

func (f localFunc) Items(ctx context.Context, flt nostr.Filter) ([]Item, error) { return f(ctx, flt) }

// A failing Local stops the run before anything is sent.
func TestCatchUpLocalErrorIsWrapped(t *testing.T) {
	boom := errors.New("disk on fire")
	_, err := newClient(t, Config{}, env.Env{}).CatchUp(context.Background(), "ws://127.0.0.1:1", allKinds,
		localFunc(func(context.Context, nostr.Filter) ([]Item, error) { return nil, boom }), newMem(), Options{})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "list local events") {
		t.Fatalf("error %v, want the local error wrapped", err)
	}
}

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

// A hostile peer's negentropy reply that would panic go-nostr's engine
// (a bound whose id length does not fit) ends negentropy with a protocol
// error; the catch-up completes by REQ and the process lives on.
func TestR2_HostileNegentropyReplyFallsBackInsteadOfPanicking(t *testing.T) {
	evts := corpus(t, 30, 0)
	for _, payload := range []string{"6100ffffffffffffffff7f00", "6100210000", "61000003", "6100000205"} {
		url := (&scripted{events: evts, hostile: payload}).serve(t)
		local := newMem()
		res, err := newClient(t, Config{}, env.Env{}).CatchUp(ctxFor(t), url, allKinds, local, local, realClock(t, Options{Negentropy: true}))
		if err != nil {
			t.Fatalf("%s: %v", payload, err)
		}
		if res.Method != MethodReq || !strings.HasPrefix(res.FallbackReason, "protocol:") || res.Delivered != len(evts) {
			t.Fatalf("%s: result %+v, want a REQ fallback after a protocol error", payload, res)
		}
	}
}
