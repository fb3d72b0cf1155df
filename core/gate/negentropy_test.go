package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/internal/testwait"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy/storage/vector"

	"github.com/grasp-dev/grasp/core/config"
)

// negTransport carries NIP-77 frames for the test client.
type negTransport interface {
	send(b []byte) error
	recv() (nostr.Envelope, error)
}

// goNostrTransport is go-nostr's relay client; NEG frames arrive through
// its custom handler.
type goNostrTransport struct {
	t  testing.TB
	r  *nostr.Relay
	in chan nostr.Envelope
}

func newGoNostrTransport(t *testing.T, url string) *goNostrTransport {
	t.Helper()
	tr := &goNostrTransport{t: t, in: make(chan nostr.Envelope, 16)}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r, err := nostr.RelayConnect(ctx, url, nostr.WithCustomHandler(func(data string) {
		if env := nip77.ParseNegMessage(data); env != nil {
			tr.in <- env
		}
	}))
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	// Cancelling ctx closes the connection; go-nostr's Close races with
	// its own connection goroutine.
	tr.r = r
	return tr
}

func (tr *goNostrTransport) send(b []byte) error { return <-tr.r.Write(b) }
func (tr *goNostrTransport) recv() (nostr.Envelope, error) {
	select {
	case env := <-tr.in:
		return env, nil
	case <-testwait.After(tr.t):
		return nil, fmt.Errorf("no NEG reply within %v", testwait.Limit(tr.t))
	}
}

// rawTransport is a bare websocket.
type rawTransport struct{ c *rawClient }

func (tr rawTransport) send(b []byte) error {
	return tr.c.conn.WriteMessage(websocket.TextMessage, b)
}
func (tr rawTransport) recv() (nostr.Envelope, error) {
	for {
		tr.c.conn.SetReadDeadline(testwait.Deadline(tr.c.t))
		_, b, err := tr.c.conn.ReadMessage()
		if err != nil {
			return nil, err
		}
		if env := nip77.ParseNegMessage(string(b)); env != nil {
			return env, nil
		}
	}
}

// clientSync reconciles local against the relay with go-nostr's engine as
// the client, draining Haves and HaveNots while it runs (the engine blocks
// once 64 of either are unread).
func clientSync(tr negTransport, subid string, filter nostr.Filter, local []*nostr.Event) (haves, haveNots []string, err error) {
	return clientSyncAny(tr, subid, filter, local)
}

// clientSyncAny is clientSync whose NEG-OPEN carries filter as given: a
// nostr.Filter, or a []nostr.Filter as NDK sends.
func clientSyncAny(tr negTransport, subid string, filter any, local []*nostr.Event) (haves, haveNots []string, err error) {
	vec := vector.New()
	for _, evt := range local {
		vec.Insert(evt.CreatedAt, evt.ID)
	}
	vec.Seal()
	neg := negentropy.New(vec, 64*1024)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for id := range neg.Haves {
			haves = append(haves, id)
		}
	}()
	go func() {
		defer wg.Done()
		for id := range neg.HaveNots {
			haveNots = append(haveNots, id)
		}
	}()
	open, err := json.Marshal([]any{"NEG-OPEN", subid, filter, neg.Start()})
	if err != nil {
		return nil, nil, fmt.Errorf("marshal NEG-OPEN: %w", err)
	}
	if err := tr.send(open); err != nil {
		return nil, nil, fmt.Errorf("send NEG-OPEN: %w", err)
	}
	for round := 0; ; round++ {
		if round > 50 {
			return nil, nil, fmt.Errorf("no convergence after 50 rounds")
		}
		env, err := tr.recv()
		if err != nil {
			return nil, nil, err
		}
		switch env := env.(type) {
		case *nip77.ErrorEnvelope:
			return nil, nil, fmt.Errorf("NEG-ERR %s", env.Reason)
		case *nip77.MessageEnvelope:
			if env.SubscriptionID != subid {
				return nil, nil, fmt.Errorf("reply for %q, want %q", env.SubscriptionID, subid)
			}
			out, err := neg.Reconcile(env.Message)
			if err != nil {
				return nil, nil, fmt.Errorf("reconcile: %w", err)
			}
			if out == "" {
				closeMsg, _ := nip77.CloseEnvelope{SubscriptionID: subid}.MarshalJSON()
				if err := tr.send(closeMsg); err != nil {
					return nil, nil, fmt.Errorf("send NEG-CLOSE: %w", err)
				}
				wg.Wait()
				return haves, haveNots, nil
			}
			next, _ := nip77.MessageEnvelope{SubscriptionID: subid, Message: out}.MarshalJSON()
			if err := tr.send(next); err != nil {
				return nil, nil, fmt.Errorf("send NEG-MSG: %w", err)
			}
		default:
			return nil, nil, fmt.Errorf("unexpected %s", env.Label())
		}
	}
}

