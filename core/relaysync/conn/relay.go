package conn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/grasp-dev/grasp/core/relaysync"
	"github.com/nbd-wtf/go-nostr"
)

type op uint8

const (
	opSubscribe op = iota
	opUnsubscribe
	opCatchUpDone
	opCatchUpFailed
	opClosed // the peer sent CLOSED
	opNotice // the peer sent NOTICE
)

// command is work for the owner goroutine: from the manager (subscribe,
// unsubscribe), from catch-up goroutines, or frames from the reader.
type command struct {
	op      op
	id      string
	filters []nostr.Filter
	mode    relaysync.CatchUp
	gen     uint64
	msg     string
	err     error
}

// sub is one subscription on the connection.
type sub struct {
	id      string
	gen     uint64
	filters []nostr.Filter
	cancel  context.CancelFunc // its catch-up
}

type inbound struct {
	evt *nostr.Event
	at  time.Time
}

// relay is one websocket to one peer. Its owner goroutine (run) dials,
// writes every frame and handles every command; a reader goroutine turns
// frames into events (into a bounded queue) and commands; an ingester
// goroutine feeds the queue to the Sink at the peer's rate cap.
type relay struct {
	p   *Pool
	url string
	pe  *peer

	ctx    context.Context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup // reader, ingester, pinger, catch-ups

	qmu    sync.Mutex
	queue  []command
	notify chan struct{}

	smu  sync.Mutex // subs is read by the reader to match events
	subs map[string]*sub
	gen  uint64

	ws       *websocket.Conn
	events   *liveQueue
	slots    chan struct{} // this relay's catch-up sessions
	pinging  atomic.Bool
	pingFail atomic.Int32
}

func newRelay(p *Pool, url string, pe *peer) *relay {
	ctx, cancel := context.WithCancelCause(p.ctx)
	return &relay{
		p: p, url: url, pe: pe, ctx: ctx, cancel: cancel, notify: make(chan struct{}, 1),
		subs: map[string]*sub{}, events: newLiveQueue(p.o.QueueBytes), slots: make(chan struct{}, p.o.CatchUpsPerRelay),
	}
}

