package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/coder/websocket"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/nbd-wtf/go-nostr"
)

// querySet is one kind of REQ, asked many times with different values.
type querySet struct {
	Name    string
	filters []nostr.Filter
}

// queryResult is the REQ → EOSE latency of one query set.
type queryResult struct {
	Name    string        `json:"name"`
	Queries int           `json:"queries"`
	Events  int           `json:"events"` // events returned in all, to compare servers
	P50     time.Duration `json:"p50_ns"`
	P99     time.Duration `json:"p99_ns"`
}

// querySets builds, from the first n events of c, the filters clients of a
// GRASP server send: events by id, a repository's issues and patches by
// #a, one author's recent activity (authors+kinds), and a time window
// (since/until). The values are drawn from a seeded generator, so every
// server is asked the same questions.
func querySets(c *corpus, n, per int, seed uint64) []querySet {
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	items := c.items[:n]
	var repos []string
	for i, it := range items {
		if it.kind == nip34.KindAnnouncement {
			repos = append(repos, "30617:"+c.pubkey(i)+":"+c.dTag(i))
		}
	}
	lo, hi := items[0].createdAt, items[0].createdAt
	for _, it := range items {
		lo, hi = min(lo, it.createdAt), max(hi, it.createdAt)
	}
	sets := []querySet{{Name: "ids"}, {Name: "#a"}, {Name: "authors+kinds"}, {Name: "since/until"}}
	for range per {
		ids := make([]string, 5)
		for k := range ids {
			ids[k] = items[rng.IntN(n)].idHex()
		}
		sets[0].filters = append(sets[0].filters, nostr.Filter{IDs: ids})
		if len(repos) > 0 {
			sets[1].filters = append(sets[1].filters, nostr.Filter{
				Kinds: []int{nip34.KindPatch, nip34.KindIssue},
				Tags:  nostr.TagMap{"a": {repos[rng.IntN(len(repos))]}}, Limit: 100,
			})
		}
		sets[2].filters = append(sets[2].filters, nostr.Filter{
			Authors: []string{c.pubkey(rng.IntN(n))},
			Kinds:   []int{nip34.KindComment, nip34.KindIssue, nip34.KindPatch}, Limit: 100,
		})
		since := nostr.Timestamp(lo + rng.Int64N(max(1, hi-lo)))
		until := since + 24*3600
		sets[3].filters = append(sets[3].filters, nostr.Filter{Since: &since, Until: &until, Limit: 100})
	}
	return sets
}

// runQueries asks every filter in turn on one connection, each as its own
// REQ, and times REQ → EOSE.
func runQueries(ctx context.Context, url string, sets []querySet) ([]queryResult, error) {
	ws, err := dial(ctx, url)
	if err != nil {
		return nil, err
	}
	defer ws.CloseNow()
	var out []queryResult
	seq := 0
	for _, set := range sets {
		r := queryResult{Name: set.Name, Queries: len(set.filters)}
		lats := make([]time.Duration, 0, len(set.filters))
		for _, f := range set.filters {
			seq++
			sub := "q" + strconv.Itoa(seq)
			req, _ := json.Marshal([]any{"REQ", sub, f})
			qctx, cancel := context.WithTimeout(ctx, time.Minute)
			start := time.Now()
			n, err := reqUntilEOSE(qctx, ws, sub, req)
			lat := time.Since(start)
			cancel()
			if err != nil {
				return nil, fmt.Errorf("query %s %s: %w", set.Name, req, err)
			}
			closeMsg, _ := json.Marshal([]any{"CLOSE", sub})
			if err := ws.Write(ctx, websocket.MessageText, closeMsg); err != nil {
				return nil, err
			}
			r.Events += n
			lats = append(lats, lat)
		}
		slices.Sort(lats)
		r.P50, r.P99 = percentile(lats, 0.5), percentile(lats, 0.99)
		out = append(out, r)
	}
	return out, nil
}

// reqUntilEOSE sends req and counts the subscription's events until its
// EOSE. A CLOSED ends it with an error.
func reqUntilEOSE(ctx context.Context, ws *websocket.Conn, sub string, req []byte) (int, error) {
	if err := ws.Write(ctx, websocket.MessageText, req); err != nil {
		return 0, err
	}
	n := 0
	for {
		_, msg, err := ws.Read(ctx)
		if err != nil {
			return n, err
		}
		var env []json.RawMessage
		if json.Unmarshal(msg, &env) != nil || len(env) < 2 {
			continue
		}
		var label, id string
		_ = json.Unmarshal(env[0], &label)
		_ = json.Unmarshal(env[1], &id)
		if id != sub {
			continue // a late frame of an earlier, closed subscription
		}
		switch label {
		case "EVENT":
			n++
		case "EOSE":
			return n, nil
		case "CLOSED":
			return n, fmt.Errorf("closed by the server: %s", msg)
		}
	}
}
