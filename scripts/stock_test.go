package scripts_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/core/relaysync"
	"github.com/grasp-dev/grasp/core/throttle"
	"github.com/grasp-dev/grasp/plugins"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

const (
	alice = "aaaa000000000000000000000000000000000000000000000000000000000001"
	bob   = "bbbb000000000000000000000000000000000000000000000000000000000002"
)

func set(t *testing.T, opts plugins.Options) *plugins.Set {
	t.Helper()
	opts.Dir = "."
	opts.PoolSize = 1
	if opts.Clock == nil {
		// A clock that never moves: no wall-clock deadline fires on a loaded machine.
		opts.Clock = clock.NewFake(t0)
	}
	s, err := plugins.NewSet(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ev(pubkey string, kind int, content string, tags ...nostr.Tag) *nostr.Event {
	return &nostr.Event{ID: strings.Repeat("e", 64), PubKey: pubkey, Kind: kind, Content: content, Tags: tags, CreatedAt: nostr.Timestamp(t0.Unix())}
}

func meta(src policy.Source, remote string) policy.Meta {
	return policy.Meta{Source: src, Remote: remote, ReceivedAt: t0}
}

func TestPubkeyLists(t *testing.T) {
	s := set(t, plugins.Options{Accept: []plugins.Spec{{Name: "pk", File: "pubkey_lists.js", Config: map[string]any{
		"allow": []any{alice, bob}, "deny": []any{bob}, "allow_sources": []any{"sync"},
	}}}})
	carol := strings.Repeat("c", 64)
	cases := []struct {
		pk   string
		src  policy.Source
		want string
	}{
		{alice, policy.SourceClient, ""},
		{bob, policy.SourceClient, "blocked: pubkey is banned from this server"},
		{bob, policy.SourceSync, "blocked: pubkey is banned from this server"},
		{carol, policy.SourceClient, "restricted: this server only accepts events from listed pubkeys"},
		{carol, policy.SourceSync, ""},
	}
	for _, c := range cases {
		v := s.Accept(context.Background(), ev(c.pk, 1, ""), meta(c.src, "198.51.100.1"))
		if v.Msg != c.want {
			t.Errorf("%s from %s: got %q, want %q", c.pk[:4], c.src, v.Msg, c.want)
		}
	}
}

func TestRateLimitPerPubkeyAndIP(t *testing.T) {
	clk := clock.NewFake(t0)
	s := set(t, plugins.Options{Clock: clk, Accept: []plugins.Spec{{Name: "rl", File: "rate_limit.js", Config: map[string]any{
		"pubkey_per_minute": 2, "pubkey_burst": 2, "ip_per_minute": 3, "ip_burst": 3,
	}}}})
	accept := func(pk, ip string, src policy.Source) string {
		return s.Accept(context.Background(), ev(pk, 1, ""), meta(src, ip)).Msg
	}
	if accept(alice, "10.0.0.1", policy.SourceClient) != "" || accept(alice, "10.0.0.2", policy.SourceClient) != "" {
		t.Fatal("burst not allowed")
	}
	if m := accept(alice, "10.0.0.3", policy.SourceClient); !strings.Contains(m, "pubkey") || !strings.HasPrefix(m, "rate-limited:") {
		t.Fatalf("third event by one pubkey: %q", m)
	}
	// Per IP: bob from one address, after alice used it once.
	if a, b := accept(bob, "10.0.0.1", policy.SourceClient), accept(bob, "10.0.0.1", policy.SourceClient); a != "" || b != "" {
		t.Fatalf("ip burst not allowed: %q %q", a, b)
	}
	if m := accept(strings.Repeat("c", 64), "10.0.0.1", policy.SourceClient); !strings.Contains(m, "address") {
		t.Fatalf("fourth event from one IP: %q", m)
	}
	if accept(alice, "10.0.0.9", policy.SourceSync) != "" {
		t.Fatal("sync events are limited by default")
	}
	clk.Advance(time.Minute)
	if m := accept(alice, "10.0.0.4", policy.SourceClient); m != "" {
		t.Fatalf("bucket did not refill: %q", m)
	}
}

func TestSpamWords(t *testing.T) {
	s := set(t, plugins.Options{Accept: []plugins.Spec{
		{Name: "spam", File: "spam_words.js", Config: map[string]any{"words": []any{"Casino", "free btc"}, "kinds": []any{1, 1621}}},
		{Name: "shadow", File: "spam_words.js", Config: map[string]any{"words": []any{"airdrop"}, "shadow": true}},
	}})
	cases := []struct {
		e      *nostr.Event
		action policy.Action
	}{
		{ev(alice, 1, "Visit our CASINO now"), policy.Reject},
		{ev(alice, 1621, "issue", nostr.Tag{"subject", "get FREE BTC"}), policy.Reject},
		{ev(alice, 1, "a patch review"), policy.Accept},
		{ev(alice, 30617, "casino repo"), policy.Accept}, // kind not filtered by the first instance
		{ev(alice, 30617, "claim your airdrop"), policy.ShadowReject},
	}
	for i, c := range cases {
		v := s.Accept(context.Background(), c.e, meta(policy.SourceClient, ""))
		if v.Action != c.action {
			t.Errorf("case %d: got %+v, want %v", i, v, c.action)
		}
	}
}

type countStore struct {
	mu    sync.Mutex
	repos map[string][]string // pubkey -> d tags
}

func (c *countStore) Count(_ context.Context, f nostr.Filter) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ds := c.repos[f.Authors[0]]
	if want, ok := f.Tags["d"]; ok {
		for _, d := range ds {
			if d == want[0] {
				return 1, nil
			}
		}
		return 0, nil
	}
	return int64(len(ds)), nil
}

func TestRepoQuota(t *testing.T) {
	st := &countStore{repos: map[string][]string{alice: {"a", "b"}}}
	s := set(t, plugins.Options{Store: st, Accept: []plugins.Spec{{Name: "quota", File: "repo_quota.js", Config: map[string]any{"max_repos": 2}}}})
	ann := func(pk, d string) *nostr.Event { return ev(pk, 30617, "", nostr.Tag{"d", d}) }
	if v := s.Accept(context.Background(), ann(alice, "c"), meta(policy.SourceClient, "")); v.Msg != "restricted: repository quota reached (2 per pubkey)" {
		t.Fatalf("third repo: %+v", v)
	}
	if v := s.Accept(context.Background(), ann(alice, "a"), meta(policy.SourceClient, "")); v.Action != policy.Accept {
		t.Fatalf("updating an existing repo: %+v", v)
	}
	if v := s.Accept(context.Background(), ann(bob, "x"), meta(policy.SourceClient, "")); v.Action != policy.Accept {
		t.Fatalf("first repo of another pubkey: %+v", v)
	}
	if v := s.Accept(context.Background(), ev(alice, 1617, ""), meta(policy.SourceClient, "")); v.Action != policy.Accept {
		t.Fatalf("non-announcement: %+v", v)
	}
}

func TestPreferHealthy(t *testing.T) {
	s := set(t, plugins.Options{RelaySelection: []plugins.Spec{{Name: "ph", File: "prefer_healthy.js", Config: map[string]any{"max_failures": 3, "max_relays": 2}}}})
	c := func(u string, ok bool, fails int, lat int64) relaysync.Candidate {
		return relaysync.Candidate{URL: u, Source: relaysync.FromAnnouncement, Health: relaysync.Health{OK: ok, Failures: fails, LatencyMs: lat}}
	}
	got, err := s.SelectRelays(context.Background(), relaysync.RepoInfo{Address: "30617:x:y"}, []relaysync.Candidate{
		c("wss://dead", false, 9, 0), c("wss://slow", true, 0, 900), c("wss://flaky", false, 1, 50), c("wss://fast", true, 0, 20),
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "wss://fast wss://slow" {
		t.Fatalf("got %v", got)
	}
	got, _ = s.SelectRelays(context.Background(), relaysync.RepoInfo{}, []relaysync.Candidate{c("wss://a", false, 5, 0), c("wss://b", false, 4, 0)})
	if strings.Join(got, " ") != "wss://b" {
		t.Fatalf("all dead: got %v, want the least bad one", got)
	}
}

func TestForgeThrottle(t *testing.T) {
	s := set(t, plugins.Options{Throttle: []plugins.Spec{{Name: "forges", File: "forge_throttle.js"}}})
	cur := throttle.Limits{Concurrency: 5, PerMinute: 30}
	for domain, want := range map[string]throttle.Limits{
		"github.com":         {Concurrency: 8, PerMinute: 120},
		"git.sr.ht":          {Concurrency: 8, PerMinute: 120},
		"Codeberg.org":       {Concurrency: 8, PerMinute: 120},
		"git.example.net":    {Concurrency: 2, PerMinute: 12},
		"notgithub.com.evil": {Concurrency: 2, PerMinute: 12},
	} {
		got, err := s.Throttle(context.Background(), domain, cur)
		if err != nil || got != want {
			t.Errorf("%s: got %+v %v, want %+v", domain, got, err, want)
		}
	}
	got, _ := s.Throttle(context.Background(), "tiny.host", throttle.Limits{Concurrency: 1, PerMinute: 5})
	if got != (throttle.Limits{Concurrency: 1, PerMinute: 5}) {
		t.Errorf("small host raised above its current limits: %+v", got)
	}
}

func TestEmbeddedFSListsEveryScript(t *testing.T) {
	for _, f := range []string{"pubkey_lists.js", "rate_limit.js", "spam_words.js", "repo_quota.js", "prefer_healthy.js", "forge_throttle.js"} {
		if _, err := scriptsFS().Open(f); err != nil {
			t.Error(err)
		}
	}
}
