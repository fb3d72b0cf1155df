package policy

import (
	"context"
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
)

type countingAcceptor struct {
	calls int
	v     Verdict
}

func (c *countingAcceptor) Accept(context.Context, *nostr.Event, Meta) Verdict {
	c.calls++
	return c.v
}

func TestG01R3_PluginChainRunsAfterGRASPRules(t *testing.T) {
	shadow := &countingAcceptor{v: Verdict{Action: ShadowReject}}
	e := newEnv(t, func(o *Options) { o.Plugins = Chain{shadow} })
	want(t, e.decide(e.ann(pkA, "r", true)), Shadow, "")
	if shadow.calls != 1 {
		t.Fatalf("plugin called %d times", shadow.calls)
	}
	// Events the GRASP rules refuse never reach the plugins.
	want(t, e.decide(e.ann(pkA, "r2", false)), Rejected, "invalid:")
	if shadow.calls != 1 {
		t.Fatalf("plugin saw a rejected event")
	}

	rej := &countingAcceptor{v: Verdict{Action: Reject, Msg: "no spam please"}}
	e = newEnv(t, func(o *Options) { o.Plugins = Chain{&countingAcceptor{v: Verdict{Action: Accept}}, rej} })
	want(t, e.decide(e.ann(pkA, "r", true)), Rejected, "blocked: no spam please")
	rej.v.Msg = "rate-limited: slow down"
	want(t, e.decide(e.ann(pkA, "r", true)), Rejected, "rate-limited: slow down")
}

func TestPreChainRunsFirst(t *testing.T) {
	pre := &countingAcceptor{v: Verdict{Action: Reject, Msg: "invalid: too many tags"}}
	e := newEnv(t, func(o *Options) { o.Pre = Chain{pre} })
	want(t, e.decide(e.event(nip34.KindDeletion, pkA)), Rejected, "invalid: too many tags")
}

func TestG01N3_AcceptanceCriteriaFromConfig(t *testing.T) {
	svc, _ := nip34.ParseService("https://git.example.org")
	s := AcceptanceCriteria(Options{Service: svc, MaxReposPerPubkey: 5})
	for _, part := range []string{"https://git.example.org/<npub>/<identifier>.git", "wss://git.example.org", "At most 5 repositories"} {
		if !strings.Contains(s, part) {
			t.Errorf("criteria %q lacks %q", s, part)
		}
	}
	if strings.Contains(s, "whitelist") {
		t.Errorf("criteria mention a whitelist that is not configured: %q", s)
	}
	if strings.Contains(s, "GRASP-06") {
		t.Errorf("criteria mention GRASP-06 while it is off: %q", s)
	}
	if s := AcceptanceCriteria(Options{Service: svc, GRASP06: true}); !strings.Contains(s, "https://git.example.org/prs/<signer npub>/<identifier>.git") {
		t.Errorf("criteria with GRASP-06 on do not name the /prs/ endpoint: %q", s)
	}
}

func TestG01N4_CurationOnlyWhenCurated(t *testing.T) {
	svc, _ := nip34.ParseService("https://git.example.org")
	if c := Curation(Options{Service: svc, MaxReposPerPubkey: 3}); c != "" {
		t.Fatalf("default curation %q, want empty", c)
	}
	if c := Curation(Options{Service: svc, RepoWhitelist: []string{"x", " "}}); !strings.Contains(c, "Only 1 whitelisted") {
		t.Fatalf("whitelist curation %q", c)
	}
	c := Curation(Options{Service: svc, EventBlacklist: []string{pkX}, Plugins: Chain{&countingAcceptor{}}, PluginNames: []string{"wot"}})
	if !strings.Contains(c, "banned authors") || !strings.Contains(c, "wot") {
		t.Fatalf("curation %q", c)
	}
}

func TestDecisionMetricsAndErrors(t *testing.T) {
	reg := prometheus.NewRegistry()
	svc, _ := nip34.ParseService(publicURL)
	e := newEnv(t, nil)
	r, err := New(Options{Service: svc, Events: failingStore{}}, env.Env{Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	want(t, r.Decide(context.Background(), e.ann(pkA, "r", true), Meta{}), Rejected, "error: could not")
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range mfs {
		if mf.GetName() == "grasp_policy_decisions_total" {
			for _, m := range mf.GetMetric() {
				if m.GetCounter().GetValue() == 1 {
					found = true
				}
			}
		}
	}
	if !found {
		t.Fatal("decision counter not incremented")
	}
	if _, err := New(Options{Events: failingStore{}}, env.Env{}); err == nil {
		t.Fatal("New accepted a zero Service")
	}
	if _, err := New(Options{Service: svc}, env.Env{}); err == nil {
		t.Fatal("New accepted nil Events")
	}
}

type failingStore struct{}

func (failingStore) QueryEvents(context.Context, nostr.Filter) (chan *nostr.Event, error) {
	return nil, errBoom
}
