package conn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/coder/websocket"
	"github.com/grasp-dev/grasp/core/outcome"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/core/relaysync"
	"github.com/grasp-dev/grasp/core/relaysync/catchup"
	"github.com/nbd-wtf/go-nostr"
)

// read turns frames into queued events and owner commands. It keeps
// reading whatever the ingester's pace, so the peer's pings are answered
// (see liveQueue); a peer that outpaces ingestion beyond the queue's bound
// is disconnected, never buffered without limit (go-nostr's Relay spawns a
// goroutine per event).
func (r *relay) read() {
	defer r.wg.Done()
	for {
		typ, data, err := r.ws.Read(r.ctx)
		if err != nil {
			if r.ctx.Err() == nil {
				var ce websocket.CloseError
				if errors.As(err, &ce) && ce.Code == websocket.StatusMessageTooBig {
					r.p.m.dropped.WithLabelValues("oversized").Inc()
				}
				r.shut(fmt.Errorf("read from %s: %w", r.url, err))
			}
			return
		}
		if typ != websocket.MessageText {
			r.p.m.dropped.WithLabelValues("malformed").Inc()
			continue
		}
		if !r.frame(data) {
			return
		}
	}
}

// frame handles one frame; false means the connection is ending.
func (r *relay) frame(data []byte) bool {
	switch label(data) {
	case "EVENT":
		var env nostr.EventEnvelope
		if err := env.FromJSON(string(data)); err != nil || env.SubscriptionID == nil {
			r.p.m.dropped.WithLabelValues("malformed").Inc()
			return true
		}
		filters := r.lookup(*env.SubscriptionID)
		if filters == nil {
			r.p.m.dropped.WithLabelValues("unknown_sub").Inc()
			return true
		}
		if !matchesAny(filters, &env.Event) {
			r.p.m.dropped.WithLabelValues("unmatched").Inc()
			return true
		}
		evt := env.Event
		if !r.events.push(inbound{evt: &evt, at: r.p.clk.Now()}) {
			r.p.m.dropped.WithLabelValues("overflow").Inc()
			r.shut(fmt.Errorf("%s sends events faster than they are ingested (%d bytes waiting); reconnecting, its catch-up fetches the rest",
				r.url, r.events.waiting()))
			return false
		}
		return true
	case "CLOSED":
		var env nostr.ClosedEnvelope
		if err := env.FromJSON(string(data)); err != nil {
			r.p.m.dropped.WithLabelValues("malformed").Inc()
			return true
		}
		return r.command(command{op: opClosed, id: env.SubscriptionID, msg: env.Reason})
	case "NOTICE":
		var env nostr.NoticeEnvelope
		if err := env.FromJSON(string(data)); err != nil {
			r.p.m.dropped.WithLabelValues("malformed").Inc()
			return true
		}
		return r.command(command{op: opNotice, msg: string(env)})
	case "EOSE", "OK", "AUTH", "COUNT":
		// Live subscriptions ask for no stored events, so EOSE carries
		// nothing; we publish nothing and do not authenticate.
		return true
	default:
		r.p.m.dropped.WithLabelValues("malformed").Inc()
		return true
	}
}

// command queues a frame's command for the owner, first waiting (bounded by
// ctx) while the owner is far behind, so a peer spamming CLOSED or NOTICE
// cannot grow the queue without limit.
func (r *relay) command(c command) bool {
	for r.pending() > 1024 {
		t := r.p.clk.NewTimer(10 * time.Millisecond)
		select {
		case <-t.C():
		case <-r.ctx.Done():
			t.Stop()
			return false
		}
	}
	r.enqueue(c)
	return true
}

// matchesAny checks an event against the subscription's filters, ignoring
// since: the live half asked from a later since than the filter, and an
// event a peer sends for the right tags is wanted whatever its timestamp.
func matchesAny(filters []nostr.Filter, evt *nostr.Event) bool {
	for _, f := range filters {
		if f.MatchesIgnoringTimestampConstraints(evt) {
			return true
		}
	}
	return false
}

// ingest feeds live events to the Sink at the peer's rate cap.
func (r *relay) ingest() {
	defer r.wg.Done()
	for {
		in, ok := r.events.pop()
		if !ok {
			select {
			case <-r.ctx.Done():
				return
			case <-r.events.notify:
			}
			continue
		}
		waited, err := r.pe.lim.wait(r.ctx)
		if err != nil {
			return
		}
		if waited {
			r.p.m.paced.Inc()
		}
		res := r.deliver(r.ctx, in.evt, in.at)
		r.p.m.events.WithLabelValues(sourceLive, res).Inc()
		r.p.m.liveDelay.Observe(r.p.clk.Since(in.at).Seconds())
		r.p.log.Debug("live event", "relay", r.url, "id", in.evt.ID, "kind", in.evt.Kind, "result", res)
	}
}

// Pipeline results as metric labels.
const (
	resStored    = "stored"
	resHeld      = "held"
	resDuplicate = "duplicate"
	resRejected  = "rejected"
)

// resOverBound: the relay had delivered its daily bound; the event was
// dropped before the pipeline and the connection ended.
const resOverBound = "over_daily_bound"

