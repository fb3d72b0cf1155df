package gate

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/internal/testlog"
)

// panickyBackend panics inside Query and Count while armed, as a bug in the
// store or the relay's hooks would.
type panickyBackend struct {
	*testBackend
	armed atomic.Bool
}

func (p *panickyBackend) Query(ctx context.Context, f nostr.Filter) (chan *nostr.Event, error) {
	if p.armed.Load() {
		panic("injected query panic")
	}
	return p.testBackend.Query(ctx, f)
}

func (p *panickyBackend) Count(ctx context.Context, f nostr.Filter) (int64, error) {
	if p.armed.Load() {
		panic("injected count panic")
	}
	return p.testBackend.Count(ctx, f)
}

// panickyPrivate panics in Named while armed: a bug in the reader rule,
// which the gate asks on the reader goroutine itself.
type panickyPrivate struct{ armed atomic.Bool }

func (p *panickyPrivate) Restricting() bool                 { return false }
func (p *panickyPrivate) Withholding() bool                 { return false }
func (p *panickyPrivate) Withheld() (ids, authors []string) { return nil, nil }
func (p *panickyPrivate) Readers(context.Context, *nostr.Event) func(string) bool {
	return nil
}
func (p *panickyPrivate) Named(context.Context, nostr.Filter) func(string) bool {
	if p.armed.Load() {
		panic("injected reader-rule panic")
	}
	return nil
}
func (p *panickyPrivate) MayWrite(context.Context, string, *nostr.Event) bool { return true }

// Audit F18c (issue 11 part 6): a panic while serving any client message
// (EVENT, REQ, COUNT, NEG-OPEN) is logged with its stack, answered with
// "error:" in the verb's own answer, and the connection and the process go
// on; the same messages without the injected panic are served.
func TestAbuse_F18c_PanicInAMessageHandlerIsAnsweredAndSurvived(t *testing.T) {
	logs := &testlog.Buffer{}
	st := newLockedStore()
	tb := &testBackend{store: st}
	pb := &panickyBackend{testBackend: tb}
	reg := prometheus.NewRegistry()
	pp := &panickyPrivate{}
	g := New(Options{Backend: pb, Private: pp}, env.Env{Metrics: reg, Log: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info})})
	tb.gate = g
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	e := &testEnv{t: t, backend: tb, store: st, gate: g, reg: reg, srv: srv, url: "ws" + strings.TrimPrefix(srv.URL, "http")}
	c := e.dial()
	sk := nostr.GeneratePrivateKey()

	// EVENT: the backend's Accept (the relay's pipeline) panics.
	boom := signedEvent(t, sk, 1, "boom", 1_700_000_000)
	tb.mu.Lock()
	tb.refuse = func(evt *nostr.Event, _ policy.Meta) string {
		if evt.Content == "boom" {
			panic("injected ingest panic")
		}
		return ""
	}
	tb.mu.Unlock()
	c.sendJSON("EVENT", boom)
	ok := c.expect("OK")
	if ok[1] != boom.ID || ok[2] != false || !strings.HasPrefix(ok[3].(string), "error:") {
		t.Fatalf("panicking EVENT answered %v, want OK false error:", ok)
	}
	// Control: the next EVENT on the same connection is stored.
	fine := signedEvent(t, sk, 1, "fine", 1_700_000_001)
	c.sendJSON("EVENT", fine)
	if ok := c.expect("OK"); ok[1] != fine.ID || ok[2] != true {
		t.Fatalf("EVENT after the panic answered %v, want OK true", ok)
	}

	pb.armed.Store(true)
	c.sendJSON("REQ", "r1", map[string]any{"kinds": []int{1}})
	if v := c.expect("CLOSED"); v[1] != "r1" || !strings.HasPrefix(v[2].(string), "error:") {
		t.Fatalf("panicking REQ answered %v, want CLOSED error:", v)
	}
	c.sendJSON("COUNT", "c1", map[string]any{"kinds": []int{1}})
	if v := c.expect("CLOSED"); v[1] != "c1" || !strings.HasPrefix(v[2].(string), "error:") {
		t.Fatalf("panicking COUNT answered %v, want CLOSED error:", v)
	}
	// NEG-OPEN runs on the reader goroutine itself.
	c.sendJSON("NEG-OPEN", "n1", map[string]any{"kinds": []int{1}}, "6100000200")
	if v := c.expect("NEG-ERR"); v[1] != "n1" || !strings.HasPrefix(v[2].(string), "error:") {
		t.Fatalf("panicking NEG-OPEN answered %v, want NEG-ERR error:", v)
	}
	pb.armed.Store(false)
	// A panic on the reader goroutine outside any verb's own answer: a
	// NOTICE, and the reader goes on.
	pp.armed.Store(true)
	c.sendJSON("REQ", "r3", map[string]any{"kinds": []int{1}})
	if v := c.expect("NOTICE"); !strings.HasPrefix(v[1].(string), "error:") {
		t.Fatalf("panicking reader answered %v, want NOTICE error:", v)
	}
	pp.armed.Store(false)

	// Control: the same connection still serves, and finds the stored event.
	c.sendJSON("REQ", "r2", map[string]any{"ids": []string{fine.ID}})
	if v := c.expect("EVENT"); v[1] != "r2" {
		t.Fatalf("REQ after the panics answered %v", v)
	}
	c.expect("EOSE")
	c.sendJSON("COUNT", "c2", map[string]any{"kinds": []int{1}})
	if v := c.expect("COUNT"); v[1] != "c2" {
		t.Fatalf("COUNT after the panics answered %v", v)
	}
	if n := e.counter("grasp_gate_panics_total"); n != 5 {
		t.Errorf("grasp_gate_panics_total = %v, want 5", n)
	}
	out := logs.String()
	for _, want := range []string{"injected ingest panic", "injected query panic", "injected count panic", "injected reader-rule panic", "recover_test.go"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q (panic value and stack):\n%s", want, out)
		}
	}
}
