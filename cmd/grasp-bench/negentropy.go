package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/relaysync/catchup"
	"github.com/nbd-wtf/go-nostr"
)

// negResult is one NIP-77 catch-up against a server holding the first n
// corpus events.
type negResult struct {
	Held      int           `json:"held"`   // events the client already had
	Needed    int           `json:"needed"` // ids reconciliation found missing
	Fetched   int           `json:"fetched"`
	Rounds    int           `json:"rounds"`
	BytesSent int64         `json:"bytes_sent"`
	BytesRecv int64         `json:"bytes_received"`
	Duration  time.Duration `json:"duration_ns"`
}

// heldItems is the client's side of the reconciliation: the corpus's first
// n events except every missEvery-th (0: none missing).
type heldItems []catchup.Item

func (h heldItems) Items(context.Context, nostr.Filter) ([]catchup.Item, error) { return h, nil }

// countSink accepts every event it is given.
type countSink struct{ n atomic.Int64 }

func (s *countSink) Deliver(context.Context, *nostr.Event) bool { s.n.Add(1); return true }

// runNegentropy reconciles the whole store (an empty filter) with grasp's
// own NIP-77 client (core/relaysync/catchup, as GRASP-02 sync uses it) and
// fetches what is missing. It checks the outcome: exactly the events left
// out must be found, and the server must lack none of the client's.
func runNegentropy(ctx context.Context, url string, c *corpus, n, missEvery int) (negResult, error) {
	held := make(heldItems, 0, n)
	missing := 0
	for i, it := range c.items[:n] {
		if missEvery > 0 && i%missEvery == missEvery/2 {
			missing++
			continue
		}
		held = append(held, catchup.Item{ID: it.id, CreatedAt: nostr.Timestamp(it.createdAt)})
	}
	client, err := catchup.New(catchup.Config{}, env.Env{})
	if err != nil {
		return negResult{}, err
	}
	sink := &countSink{}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	res, err := client.CatchUp(cctx, url, nostr.Filter{}, held, sink, catchup.Options{Negentropy: true, RoundTimeout: 2 * time.Minute})
	out := negResult{Held: len(held), Needed: res.Needed, Fetched: res.Fetched, Rounds: res.Rounds,
		BytesSent: res.BytesSent, BytesRecv: res.BytesReceived, Duration: res.Duration}
	switch {
	case err != nil:
		return out, err
	case res.Method != catchup.MethodNegentropy:
		return out, fmt.Errorf("fell back to REQ: %s", res.FallbackReason)
	case res.Needed != missing || int(sink.n.Load()) != missing:
		return out, fmt.Errorf("reconciliation found %d missing and delivered %d, want %d", res.Needed, sink.n.Load(), missing)
	case res.PeerLacks != 0:
		return out, fmt.Errorf("the server lacks %d of the client's events", res.PeerLacks)
	}
	return out, nil
}
