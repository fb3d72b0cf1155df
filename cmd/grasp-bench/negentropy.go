package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/relaysync/catchup"
	"github.com/grasp-dev/grasp/core/sigcheck"
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
	// Reconcile is the part of Duration spent in the NIP-77 sessions; the
	// fetch of the missing events starts during it.
	Reconcile time.Duration `json:"reconcile_ns"`
	// Early is how many events were delivered before the sessions ended.
	Early int `json:"fetched_during_reconcile"`
	// Verified is how many signatures the client verified: at least one per
	// fetched event (sigcheck's table of verified signatures is emptied
	// before each run, so no run profits from the one before).
	Verified int64 `json:"signatures_verified"`
}

// heldItems is the client's side of the reconciliation: the corpus's first
// n events except every missEvery-th (0: none missing).
type heldItems []catchup.Item

func (h heldItems) Items(context.Context, nostr.Filter) ([]catchup.Item, error) { return h, nil }

// countSink accepts every event it is given.
type countSink struct{ n atomic.Int64 }

func (s *countSink) Deliver(context.Context, *nostr.Event) bool { s.n.Add(1); return true }

// firstN is the positions 0 … n-1.
func firstN(n int) []int {
	pos := make([]int, n)
	for i := range pos {
		pos[i] = i
	}
	return pos
}

// runNegentropyOf reconciles filter (the empty filter: the whole store)
// with grasp's own NIP-77 client (core/relaysync/catchup, as GRASP-02 sync
// uses it) and fetches what is missing. The server matches filter with the
// corpus events at positions (and nothing else it holds); the client holds
// them except every missEvery-th (0: none missing). It checks the outcome:
// exactly the events left out must be found, and the server must lack none
// of the client's.
func runNegentropyOf(ctx context.Context, url string, c *corpus, filter nostr.Filter, positions []int, missEvery int) (negResult, error) {
	held := make(heldItems, 0, len(positions))
	missing := 0
	for i, p := range positions {
		if missEvery > 0 && i%missEvery == missEvery/2 {
			missing++
			continue
		}
		it := &c.items[p]
		held = append(held, catchup.Item{ID: it.idHex(), CreatedAt: nostr.Timestamp(it.createdAt)})
	}
	client, err := clientFor(url)
	if err != nil {
		return negResult{}, err
	}
	sink := &countSink{}
	sigcheck.Forget()
	verified0 := sigcheck.Verifications()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	res, err := client.CatchUp(cctx, url, filter, held, sink, catchup.Options{Negentropy: true, RoundTimeout: 2 * time.Minute, LargeFrameLimit: negLargeFrames})
	out := negResult{Held: len(held), Needed: res.Needed, Fetched: res.Fetched, Rounds: res.Rounds,
		BytesSent: res.BytesSent, BytesRecv: res.BytesReceived, Duration: res.Duration, Reconcile: res.Reconcile, Early: res.Early,
		Verified: sigcheck.Verifications() - verified0}
	switch {
	case err != nil:
		return out, err
	case out.Verified < int64(res.Fetched):
		return out, fmt.Errorf("%d events fetched, %d signatures verified", res.Fetched, out.Verified)
	case res.Method != catchup.MethodNegentropy:
		return out, fmt.Errorf("fell back to REQ: %s", res.FallbackReason)
	case res.Needed != missing || int(sink.n.Load()) != missing:
		return out, fmt.Errorf("reconciliation found %d missing and delivered %d, want %d", res.Needed, sink.n.Load(), missing)
	case res.PeerLacks != 0:
		return out, fmt.Errorf("the server lacks %d of the client's events", res.PeerLacks)
	}
	return out, nil
}

// negLargeFrames is the catch-up's LargeFrameLimit: 0, its default, unless
// `grasp-bench neg -small-frames` turns large frames off (-1) to compare.
var negLargeFrames int

// clients keeps one catch-up client per server URL, as a syncing relay
// keeps one per process: what it learns of a peer (that it refuses large
// frames, as the khatru baseline does) is learnt once, not in every run.
var clients sync.Map

func clientFor(url string) (*catchup.Client, error) {
	if c, ok := clients.Load(url); ok {
		return c.(*catchup.Client), nil
	}
	c, err := catchup.New(catchup.Config{}, env.Env{})
	if err != nil {
		return nil, err
	}
	actual, _ := clients.LoadOrStore(url, c)
	return actual.(*catchup.Client), nil
}

// repoSessionTarget is the size of the repository a per-repository session
// reconciles: at every point the one whose events number closest to it, so
// the sessions compared across store sizes reconcile sets of one size.
const repoSessionTarget = 500

// negRepo is one repository's `a` address and the corpus positions, among
// the first n, of the events tagged with it.
type negRepo struct {
	addr string
	pos  []int
}

// pickRepo finds, among the first n corpus events, the repository address
// whose `a`-tagged events number closest to repoSessionTarget (the `a`
// tags the corpus index kept of each event: corpus.aTags).
func pickRepo(c *corpus, n int) (negRepo, bool) {
	byAddr := map[string][]int{}
	for p := range c.items[:n] {
		for _, addr := range c.aTags(p) {
			byAddr[addr] = append(byAddr[addr], p)
		}
	}
	var best negRepo
	for addr, pos := range byAddr {
		d, bd := len(pos)-repoSessionTarget, len(best.pos)-repoSessionTarget
		if best.pos == nil || abs(d) < abs(bd) || (abs(d) == abs(bd) && addr < best.addr) {
			best = negRepo{addr, pos}
		}
	}
	return best, best.pos != nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