func ids(evts []*nostr.Event) []string {
	out := make([]string, len(evts))
	for i, e := range evts {
		out[i] = e.ID
	}
	slices.Sort(out)
	return out
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// syncRounds runs n consecutive syncs over one transport; each time the
// client lacks 80 of the relay's events and holds 70 the relay lacks, more
// than the engine's 64-slot channels, and must find exactly those.
func syncRounds(t *testing.T, e *testEnv, tr negTransport, n int) {
	t.Helper()
	relaySet := make([]*nostr.Event, 300)
	for i := range relaySet {
		relaySet[i] = fakeEvent(1_700_000_000 + int64(rand.IntN(5000)))
		if err := e.store.SaveEvent(context.Background(), relaySet[i]); err != nil {
			t.Fatalf("seed store: %v", err)
		}
	}
	failures := 0
	for i := 0; i < n; i++ {
		perm := rand.Perm(len(relaySet))
		var missing, local []*nostr.Event
		for j, k := range perm {
			if j < 80 {
				missing = append(missing, relaySet[k])
			} else {
				local = append(local, relaySet[k])
			}
		}
		var extra []*nostr.Event
		for j := 0; j < 70; j++ {
			extra = append(extra, fakeEvent(1_700_000_000+int64(rand.IntN(5000))))
		}
		local = append(local, extra...)
		haves, haveNots, err := clientSync(tr, "sync", nostr.Filter{Kinds: []int{1}}, local)
		switch {
		case err != nil:
			t.Errorf("sync %d: %v", i, err)
			failures++
		case !sameSet(haveNots, ids(missing)):
			t.Errorf("sync %d: client needs %d ids, want the %d it lacks", i, len(haveNots), len(missing))
			failures++
		case !sameSet(haves, ids(extra)):
			t.Errorf("sync %d: client has %d ids to give, want %d", i, len(haves), len(extra))
			failures++
		}
		if failures > 3 {
			t.Fatalf("stopping after %d failed syncs", failures)
		}
	}
}

func TestR2_HundredSyncsGoNostrClient(t *testing.T) {
	e := newEnv(t, config.Limits{})
	syncRounds(t, e, newGoNostrTransport(t, e.url), 100)
	if got := e.counter("grasp_gate_negentropy_errors_total"); got != 0 {
		t.Fatalf("%v NEG-ERR replies, want 0", got)
	}
	if got := e.counter("grasp_gate_negentropy_sessions_total"); got != 100 {
		t.Fatalf("%v sessions opened, want 100", got)
	}
}

// Issue 15 part 1: the same syncs with the sessions served from the
// negentropy index instead of a query.
func TestR2_HundredSyncsFromIndex(t *testing.T) {
	e := newEnvIndexed(t, config.Limits{})
	syncRounds(t, e, newGoNostrTransport(t, e.url), 50)
	raw := newEnvIndexed(t, config.Limits{})
	syncRounds(t, raw, rawTransport{raw.dial()}, 50)
	for _, env := range []*testEnv{e, raw} {
		if got := env.counter("grasp_gate_negentropy_errors_total"); got != 0 {
			t.Fatalf("%v NEG-ERR replies, want 0", got)
		}
		if got := env.counter("grasp_gate_negentropy_sessions_total"); got != 50 {
			t.Fatalf("%v sessions opened, want 50", got)
		}
	}
}

func TestR2_HundredSyncsRawClient(t *testing.T) {
	e := newEnv(t, config.Limits{})
	c := e.dial()
	syncRounds(t, e, rawTransport{c}, 100)
	c.reqWorks() // the last NEG-CLOSE has been handled once a later message is answered
	if got := e.counter("grasp_gate_negentropy_sessions"); got != 0 {
		t.Fatalf("%v sessions still open after NEG-CLOSE, want 0", got)
	}
}

// TestR2_SyncThenTransferConverges reconciles with the go-nostr engine over
// go-nostr's client, then uploads what the relay lacks and downloads what the
// client lacks, one step after the other, and checks both sides hold the
// union. (nip77.NegentropySync(Both) does the two transfers concurrently on
// one connection, which trips khatru's listener race under -race.)
func TestR2_SyncThenTransferConverges(t *testing.T) {
	e := newEnv(t, config.Limits{})
	sk := nostr.GeneratePrivateKey()
	var local []*nostr.Event
	byID := map[string]*nostr.Event{}
	var want []string
	for i := 0; i < 80; i++ {
		evt := signedEvent(t, sk, 1, fmt.Sprintf("relay %d", i), 1_700_000_000+int64(i))
		e.store.SaveEvent(context.Background(), &evt)
		want = append(want, evt.ID)
	}
	for i := 0; i < 70; i++ {
		evt := signedEvent(t, sk, 1, fmt.Sprintf("local %d", i), 1_700_000_000+int64(i))
		local = append(local, &evt)
		byID[evt.ID] = &evt
		want = append(want, evt.ID)
	}
	tr := newGoNostrTransport(t, e.url)
	haves, haveNots, err := clientSync(tr, "go-nostr-tmp", nostr.Filter{Kinds: []int{1}}, local)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Limit(t))
	defer cancel()
	for _, id := range haves {
		if err := tr.r.Publish(ctx, *byID[id]); err != nil {
			t.Fatalf("publish %s: %v", id, err)
		}
	}
	got, err := tr.r.QuerySync(ctx, nostr.Filter{IDs: haveNots})
	if err != nil {
		t.Fatalf("fetch %d missing events: %v", len(haveNots), err)
	}
	for _, evt := range got {
		if !evt.CheckID() {
			t.Fatalf("fetched event %s has a wrong id", evt.ID)
		}
		local = append(local, evt)
	}
	if !sameSet(ids(local), want) {
		t.Errorf("client holds %d events, want the union of %d", len(local), len(want))
	}
	ch, _ := e.store.QueryEvents(context.Background(), nostr.Filter{Kinds: []int{1}})
	var relayIDs []string
	for evt := range ch {
		relayIDs = append(relayIDs, evt.ID)
	}
	if !sameSet(relayIDs, want) {
		t.Errorf("relay holds %d events, want the union of %d", len(relayIDs), len(want))
	}
}

