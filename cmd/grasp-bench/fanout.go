package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/nbd-wtf/go-nostr"
)

type fanoutOpts struct {
	Subs   int `json:"subscriptions"`
	Conns  int `json:"connections"`
	Events int `json:"events"`
}

type fanoutResult struct {
	fanoutOpts
	Deliveries int           `json:"deliveries"`
	P50        time.Duration `json:"p50_ns"`      // publish -> one subscriber's copy
	P99        time.Duration `json:"p99_ns"`      //
	LastP50    time.Duration `json:"last_p50_ns"` // publish -> the last subscriber's copy
	LastP99    time.Duration `json:"last_p99_ns"`
}

// fanoutRepos is how many repositories the per-repository subscriptions
// spread over.
const fanoutRepos = 40

// fanoutFilters are the live subscriptions of a GRASP server's clients:
// one in five follows every new issue (kinds only), the others follow the
// issues and comments of one repository (#a + kinds), as a repository page
// does. So each event reaches a fifth of the subscriptions plus its
// repository's followers, and a server that matched by index would test
// fewer filters than one that tests them all.
func fanoutFilters(repos []string, subs int, since nostr.Timestamp) []nostr.Filter {
	out := make([]nostr.Filter, subs)
	followed := min(len(repos), fanoutRepos)
	for k := range out {
		if k%5 == 0 {
			out[k] = nostr.Filter{Kinds: []int{nip34.KindIssue}, Since: &since}
		} else {
			// numbered among the per-repository subscriptions, so every
			// repository gets the same number of followers
			j := k - k/5 - 1
			out[k] = nostr.Filter{Kinds: []int{nip34.KindIssue, nip34.KindComment}, Since: &since,
				Tags: nostr.TagMap{"a": {repos[j%followed]}}}
		}
	}
	return out
}

