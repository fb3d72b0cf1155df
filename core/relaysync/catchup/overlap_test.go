package catchup

import (
	"errors"
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/env"
)

// The fetch overlaps the reconciliation: the ids a round finds are asked for
// while the session goes on, so the first REQ reaches the peer before our
// last NEG-MSG, and some events are delivered before the session ends. The REQs
// are full batches while the session runs, so a difference of need ids
// costs ceil(need/IDsPerReq) REQs, as many as fetching after the session
// did (issue 27 part 3).
func TestG02_1_FetchOverlapsTheReconciliation(t *testing.T) {
	const need, perReq = 100, 10
	evts, local := overlapping(t, need)
	peer := &scripted{events: evts}
	url := peer.serve(t)
	// 4,096-byte frames: our side of a set this size takes many rounds.
	o := realClock(t, Options{Negentropy: true, FrameLimit: 4096, LargeFrameLimit: -1, IDsPerReq: perReq})
	res, err := newClient(t, Config{}, env.Env{}).CatchUp(ctxFor(t), url, allKinds, local, local.memStore, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Method != MethodNegentropy || res.Needed != need || res.Delivered != need || res.Missing != 0 || res.Bad != 0 {
		t.Fatalf("result %+v, want negentropy delivering the %d needed", res, need)
	}
	requireHolds(t, local.memStore, testPool(t)[:300])

	verbs := peer.received()
	firstReq := slices.Index(verbs, "REQ")
	lastNegMsg, negMsgs, reqs := -1, 0, 0
	for i, v := range verbs {
		switch v {
		case "NEG-MSG":
			negMsgs++
			lastNegMsg = i
		case "REQ":
			reqs++
		}
	}
	t.Logf("%d NEG-MSGs, %d REQs, first REQ at %d, last NEG-MSG at %d; %d of %d delivered before the session ended", negMsgs, reqs, firstReq, lastNegMsg, res.Early, res.Delivered)
	if negMsgs < 3 {
		t.Fatalf("the session took %d NEG-MSGs: too few rounds to show an overlap", negMsgs)
	}
	if firstReq < 0 || firstReq > lastNegMsg {
		t.Fatalf("first REQ at %d, last NEG-MSG at %d: the fetch waited for the session to end (%v)", firstReq, lastNegMsg, verbs)
	}
	if res.Early == 0 {
		t.Fatal("no event was delivered before the session ended")
	}
	if want := (need + perReq - 1) / perReq; reqs != want {
		t.Fatalf("%d REQs for %d ids at %d per REQ, want %d", reqs, need, perReq, want)
	}
}

// overlapping is a peer's events and our side for a session of many rounds
// (at 4,096-byte frames) whose ids to fetch are found in its first rounds:
// withShared's stand-ins moved after the signed events, so the ranges
// holding what we lack come first in the set's order and are settled while
// the rounds over the stand-ins go on.
func overlapping(t *testing.T, need int) ([]*nostr.Event, manyOwn) {
	evts, local := withShared(t, testPool(t)[:300], 20_000, need)
	for _, e := range evts[300:] {
		e.CreatedAt += 3000
	}
	for i := range local.own {
		local.own[i].CreatedAt += 3000
	}
	return evts, local
}

// A peer that refuses the id requests with a reason that will recur
// (rate-limited:) while a session with large frames runs fails the
// catch-up as it is; it is not taken for a peer refusing large frames, so
// no second session with small frames is tried and the peer is not
// remembered as one. (Large frames here are 8,192 bytes against 4,096, so
// that the session runs rounds while the requests are refused.)
func TestG02_1_RefusedFetchDuringTheSessionIsNotALargeFrameRefusal(t *testing.T) {
	evts, local := overlapping(t, 100)
	peer := &scripted{events: evts, closeReqs: "rate-limited: slow down"}
	url := peer.serve(t)
	c := newClient(t, Config{}, env.Env{})
	o := realClock(t, Options{Negentropy: true, FrameLimit: 4096, LargeFrameLimit: 8192, IDsPerReq: 10})
	res, err := c.CatchUp(ctxFor(t), url, allKinds, local, local.memStore, o)
	if !errors.Is(err, errRefused) {
		t.Fatalf("err %v, want the peer's refusal", err)
	}
	if res.SmallFrameRestarts != 0 || c.refusesLarge(url) {
		t.Fatalf("%d restarts with small frames, peer remembered as refusing large frames: %v; want neither", res.SmallFrameRestarts, c.refusesLarge(url))
	}
	requireNoLeak(t)
}