func TestR2_MalformedNegMessagesGetNegErr(t *testing.T) {
	e := newEnv(t, config.Limits{})
	for i := 0; i < 40; i++ {
		e.store.SaveEvent(context.Background(), fakeEvent(1_700_000_000+int64(i)))
	}
	c := e.dial()
	cases := []struct {
		name   string
		frame  string
		prefix string
	}{
		{"non-hex message", `["NEG-OPEN","a",{"kinds":[1]},"zz"]`, "invalid:"},
		{"odd-length hex", `["NEG-OPEN","a",{"kinds":[1]},"610"]`, "invalid:"},
		{"empty message", `["NEG-OPEN","a",{"kinds":[1]},""]`, "invalid:"},
		{"message not a string", `["NEG-OPEN","a",{"kinds":[1]},97]`, "invalid:"},
		{"bound id longer than 32 bytes", `["NEG-OPEN","a",{},"61002100"]`, "invalid:"},
		{"truncated bound", `["NEG-OPEN","a",{},"6100"]`, "invalid:"},
		{"mode 3", `["NEG-OPEN","a",{},"61000003"]`, "invalid:"},
		{"id list longer than message", `["NEG-OPEN","a",{},"6100000205"]`, "invalid:"},
		{"truncated fingerprint", `["NEG-OPEN","a",{},"610000010102"]`, "invalid:"},
		{"overlong varint", `["NEG-OPEN","a",{},"61ffffffffffffffffffff00"]`, "invalid:"},
		{"negative bound length varint", `["NEG-OPEN","a",{},"6100ffffffffffffffff7f00"]`, "invalid:"},
		{"missing message", `["NEG-OPEN","a",{}]`, "invalid:"},
		{"filter not an object", `["NEG-OPEN","a","x","6100000200"]`, "invalid:"},
		// Several filters in an array are a union now (issue 10 part 4,
		// TestG10_NegOpenWithSeveralFiltersReconcilesTheUnion); a malformed
		// array still is not.
		{"empty filter array", `["NEG-OPEN","a",[],"6100000200"]`, "invalid:"},
		{"non-object in a filter array", `["NEG-OPEN","a",[{},7],"6100000200"]`, "invalid:"},
		{"bad field in a filter array", `["NEG-OPEN","a",[{},{"kinds":"x"}],"6100000200"]`, "invalid:"},
		{"bad filter field", `["NEG-OPEN","a",{"kinds":"x"},"6100000200"]`, "invalid:"},
		{"NEG-MSG to unknown session", `["NEG-MSG","nosuch","6100000200"]`, "invalid:"},
		{"NEG-MSG without message", `["NEG-MSG","nosuch"]`, "invalid:"},
		{"subid too long", `["NEG-OPEN","` + strings.Repeat("x", 65) + `",{},"6100000200"]`, "invalid:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			c.send(tc.frame)
			v := c.read()
			if len(v) != 3 || v[0] != "NEG-ERR" {
				t.Fatalf("got %v, want NEG-ERR", v)
			}
			if r, _ := v[2].(string); !strings.HasPrefix(r, tc.prefix) {
				t.Fatalf("reason %q, want prefix %q", r, tc.prefix)
			}
			c.reqWorks()
		})
	}
	c.t = t
	for _, frame := range []string{`["NEG-OPEN"]`, `["NEG-OPEN",7,{},"61"]`, `["NEG-MSG",""]`} {
		c.send(frame)
		if v := c.read(); v[0] != "NOTICE" || !strings.HasPrefix(v[1].(string), "invalid:") {
			t.Fatalf("%s: got %v, want NOTICE invalid:", frame, v)
		}
	}
	c.reqWorks()
}