// deliver passes evt to the pipeline and counts it by why the relay is
// synced. A relay with a daily bound (an outbox relay) that reaches it is
// disconnected: what it sends costs no more verification or storage today.
func (r *relay) deliver(ctx context.Context, evt *nostr.Event, at time.Time) string {
	role := r.p.role(r.url)
	res := r.pipeline(ctx, evt, at, role)
	r.p.m.pulled.WithLabelValues(string(role.Source), res).Inc()
	return res
}

func (r *relay) pipeline(ctx context.Context, evt *nostr.Event, at time.Time, role relaysync.RelayRole) string {
	if role.EventsPerDay > 0 && !r.p.daily.take(r.url, role.EventsPerDay, r.p.clk.Now()) {
		err := errOverDailyBound(r.url, role.EventsPerDay, r.p.clk.Now())
		r.p.log.Warn("relay reached its daily event bound; disconnecting", "relay", r.url, "error", err)
		r.shut(err)
		return resOverBound
	}
	meta := policy.Meta{Source: policy.SourceSync, Remote: r.url, ReceivedAt: at}
	a, typed := r.p.o.Sink.(Accepter)
	if !typed {
		if ok, _ := r.p.o.Sink.Ingest(ctx, evt, meta); !ok {
			return resRejected
		}
		return resStored
	}
	res := a.Accept(ctx, evt, meta)
	if !res.OK() {
		return resRejected
	}
	// A shadowed event is counted as what the peer would have been told.
	switch res.Told() {
	case outcome.Duplicate:
		return resDuplicate
	case outcome.Held:
		return resHeld
	default:
		return resStored
	}
}

// catchUp fetches the history of s's filters and reports the outcome to the
// owner. Sessions are bounded per relay and in total; each is its own
// websocket (catchup never shares one), closed when it ends.
func (r *relay) catchUp(ctx context.Context, s *sub, mode relaysync.CatchUp) {
	defer r.wg.Done()
	select {
	case r.slots <- struct{}{}:
	case <-ctx.Done():
		return
	}
	defer func() { <-r.slots }()
	select {
	case r.p.slots <- struct{}{}:
	case <-ctx.Done():
		return
	}
	defer func() { <-r.p.slots }()
	r.p.m.catchUps.Inc()
	defer r.p.m.catchUps.Dec()

	opts := r.p.o.CatchUpOptions
	opts.Negentropy = mode == relaysync.CatchUpNegentropy
	for _, f := range s.filters {
		sink := &catchUpSink{r: r, started: r.p.clk.Now(), full: f.Since == nil}
		res, err := r.p.catchUp.CatchUp(ctx, r.url, f, r.p.o.Local, sink, opts)
		if ctx.Err() != nil {
			return // unsubscribed, or the connection ended
		}
		if err != nil {
			r.enqueue(command{op: opCatchUpFailed, id: s.id, gen: s.gen, err: err})
			return
		}
		r.p.log.Debug("subscription caught up", "relay", r.url, "sub", s.id, "method", res.Method,
			"delivered", res.Delivered, "rejected", res.Rejected, "bad", res.Bad, "gaps", sink.gaps)
	}
	r.enqueue(command{op: opCatchUpDone, id: s.id, gen: s.gen})
}

// catchUpSink passes catch-up events to the Sink under the same rate cap as
// live events and spots the ones live sync should have brought.
type catchUpSink struct {
	r       *relay
	started time.Time
	full    bool // no since: a fresh or daily sync
	gaps    int
}

var _ catchup.Sink = (*catchUpSink)(nil)

func (c *catchUpSink) Deliver(ctx context.Context, evt *nostr.Event) bool {
	r := c.r
	waited, err := r.pe.lim.wait(ctx)
	if err != nil {
		return false
	}
	if waited {
		r.p.m.paced.Inc()
	}
	res := r.deliver(ctx, evt, r.p.clk.Now())
	r.p.m.events.WithLabelValues(sourceCatchUp, res).Inc()
	if (res == resStored || res == resHeld) && r.pe.missedLive(evt, c.started, r.p.o.GapGrace) {
		c.gaps++
		if c.full {
			r.p.m.gaps.WithLabelValues(gapDaily).Inc()
			r.p.log.Error("sustained sync gap: full resync found an event live sync and earlier catch-ups missed",
				"relay", r.url, "id", evt.ID, "kind", evt.Kind)
		} else {
			r.p.m.gaps.WithLabelValues(gapCatchUp).Inc()
			r.p.log.Warn("sync gap: catch-up found an event live sync missed", "relay", r.url, "id", evt.ID, "kind", evt.Kind)
		}
	}
	return res != resRejected && res != resOverBound
}

// label reads a frame's verb (`["EVENT",...`) without parsing the rest.
func label(f []byte) string {
	f = bytes.TrimLeft(f, " \t\r\n")
	if len(f) == 0 || f[0] != '[' {
		return ""
	}
	f = bytes.TrimLeft(f[1:], " \t\r\n")
	if len(f) == 0 || f[0] != '"' {
		return ""
	}
	end := bytes.IndexByte(f[1:], '"')
	if end < 0 || end > 16 {
		return ""
	}
	return string(f[1 : 1+end])
}