// enqueue never blocks: the manager calls it from its actor goroutine. The
// queue is bounded by what the manager asks for (its filter limit per
// connection) plus one command per catch-up and per reader frame, and the
// reader waits while the owner is behind (see frame).
func (r *relay) enqueue(c command) {
	r.qmu.Lock()
	r.queue = append(r.queue, c)
	r.qmu.Unlock()
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

func (r *relay) take() []command {
	r.qmu.Lock()
	defer r.qmu.Unlock()
	q := r.queue
	r.queue = nil
	return q
}

func (r *relay) pending() int {
	r.qmu.Lock()
	defer r.qmu.Unlock()
	return len(r.queue)
}

// shut ends the connection with cause; the owner reports it unless the
// cause is errClosedByUs.
func (r *relay) shut(cause error) { r.cancel(cause) }

func (r *relay) run() {
	o := r.p.o
	if role := r.p.role(r.url); role.EventsPerDay > 0 && r.p.daily.spent(r.url, role.EventsPerDay, r.p.clk.Now()) {
		r.finish(errOverDailyBound(r.url, role.EventsPerDay, r.p.clk.Now()))
		return
	}
	dctx, dcancel := context.WithCancel(r.ctx)
	t := r.p.clk.AfterFunc(o.DialTimeout, dcancel)
	ws, err := o.Dial(dctx, r.url)
	t.Stop()
	dcancel()
	if err != nil {
		r.p.m.dials.WithLabelValues("failed").Inc()
		if r.ctx.Err() == nil {
			err = fmt.Errorf("dial %s: %w", r.url, err)
		} else {
			err = context.Cause(r.ctx)
		}
		r.finish(err)
		return
	}
	r.p.m.dials.WithLabelValues("ok").Inc()
	r.p.m.open.Inc()
	ws.SetReadLimit(int64(o.Limits.MaxPeerMessageBytes))
	r.ws = ws
	r.p.log.Info("connected to relay", "relay", r.url)
	r.p.report(r, func(rep Reporter) { rep.Connected(r.url) })

	r.wg.Add(2)
	go r.read()
	go r.ingest()
	ping := r.p.clk.NewTicker(o.PingInterval)
	defer ping.Stop()
	for {
		select {
		case <-r.ctx.Done():
			ws.CloseNow()
			r.p.m.open.Dec()
			r.finish(context.Cause(r.ctx))
			return
		case <-r.notify:
			for _, c := range r.take() {
				r.handle(c)
			}
		case <-ping.C():
			r.ping()
		}
	}
}

// finish waits for the helpers, closes the relay's live windows and, unless
// the manager closed it, reports the disconnection.
func (r *relay) finish(cause error) {
	r.cancel(cause)
	r.wg.Wait()
	r.pe.close(r, "", r.p.clk.Now())
	if errors.Is(cause, errClosedByUs) {
		return
	}
	if !r.p.forget(r) {
		return
	}
	r.p.log.Debug("relay connection ended", "relay", r.url, "error", cause)
	if rep := r.p.reporter(); rep != nil {
		rep.Disconnected(r.url, cause)
	}
}

func (r *relay) handle(c command) {
	switch c.op {
	case opSubscribe:
		r.subscribe(c)
	case opUnsubscribe:
		if s := r.drop(c.id, 0); s != nil {
			r.sendClose(c.id)
		}
	case opCatchUpDone:
		if r.current(c.id, c.gen) {
			r.p.report(r, func(rep Reporter) { rep.SubscriptionDone(r.url, c.id) })
		}
	case opCatchUpFailed:
		if s := r.drop(c.id, c.gen); s != nil {
			r.sendClose(c.id)
			reason := "error: catch-up failed: " + c.err.Error()
			r.p.report(r, func(rep Reporter) { rep.SubscriptionClosed(r.url, c.id, reason) })
		}
	case opClosed:
		if s := r.drop(c.id, 0); s != nil {
			r.p.log.Warn("relay closed a sync subscription", "relay", r.url, "sub", c.id, "reason", c.msg)
			r.p.report(r, func(rep Reporter) { rep.SubscriptionClosed(r.url, c.id, c.msg) })
		}
	case opNotice:
		r.p.m.notices.Inc()
		if !r.pe.notices.allow() {
			return // a chatty peer must not flood the manager's inbox
		}
		r.p.log.Debug("notice from relay", "relay", r.url, "notice", c.msg)
		r.p.report(r, func(rep Reporter) { rep.Notice(r.url, c.msg) })
	}
}

// subscribe opens the live half at once (since = now − LiveSlack, limit 0:
// no stored events) and hands the history to a catch-up, so an event
// published while the catch-up runs arrives live either way.
func (r *relay) subscribe(c command) {
	if old := r.drop(c.id, 0); old != nil {
		r.sendClose(c.id) // NIP-01: a REQ with the same id replaces; be explicit
	}
	if len(c.filters) == 0 {
		r.enqueue(command{op: opCatchUpDone, id: c.id})
	}
	now := r.p.clk.Now()
	live := make(nostr.Filters, len(c.filters))
	floor := nostr.Timestamp(now.Add(-r.p.o.LiveSlack).Unix())
	for i, f := range c.filters {
		f.Until, f.Limit, f.LimitZero = nil, 0, true
		if f.Since == nil || *f.Since < floor {
			s := floor
			f.Since = &s
		}
		live[i] = f
	}
	cctx, cancel := context.WithCancel(r.ctx)
	r.smu.Lock()
	r.gen++
	s := &sub{id: c.id, gen: r.gen, filters: c.filters, cancel: cancel}
	r.subs[c.id] = s
	r.smu.Unlock()
	b, err := nostr.ReqEnvelope{SubscriptionID: c.id, Filters: live}.MarshalJSON()
	if err != nil {
		r.drop(c.id, 0)
		reason := "error: cannot encode the subscription: " + err.Error()
		r.p.report(r, func(rep Reporter) { rep.SubscriptionClosed(r.url, c.id, reason) })
		return
	}
	if !r.write(b) {
		return
	}
	r.pe.open(r, c.id, c.filters, now)
	if len(c.filters) == 0 {
		return
	}
	r.wg.Add(1)
	go r.catchUp(cctx, s, c.mode)
}

// drop forgets subscription id (only generation gen, if not 0), stops its
// catch-up and closes its live window.
func (r *relay) drop(id string, gen uint64) *sub {
	r.smu.Lock()
	s := r.subs[id]
	if s == nil || (gen != 0 && s.gen != gen) {
		r.smu.Unlock()
		return nil
	}
	delete(r.subs, id)
	r.smu.Unlock()
	s.cancel()
	r.pe.close(r, id, r.p.clk.Now())
	return s
}

func (r *relay) current(id string, gen uint64) bool {
	r.smu.Lock()
	defer r.smu.Unlock()
	s := r.subs[id]
	return s != nil && (gen == 0 || s.gen == gen)
}

func (r *relay) lookup(id string) []nostr.Filter {
	r.smu.Lock()
	defer r.smu.Unlock()
	if s := r.subs[id]; s != nil {
		return s.filters
	}
	return nil
}

func (r *relay) sendClose(id string) {
	b, _ := nostr.CloseEnvelope(id).MarshalJSON()
	r.write(b)
}

// write sends one frame; a failed write ends the connection.
func (r *relay) write(b []byte) bool {
	ctx, cancel := context.WithCancel(r.ctx)
	t := r.p.clk.AfterFunc(r.p.o.WriteTimeout, cancel)
	err := r.ws.Write(ctx, websocket.MessageText, b)
	t.Stop()
	cancel()
	if err != nil {
		r.shut(fmt.Errorf("write to %s: %w", r.url, err))
		return false
	}
	return true
}

// ping checks the link; three failures in a row close it, which catches
// half-open TCP that would otherwise look connected forever.
func (r *relay) ping() {
	if !r.pinging.CompareAndSwap(false, true) {
		return
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer r.pinging.Store(false)
		ctx, cancel := context.WithCancel(r.ctx)
		t := r.p.clk.AfterFunc(r.p.o.WriteTimeout, cancel)
		err := r.ws.Ping(ctx)
		t.Stop()
		cancel()
		if err == nil {
			r.pingFail.Store(0)
			return
		}
		if r.pingFail.Add(1) >= 3 {
			r.shut(fmt.Errorf("ping %s: %w", r.url, err))
		}
	}()
}