// A message inside a live session that breaks the protocol ends the session
// (NIP-77: NEG-ERR closes it) and the next NEG-MSG is for an unknown id.
func TestR2_BadMessageMidSessionClosesIt(t *testing.T) {
	e := newEnv(t, config.Limits{})
	for i := 0; i < 40; i++ {
		e.store.SaveEvent(context.Background(), fakeEvent(1_700_000_000+int64(i)))
	}
	c := e.dial()
	c.send(`["NEG-OPEN","s",{"kinds":[1]},"6100000200"]`)
	if v := c.expect("NEG-MSG"); v[1] != "s" {
		t.Fatalf("got %v", v)
	}
	c.send(`["NEG-MSG","s","61000003"]`)
	if v := c.read(); v[0] != "NEG-ERR" {
		t.Fatalf("got %v, want NEG-ERR", v)
	}
	c.send(`["NEG-MSG","s","6100000200"]`)
	if v := c.read(); v[0] != "NEG-ERR" || !strings.Contains(v[2].(string), "no open negentropy session") {
		t.Fatalf("got %v, want NEG-ERR for an unknown session", v)
	}
	c.reqWorks()
}

func TestR2_ProtocolVersionMismatchAnswersOurVersion(t *testing.T) {
	e := newEnv(t, config.Limits{})
	c := e.dial()
	c.send(`["NEG-OPEN","v",{},"62aabbcc"]`)
	v := c.read()
	if len(v) != 3 || v[0] != "NEG-MSG" || v[2] != "61" {
		t.Fatalf("got %v, want [NEG-MSG v 61]", v)
	}
}

func TestR2_FilterAsArrayAccepted(t *testing.T) {
	e := newEnv(t, config.Limits{})
	evt := fakeEvent(1_700_000_000)
	e.store.SaveEvent(context.Background(), evt)
	c := e.dial()
	// An empty client set: the relay answers with its id list.
	c.send(`["NEG-OPEN","ndk",[{"kinds":[1]}],"6100000200"]`)
	v := c.read()
	if v[0] != "NEG-MSG" || !strings.Contains(v[2].(string), evt.ID) {
		t.Fatalf("got %v, want a NEG-MSG listing %s", v, evt.ID)
	}
}

func TestR2_ReopenReplacesSession(t *testing.T) {
	e := newEnv(t, config.Limits{NegentropySessionsPerConn: 1})
	for i := 0; i < 40; i++ {
		e.store.SaveEvent(context.Background(), fakeEvent(1_700_000_000+int64(i)))
	}
	c := e.dial()
	for i := 0; i < 3; i++ {
		c.send(`["NEG-OPEN","same",{"kinds":[1]},"6100000200"]`)
		if v := c.read(); v[0] != "NEG-MSG" {
			t.Fatalf("open %d: got %v, want NEG-MSG (a reopen must replace, not count)", i, v)
		}
	}
	if got := e.counter("grasp_gate_negentropy_sessions"); got != 1 {
		t.Fatalf("%v sessions open, want 1", got)
	}
	c.send(`["NEG-OPEN","other",{"kinds":[1]},"6100000200"]`)
	if v := c.read(); v[0] != "NEG-ERR" || !strings.HasPrefix(v[2].(string), "blocked:") {
		t.Fatalf("got %v, want NEG-ERR blocked: over the per-connection session limit", v)
	}
	c.send(`["NEG-CLOSE","same"]`)
	c.send(`["NEG-OPEN","other",{"kinds":[1]},"6100000200"]`)
	if v := c.read(); v[0] != "NEG-MSG" {
		t.Fatalf("after NEG-CLOSE: got %v, want NEG-MSG", v)
	}
}