// fanoutEvents signs the live events: new issues, round robin over the
// followed repositories, created now (subscriptions use since).
func fanoutEvents(repos []string, n int, now nostr.Timestamp) ([]*nostr.Event, error) {
	sk := nostr.GeneratePrivateKey()
	out := make([]*nostr.Event, n)
	for i := range out {
		addr := repos[i%min(len(repos), fanoutRepos)]
		a, err := nip34.ParseAddress(addr)
		if err != nil {
			return nil, err
		}
		e := &nostr.Event{Kind: nip34.KindIssue, CreatedAt: now, Content: fmt.Sprintf("live issue %d: the build fails on a fresh clone", i),
			Tags: nostr.Tags{{"a", addr}, {"p", a.Pubkey}, {"subject", "live issue " + strconv.Itoa(i)}}}
		if err := e.Sign(sk); err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

// runFanout opens o.Subs live subscriptions over o.Conns connections, then
// publishes o.Events events one at a time from another connection, each
// after the previous one reached every subscription it matches, and times
// publish → delivery for every copy.
func runFanout(ctx context.Context, url string, repos []string, o fanoutOpts) (fanoutResult, error) {
	res := fanoutResult{fanoutOpts: o}
	if len(repos) == 0 {
		return res, fmt.Errorf("no repositories to follow")
	}
	now := nostr.Now()
	filters := fanoutFilters(repos, o.Subs, now-1)
	evts, err := fanoutEvents(repos, o.Events, now)
	if err != nil {
		return res, err
	}
	index := map[string]int{}
	want := make([]int, len(evts)) // matching subscriptions per event
	for i, e := range evts {
		index[e.ID] = i
		for _, f := range filters {
			if f.Matches(e) {
				want[i]++
			}
		}
	}
	// Deferred in this order so that the readers are cancelled (and the
	// sockets closed) before they are waited for.
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	type copyOf struct {
		evt int
		at  time.Time
	}
	arrivals := make(chan copyOf, 4096)
	eosed := make(chan struct{}, o.Subs)
	for k := range o.Conns {
		ws, err := dial(ctx, url)
		if err != nil {
			return res, err
		}
		defer ws.CloseNow()
		for s := k; s < o.Subs; s += o.Conns {
			req, _ := json.Marshal([]any{"REQ", "f" + strconv.Itoa(s), filters[s]})
			if err := ws.Write(ctx, websocket.MessageText, req); err != nil {
				return res, err
			}
		}
		wg.Go(func() {
			for {
				_, msg, err := ws.Read(ctx)
				if err != nil {
					if ctx.Err() == nil {
						cancel(fmt.Errorf("subscriber connection %d: %w", k, err))
					}
					return
				}
				at := time.Now()
				switch {
				case bytes.HasPrefix(msg, []byte(`["EVENT"`)):
					// Only the id is needed; finding it is cheaper than
					// decoding the event, so the client's own work disturbs
					// the timing less.
					if id := eventID(msg); id != "" {
						if i, ok := index[id]; ok {
							select {
							case arrivals <- copyOf{i, at}:
							case <-ctx.Done():
								return
							}
						}
					}
				case bytes.HasPrefix(msg, []byte(`["EOSE"`)):
					eosed <- struct{}{}
				case bytes.HasPrefix(msg, []byte(`["CLOSED"`)):
					cancel(fmt.Errorf("subscription refused: %s", msg))
					return
				}
			}
		})
	}
	eoseBy := time.After(2 * time.Minute)
	for k := range o.Subs {
		select {
		case <-eosed:
		case <-ctx.Done():
			return res, context.Cause(ctx)
		case <-eoseBy:
			return res, fmt.Errorf("%d of %d subscriptions got their EOSE within 2 minutes", k, o.Subs)
		}
	}
	pub, err := dial(ctx, url)
	if err != nil {
		return res, err
	}
	defer pub.CloseNow()
	var lats, lasts []time.Duration
	for i, e := range evts {
		frame, _ := json.Marshal([]any{"EVENT", e})
		sent := time.Now()
		if err := pub.Write(ctx, websocket.MessageText, frame); err != nil {
			return res, err
		}
		var last time.Duration
		deadline := time.After(time.Minute)
		for got := 0; got < want[i]; {
			select {
			case a := <-arrivals:
				if a.evt != i {
					return res, fmt.Errorf("a copy of event %d arrived while waiting for event %d", a.evt, i)
				}
				got++
				last = a.at.Sub(sent)
				lats = append(lats, last)
			case <-deadline:
				return res, fmt.Errorf("event %d reached %d of %d subscriptions within a minute", i, got, want[i])
			case <-ctx.Done():
				return res, context.Cause(ctx)
			}
		}
		lasts = append(lasts, last)
		if err := expectOK(ctx, pub, e.ID); err != nil {
			return res, fmt.Errorf("publish event %d: %w", i, err)
		}
		res.Deliveries += want[i]
	}
	slices.Sort(lats)
	slices.Sort(lasts)
	res.P50, res.P99 = percentile(lats, 0.5), percentile(lats, 0.99)
	res.LastP50, res.LastP99 = percentile(lasts, 0.5), percentile(lasts, 0.99)
	return res, nil
}

// eventID finds the event id in an EVENT frame: the only `"id":"` that
// is not inside a string, since quotes inside strings are escaped.
func eventID(msg []byte) string {
	i := bytes.Index(msg, []byte(`"id":"`))
	if i < 0 || len(msg) < i+6+64 {
		return ""
	}
	return string(msg[i+6 : i+6+64])
}

// expectOK reads until the OK for id and fails unless it is true.
func expectOK(ctx context.Context, ws *websocket.Conn, id string) error {
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		_, msg, err := ws.Read(rctx)
		if err != nil {
			return err
		}
		var env []json.RawMessage
		if json.Unmarshal(msg, &env) != nil || len(env) < 3 || string(env[0]) != `"OK"` {
			continue
		}
		var got string
		var ok bool
		_ = json.Unmarshal(env[1], &got)
		_ = json.Unmarshal(env[2], &ok)
		if got != id {
			continue
		}
		if !ok {
			return fmt.Errorf("refused: %s", msg)
		}
		return nil
	}
}
