package catchup

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/env"
)

// withShared returns the peer's events and our local set for a session
// whose sets differ everywhere: both hold n events that are never fetched
// (unsigned stand-ins with random ids; no test fetches them), the peer
// also evts, and we evts[:len(evts)-need] plus own ids scattered among the
// shared ones (one in ten). Our id lists then run far above one
// 60,000-byte frame.
func withShared(tb testing.TB, evts []*nostr.Event, n, need int) (peer []*nostr.Event, local manyOwn) {
	randomID := func() string {
		var id [32]byte
		if _, err := rand.Read(id[:]); err != nil {
			tb.Fatal(err)
		}
		return hex.EncodeToString(id[:])
	}
	t0 := evts[0].CreatedAt
	peer = append(peer, evts...)
	local = manyOwn{memStore: newMem(evts[:len(evts)-need]...)}
	for i := range n {
		e := &nostr.Event{ID: randomID(), PubKey: evts[0].PubKey, CreatedAt: t0 - nostr.Timestamp(i%2000), Kind: kindPatch}
		peer = append(peer, e)
		local.own = append(local.own, Item{ID: e.ID, CreatedAt: e.CreatedAt})
		if i%10 == 0 {
			local.own = append(local.own, Item{ID: randomID(), CreatedAt: e.CreatedAt})
		}
	}
	return peer, local
}

// manyOwn is a local set of some of the peer's events plus ids we list
// without holding their events.
type manyOwn struct {
	*memStore
	own []Item
}

func (m manyOwn) Items(ctx context.Context, f nostr.Filter) ([]Item, error) {
	items, err := m.memStore.Items(ctx, f)
	return append(items, m.own...), err
}

// Against a peer that reads large messages (a grasp server reads 2 MiB),
// sessions use LargeFrameLimit and need fewer rounds than with FrameLimit
// alone; against one that closes the connection on a message above its
// limit (strfry reads 128 KiB), the catch-up starts over with FrameLimit,
// still succeeds, and the next catch-up with that peer uses FrameLimit at
// once (issue 27 part 3).
func TestG02_1_LargeFramesWhereThePeerReadsThem(t *testing.T) {
	const shared, need = 20_000, 100
	peer, local := withShared(t, testPool(t)[:300], shared, need)
	ownOnly := len(local.own) - shared
	rounds := func(url string, o Options, c *Client) Result {
		t.Helper()
		fresh := manyOwn{memStore: newMem(), own: local.own}
		for _, e := range local.memStore.events {
			fresh.memStore.events[e.ID] = e
		}
		res, err := c.CatchUp(ctxFor(t), url, allKinds, fresh, fresh.memStore, realClock(t, o))
		if err != nil {
			t.Fatal(err)
		}
		if res.Method != MethodNegentropy || res.Needed != need || res.Delivered != need || res.PeerLacks != ownOnly {
			t.Fatalf("result %+v, want negentropy finding %d needed and %d the peer lacks", res, need, ownOnly)
		}
		return res
	}
	large := upstream(t, peer, upstreamOpts{negentropy: true})
	small := rounds(large, Options{Negentropy: true, LargeFrameLimit: -1}, newClient(t, Config{}, env.Env{}))
	big := rounds(large, Options{Negentropy: true}, newClient(t, Config{}, env.Env{}))
	t.Logf("rounds: %d with 60,000-byte frames, %d with 500,000", small.Rounds, big.Rounds)
	// Restarts of a session khatru reported closed (its NEG-OPEN/NEG-MSG
	// race, likelier under load) are not what this test is about: only the
	// restarts with small frames are counted.
	if big.SmallFrameRestarts != 0 || big.Rounds >= small.Rounds {
		t.Fatalf("large frames: %d rounds (%d restarts with small frames); small frames only: %d rounds; want fewer and none restarted", big.Rounds, big.SmallFrameRestarts, small.Rounds)
	}

	strfryLike := upstream(t, peer, upstreamOpts{negentropy: true, maxMessage: 128 << 10})
	c := newClient(t, Config{}, env.Env{})
	first := rounds(strfryLike, Options{Negentropy: true}, c)
	if first.SmallFrameRestarts != 1 {
		t.Fatalf("first catch-up with a peer reading 128 KiB: %d restarts with small frames, want 1 (large frames refused)", first.SmallFrameRestarts)
	}
	if again := rounds(strfryLike, Options{Negentropy: true}, c); again.SmallFrameRestarts != 0 {
		t.Fatalf("second catch-up: %d restarts with small frames, want 0 (the peer is remembered)", again.SmallFrameRestarts)
	}
	requireNoLeak(t)
}