func TestR2_TooManyEventsBlocked(t *testing.T) {
	t.Run("query", func(t *testing.T) { testTooManyEventsBlocked(t, newEnv) })
	t.Run("index", func(t *testing.T) { testTooManyEventsBlocked(t, newEnvIndexed) })
}

func testTooManyEventsBlocked(t *testing.T, newEnv func(*testing.T, config.Limits) *testEnv) {
	e := newEnv(t, config.Limits{NegentropyMaxEvents: 10})
	for i := 0; i < 11; i++ {
		e.store.SaveEvent(context.Background(), fakeEvent(1_700_000_000+int64(i)))
	}
	c := e.dial()
	c.send(`["NEG-OPEN","big",{"kinds":[1]},"6100000200"]`)
	v := c.read()
	if v[0] != "NEG-ERR" || v[1] != "big" || !strings.HasPrefix(v[2].(string), "blocked:") {
		t.Fatalf("got %v, want NEG-ERR blocked:", v)
	}
	c.send(`["NEG-OPEN","small",{"kinds":[1],"limit":5},"6100000200"]`)
	if v := c.read(); v[0] != "NEG-MSG" {
		t.Fatalf("a filter under the cap: got %v, want NEG-MSG", v)
	}
	c.reqWorks()
}

func TestR2_IdleSessionClosedByClock(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	e := newEnvWith(t, Options{Limits: config.Limits{NegentropyIdleTimeout: config.Duration(10 * time.Second), PingInterval: config.Duration(time.Hour), ClientTimeout: config.Duration(2 * time.Hour)}}, fake)
	for i := 0; i < 40; i++ {
		e.store.SaveEvent(context.Background(), fakeEvent(1_700_000_000+int64(i)))
	}
	c := e.dial()
	c.send(`["NEG-OPEN","idle",{"kinds":[1]},"6100000200"]`)
	if v := c.read(); v[0] != "NEG-MSG" {
		t.Fatalf("got %v, want NEG-MSG", v)
	}
	// The keepalive ticker and the session's idle timer.
	if !fake.BlockUntil(2, testwait.Limit(t)) {
		t.Fatalf("idle timer never armed (%d pending)", fake.Pending())
	}
	fake.Advance(9 * time.Second)
	c.send(`["NEG-OPEN","probe",{"kinds":[1]},"62"]`) // still open: a round trip proves no NEG-ERR came first
	if v := c.read(); v[0] != "NEG-MSG" || v[1] != "probe" {
		t.Fatalf("before the idle limit: got %v", v)
	}
	fake.Advance(2 * time.Second)
	v := c.read()
	if v[0] != "NEG-ERR" || v[1] != "idle" || !strings.HasPrefix(v[2].(string), "closed:") {
		t.Fatalf("got %v, want NEG-ERR closed:", v)
	}
	if got := e.counter("grasp_gate_negentropy_sessions"); got != 0 {
		t.Fatalf("%v sessions open after the idle close, want 0", got)
	}
	c.reqWorks()
}

