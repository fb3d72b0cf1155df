package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// dial opens a websocket to a relay with room for large frames.
func dial(ctx context.Context, url string) (*websocket.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(dctx, url, nil)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", url, err)
	}
	c.SetReadLimit(64 << 20)
	return c, nil
}

// doneSet records which corpus events have been answered, so an event is
// sent only once the event it depends on has been.
type doneSet struct {
	mu   sync.Mutex
	cond *sync.Cond
	done []bool
}

func newDoneSet(n int) *doneSet {
	d := &doneSet{done: make([]bool, n)}
	d.cond = sync.NewCond(&d.mu)
	return d
}

func (d *doneSet) mark(i int) {
	d.mu.Lock()
	d.done[i] = true
	d.mu.Unlock()
	d.cond.Broadcast()
}

// wait blocks until event i has been answered or ctx ends.
func (d *doneSet) wait(ctx context.Context, i int) error {
	if i < 0 {
		return nil
	}
	stop := context.AfterFunc(ctx, func() {
		d.mu.Lock()
		d.cond.Broadcast()
		d.mu.Unlock()
	})
	defer stop()
	d.mu.Lock()
	defer d.mu.Unlock()
	for !d.done[i] {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		d.cond.Wait()
	}
	return nil
}

// ingestResult is one publication of a corpus slice.
type ingestResult struct {
	Events    int            `json:"events"`
	Accepted  int            `json:"accepted"`   // OK true
	Held      int            `json:"held"`       // OK true "purgatory: ..."
	Duplicate int            `json:"duplicate"`  // OK true "duplicate: ..."
	Rejected  int            `json:"rejected"`   // OK false
	Reasons   map[string]int `json:"reasons"`    // OK false messages (first 8 distinct)
	Elapsed   time.Duration  `json:"elapsed_ns"` // first send to last OK
	Waits     int            `json:"dependency_waits"`
	lats      []time.Duration
}

func (r ingestResult) rate() float64 { return float64(r.Events) / r.Elapsed.Seconds() }

// noAnswerLimit ends a publication when a connection has events in flight
// and no answer for this long: a stalled server fails the run instead of
// hanging it.
const noAnswerLimit = 2 * time.Minute

// progressEvery is how often a long publication reports how far it got.
const progressEvery = 15 * time.Second

// ingest publishes the events of c at positions idx (ascending) over conns
// connections, each with at most window EVENTs unanswered, and waits for
// every OK. Events go to the connections round robin; an event is not sent
// before the event it depends on was answered. Latency is measured per
// event from its send to its OK. progress, if not nil, is told every
// progressEvery how many events were answered.
func ingest(ctx context.Context, url string, c *corpus, idx []int, done *doneSet, conns, window int, progress func(answered int, elapsed time.Duration)) (ingestResult, error) {
	res := ingestResult{Events: len(idx), Reasons: map[string]int{}}
	if len(idx) == 0 {
		return res, nil
	}
	clients := make([]*websocket.Conn, conns)
	for k := range clients {
		ws, err := dial(ctx, url)
		if err != nil {
			return res, err
		}
		defer ws.CloseNow()
		clients[k] = ws
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var mu sync.Mutex // res and lats
	res.lats = make([]time.Duration, 0, len(idx))
	var wg sync.WaitGroup
	start := time.Now()
	if progress != nil {
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			t := time.NewTicker(progressEvery)
			defer t.Stop()
			for {
				select {
				case <-t.C:
					mu.Lock()
					n := len(res.lats)
					mu.Unlock()
					progress(n, time.Since(start))
				case <-stop:
					return
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	for k, ws := range clients {
		var mine []int
		for j := k; j < len(idx); j += conns {
			mine = append(mine, idx[j])
		}
		if len(mine) == 0 {
			continue
		}
		type sent struct {
			i  int
			at time.Time
		}
		var pmu sync.Mutex
		pending := make(map[string]sent, window)
		slots := make(chan struct{}, window)
		// reader
		wg.Go(func() {
			for got := 0; got < len(mine); {
				rctx, rcancel := context.WithTimeout(ctx, noAnswerLimit)
				_, msg, err := ws.Read(rctx)
				rcancel()
				if err != nil {
					cancel(fmt.Errorf("connection %d: read after %d of %d answers: %w", k, got, len(mine), err))
					return
				}
				now := time.Now()
				var env []json.RawMessage
				if json.Unmarshal(msg, &env) != nil || len(env) < 3 || string(env[0]) != `"OK"` {
					continue // NOTICEs and the like carry no answer
				}
				var id, text string
				var ok bool
				_ = json.Unmarshal(env[1], &id)
				_ = json.Unmarshal(env[2], &ok)
				if len(env) > 3 {
					_ = json.Unmarshal(env[3], &text)
				}
				pmu.Lock()
				s, found := pending[id]
				delete(pending, id)
				pmu.Unlock()
				if !found {
					continue
				}
				got++
				<-slots
				done.mark(s.i)
				mu.Lock()
				res.lats = append(res.lats, now.Sub(s.at))
				switch {
				case !ok:
					res.Rejected++
					if len(res.Reasons) < 8 || res.Reasons[text] > 0 {
						res.Reasons[text]++
					}
				case strings.HasPrefix(text, "purgatory:"):
					res.Held++
				case strings.HasPrefix(text, "duplicate:"):
					res.Duplicate++
				default:
					res.Accepted++
				}
				mu.Unlock()
			}
		})
		// sender
		wg.Go(func() {
			var frame []byte // read from the corpus file per event, reused
			for _, i := range mine {
				it := &c.items[i]
				if it.dep >= 0 && !done.isDone(int(it.dep)) {
					mu.Lock()
					res.Waits++
					mu.Unlock()
				}
				if err := done.wait(ctx, int(it.dep)); err != nil {
					return
				}
				select {
				case slots <- struct{}{}:
				case <-ctx.Done():
					return
				}
				var err error
				if frame, err = c.appendFrame(frame[:0], i); err != nil {
					cancel(fmt.Errorf("connection %d: %w", k, err))
					return
				}
				pmu.Lock()
				pending[it.idHex()] = sent{i, time.Now()}
				pmu.Unlock()
				if err := ws.Write(ctx, websocket.MessageText, frame); err != nil {
					cancel(fmt.Errorf("connection %d: write: %w", k, err))
					return
				}
			}
		})
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return res, err
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	slices.Sort(res.lats)
	return res, nil
}

func (d *doneSet) isDone(i int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.done[i]
}

// percentile of sorted durations (p in 0..1).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}
