package catchup

import (
	"context"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/sigcheck"
)

// checkingSink checks each event as the write path does (relay.Accept calls
// sigcheck.Event first) before it keeps it.
type checkingSink struct {
	*memStore
	refused int
}

func (c *checkingSink) Deliver(ctx context.Context, e *nostr.Event) bool {
	if sigcheck.Event(e) != sigcheck.Valid {
		c.refused++
		return false
	}
	return c.memStore.Deliver(ctx, e)
}

// TestG02_1_FetchedEventsAreVerifiedOnce: the catch-up verifies what the
// peer sends (in parallel, before the sink sees it) and the write path's
// check of the same events verifies no signature again; a peer's event with
// a broken signature is verified once and dropped, and a fetched event
// changed afterwards is still refused by the write path's check (issue 27
// part 3).
func TestG02_1_FetchedEventsAreVerifiedOnce(t *testing.T) {
	good := corpus(t, 120, 0)
	badSig := *corpus(t, 1, 0)[0]
	badSig.Sig = strings.Repeat("0", 126) + "ab"
	url := upstream(t, append([]*nostr.Event{&badSig}, good...), upstreamOpts{negentropy: true})
	sigcheck.Forget()
	before := sigcheck.Verifications()
	sink := &checkingSink{memStore: newMem()}
	res, err := newClient(t, Config{}, env.Env{}).CatchUp(ctxFor(t), url, allKinds, sink.memStore, sink, realClock(t, Options{Negentropy: true}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Delivered != len(good) || res.Bad != 1 || sink.refused != 0 {
		t.Fatalf("result %+v, %d refused by the write path's check; want %d delivered, 1 bad", res, sink.refused, len(good))
	}
	if n := sigcheck.Verifications() - before; n != int64(len(good))+1 {
		t.Fatalf("%d signature verifications for %d fetched events and 1 bad one, want %d (each once)", n, len(good), len(good)+1)
	}
	tampered := *good[0]
	tampered.Content += " (changed after the fetch)"
	if sink.Deliver(ctxFor(t), &tampered) || sink.refused != 1 {
		t.Fatal("the write path's check accepted a fetched event whose content was changed")
	}
	tampered = *good[1]
	tampered.Sig = good[2].Sig
	if sink.Deliver(ctxFor(t), &tampered) || sink.refused != 2 {
		t.Fatal("the write path's check accepted a fetched event with another event's signature")
	}
}