// A NEG-MSG inside the idle window postpones the close.
func TestR2_ActivityPostponesIdleClose(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	e := newEnvWith(t, Options{Limits: config.Limits{NegentropyIdleTimeout: config.Duration(10 * time.Second), PingInterval: config.Duration(time.Hour), ClientTimeout: config.Duration(2 * time.Hour)}}, fake)
	// 2000 events with 5 missing on the client take more than one round.
	local := make([]*nostr.Event, 0, 2000)
	for i := 0; i < 2000; i++ {
		evt := fakeEvent(1_700_000_000 + int64(i))
		e.store.SaveEvent(context.Background(), evt)
		if i%400 != 0 {
			local = append(local, evt)
		}
	}
	vec := vector.New()
	for _, evt := range local {
		vec.Insert(evt.CreatedAt, evt.ID)
	}
	vec.Seal()
	neg := negentropy.New(vec, 64*1024)
	go func() {
		for range neg.HaveNots {
		}
	}()
	go func() {
		for range neg.Haves {
		}
	}()
	c := e.dial()
	open, _ := nip77.OpenEnvelope{SubscriptionID: "busy", Filter: nostr.Filter{Kinds: []int{1}}, Message: neg.Start()}.MarshalJSON()
	c.send(string(open))
	v := c.expect("NEG-MSG")
	if !fake.BlockUntil(2, testwait.Limit(t)) {
		t.Fatalf("idle timer never armed")
	}
	fake.Advance(8 * time.Second)
	out, err := neg.Reconcile(v[2].(string))
	if err != nil || out == "" {
		t.Fatalf("reconcile: %q %v (want a second round)", out, err)
	}
	next, _ := nip77.MessageEnvelope{SubscriptionID: "busy", Message: out}.MarshalJSON()
	c.send(string(next))
	c.expect("NEG-MSG")
	// 16 s after open, 8 s after the last message: the timer fires and,
	// finding the session used, re-arms itself instead of closing it.
	fake.Advance(8 * time.Second)
	if !fake.BlockUntil(2, testwait.Limit(t)) {
		t.Fatalf("idle timer did not re-arm: the session was closed early")
	}
	if got := e.counter("grasp_gate_negentropy_sessions"); got != 1 {
		t.Fatalf("%v sessions open, want 1", got)
	}
	fake.Advance(3 * time.Second) // now 11 s idle
	if v := c.expect("NEG-ERR"); v[1] != "busy" || !strings.HasPrefix(v[2].(string), "closed:") {
		t.Fatalf("got %v, want NEG-ERR closed: for busy", v)
	}
}

// A NEG-OPEN filter gets the same filter checks as a REQ (one owner).
func TestR2_NegOpenFilterChecked(t *testing.T) {
	e := newEnv(t, config.Limits{})
	c := e.dial()
	c.send(`["NEG-OPEN","x",{"search":"x"},"6100000200"]`)
	if v := c.read(); v[0] != "NEG-ERR" || !strings.HasPrefix(v[2].(string), "blocked: search") {
		t.Fatalf("got %v, want NEG-ERR blocked: search", v)
	}
	c.send(`["NEG-OPEN","x",{"ids":["abcd"]},"6100000200"]`)
	if v := c.read(); v[0] != "NEG-ERR" || !strings.HasPrefix(v[2].(string), "invalid:") {
		t.Fatalf("got %v, want NEG-ERR invalid:", v)
	}
	c.send(`["NEG-OPEN","y",{"kinds":[1]},"6100000200"]`)
	if v := c.read(); v[0] != "NEG-MSG" {
		t.Fatalf("got %v, want NEG-MSG", v)
	}
}

// Sessions on many connections are bounded relay-wide, since each holds an
// id vector; a slot comes back when a session ends, on any connection.
func TestR2_RelayWideSessionLimit(t *testing.T) {
	e := newEnv(t, config.Limits{NegentropyMaxSessions: 2, NegentropySessionsPerConn: 4})
	for i := 0; i < 40; i++ {
		e.store.SaveEvent(context.Background(), fakeEvent(1_700_000_000+int64(i)))
	}
	a, b, c := e.dial(), e.dial(), e.dial()
	a.send(`["NEG-OPEN","s",{"kinds":[1]},"6100000200"]`)
	if v := a.read(); v[0] != "NEG-MSG" {
		t.Fatalf("first session: %v", v)
	}
	b.send(`["NEG-OPEN","s",{"kinds":[1]},"6100000200"]`)
	if v := b.read(); v[0] != "NEG-MSG" {
		t.Fatalf("second session: %v", v)
	}
	c.send(`["NEG-OPEN","s",{"kinds":[1]},"6100000200"]`)
	if v := c.read(); v[0] != "NEG-ERR" || !strings.HasPrefix(v[2].(string), "blocked:") {
		t.Fatalf("third session: got %v, want NEG-ERR blocked: over the relay-wide limit", v)
	}
	a.send(`["NEG-CLOSE","s"]`)
	// the freed slot is usable from another connection (NEG-CLOSE has no
	// reply, so retry until the close has been processed)
	testwait.For(t, "the freed slot opens a session", func() bool {
		c.send(`["NEG-OPEN","s",{"kinds":[1]},"6100000200"]`)
		return c.read()[0] == "NEG-MSG"
	})
}
