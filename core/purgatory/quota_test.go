package purgatory

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/internal/memkv"
	"github.com/grasp-dev/grasp/core/nip34"
)

func newQuotaP(t *testing.T, kv KV, clk clock.Clock, q Quotas) *Purgatory {
	t.Helper()
	p, err := New(Options{KV: kv, TTL: 30 * time.Minute, Quotas: q}, env.Env{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// announce holds a fresh key's announcement of d sent from remote.
func announce(t *testing.T, p *Purgatory, sk, d, remote string) error {
	t.Helper()
	pk, _ := nostr.GetPublicKey(sk)
	a := signed(t, sk, 30617, t0, nostr.Tags{{"d", d}})
	return p.Hold(context.Background(), Entry{Event: a, Repo: nip34.RepoRef{Pubkey: pk, Identifier: d}, Remote: remote})
}

func wantQuota(t *testing.T, err error, words ...string) {
	t.Helper()
	var q *QuotaError
	if !errors.As(err, &q) {
		t.Fatalf("err = %v, want a quota refusal", err)
	}
	if !strings.HasPrefix(q.Msg, "rate-limited: ") {
		t.Fatalf("refusal %q lacks the NIP-01 prefix", q.Msg)
	}
	for _, w := range words {
		if !strings.Contains(q.Msg, w) {
			t.Fatalf("refusal %q does not say %q", q.Msg, w)
		}
	}
}

// TestHeldAnnouncementQuotas: each cap refuses the announcement beyond it
// with a readable reason and writes nothing; a replacement of a held
// announcement is not a new one; expiry frees the room (F13).
func TestHeldAnnouncementQuotas(t *testing.T) { eachKV(t, testHeldAnnouncementQuotas) }

func testHeldAnnouncementQuotas(t *testing.T, newKV func() KV) {
	t.Run("per address", func(t *testing.T) {
		kv := newKV()
		p := newQuotaP(t, kv, clock.NewFake(t0), Quotas{MaxAnnouncementsPerRemote: 2})
		for i := 0; i < 2; i++ {
			if err := announce(t, p, nostr.GeneratePrivateKey(), fmt.Sprint("r", i), "198.51.100.7"); err != nil {
				t.Fatal(err)
			}
		}
		wantQuota(t, announce(t, p, nostr.GeneratePrivateKey(), "r9", "198.51.100.7"), "your address", "limit 2")
		// another address, and an event from a sync peer (no address), pass
		if err := announce(t, p, nostr.GeneratePrivateKey(), "r9", "198.51.100.8"); err != nil {
			t.Fatal(err)
		}
		if err := announce(t, p, nostr.GeneratePrivateKey(), "r10", ""); err != nil {
			t.Fatal(err)
		}
		if n := p.Len(); n != 4 {
			t.Fatalf("held %d, want 4 (the refused one written nowhere)", n)
		}
		held := 0
		_ = kv.Scan(context.Background(), bucketHeld, func(string, []byte, time.Time) error { held++; return nil })
		if held != 4 {
			t.Fatalf("KV holds %d entries, want 4", held)
		}
	})
	t.Run("per author, and replacements are free", func(t *testing.T) {
		clk := clock.NewFake(t0)
		p := newQuotaP(t, newKV(), clk, Quotas{MaxAnnouncementsPerAuthor: 1})
		sk := nostr.GeneratePrivateKey()
		pk, _ := nostr.GetPublicKey(sk)
		if err := announce(t, p, sk, "one", ""); err != nil {
			t.Fatal(err)
		}
		wantQuota(t, announce(t, p, sk, "two", ""), nip34.Npub(pk), "limit 1")
		newer := signed(t, sk, 30617, t0.Add(time.Second), nostr.Tags{{"d", "one"}, {"name", "v2"}})
		if err := p.Hold(context.Background(), Entry{Event: newer, Repo: nip34.RepoRef{Pubkey: pk, Identifier: "one"}}); err != nil {
			t.Fatalf("replacing the held announcement: %v", err)
		}
		clk.Advance(31 * time.Minute)
		if _, _, err := p.Sweep(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := announce(t, p, sk, "two", ""); err != nil {
			t.Fatalf("after expiry: %v", err)
		}
	})
	t.Run("per identifier", func(t *testing.T) {
		p := newQuotaP(t, newKV(), clock.NewFake(t0), Quotas{MaxAnnouncementsPerIdentifier: 3})
		for i := 0; i < 3; i++ {
			if err := announce(t, p, nostr.GeneratePrivateKey(), "popular", ""); err != nil {
				t.Fatal(err)
			}
		}
		wantQuota(t, announce(t, p, nostr.GeneratePrivateKey(), "popular", ""), `"popular"`, "limit 3")
		if err := announce(t, p, nostr.GeneratePrivateKey(), "other", ""); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("in total, and every kind", func(t *testing.T) {
		p := newQuotaP(t, newKV(), clock.NewFake(t0), Quotas{MaxAnnouncements: 2, MaxHeld: 3, MaxHeldPerRemote: 100})
		for i := 0; i < 2; i++ {
			if err := announce(t, p, nostr.GeneratePrivateKey(), fmt.Sprint("r", i), ""); err != nil {
				t.Fatal(err)
			}
		}
		wantQuota(t, announce(t, p, nostr.GeneratePrivateKey(), "r2", ""), "new repositories")
		sk := nostr.GeneratePrivateKey()
		pk, _ := nostr.GetPublicKey(sk)
		st := signed(t, sk, 30618, t0, nostr.Tags{{"d", "s"}, {"refs/heads/main", "aa"}})
		if err := p.Hold(context.Background(), Entry{Event: st, Repo: nip34.RepoRef{Pubkey: pk, Identifier: "s"}, Needs: []string{"aa"}}); err != nil {
			t.Fatal(err)
		}
		pr := signed(t, sk, 1618, t0, nostr.Tags{{"c", "bb"}})
		wantQuota(t, p.Hold(context.Background(), Entry{Event: pr, Repo: nip34.RepoRef{Pubkey: pk, Identifier: "s"}, Needs: []string{"bb"}}), "events already wait")
	})
	t.Run("held events per address", func(t *testing.T) {
		p := newQuotaP(t, newKV(), clock.NewFake(t0), Quotas{MaxHeldPerRemote: 1})
		sk := nostr.GeneratePrivateKey()
		pk, _ := nostr.GetPublicKey(sk)
		for i, want := range []bool{true, false} {
			pr := signed(t, sk, 1618, t0.Add(time.Duration(i)*time.Second), nostr.Tags{{"c", "bb"}})
			err := p.Hold(context.Background(), Entry{Event: pr, Repo: nip34.RepoRef{Pubkey: pk, Identifier: "s"}, Needs: []string{"bb"}, Remote: "203.0.113.9"})
			if want && err != nil {
				t.Fatal(err)
			}
			if !want {
				wantQuota(t, err, "from your address")
			}
		}
	})
}

// TestQuotasSurviveRestart: the counts are rebuilt from the KV.
func TestQuotasSurviveRestart(t *testing.T) { eachKV(t, testQuotasSurviveRestart) }

func testQuotasSurviveRestart(t *testing.T, newKV func() KV) {
	kv := newKV()
	clk := clock.NewFake(t0)
	q := Quotas{MaxAnnouncementsPerRemote: 1}
	p := newQuotaP(t, kv, clk, q)
	if err := announce(t, p, nostr.GeneratePrivateKey(), "a", "192.0.2.1"); err != nil {
		t.Fatal(err)
	}
	p2 := newQuotaP(t, kv, clk, q)
	wantQuota(t, announce(t, p2, nostr.GeneratePrivateKey(), "b", "192.0.2.1"), "your address")
}

// TestIndexAnswersAsAScan: every indexed question gives what a scan of all
// held entries gives, through holds, replacements, releases, deletions and
// expiry.
func TestIndexAnswersAsAScan(t *testing.T) { eachKV(t, testIndexAnswersAsAScan) }

func testIndexAnswersAsAScan(t *testing.T, newKV func() KV) {
	clk := clock.NewFake(t0)
	kv := newKV()
	p := newQuotaP(t, kv, clk, Quotas{})
	rng := rand.New(rand.NewSource(1))
	keys := []string{nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()}
	pks := make([]string, len(keys))
	for i, k := range keys {
		pks[i], _ = nostr.GetPublicKey(k)
	}
	ds := []string{"a", "b", "c"}
	var ids []string
	for step := 0; step < 300; step++ {
		i, d := rng.Intn(len(keys)), ds[rng.Intn(len(ds))]
		at := t0.Add(time.Duration(rng.Intn(100)) * time.Second)
		repo := nip34.RepoRef{Pubkey: pks[i], Identifier: d}
		var e Entry
		switch rng.Intn(5) {
		case 0:
			e = Entry{Event: signed(t, keys[i], 30617, at, nostr.Tags{{"d", d}}), Repo: repo}
		case 1:
			e = Entry{Event: signed(t, keys[i], 30618, at, nostr.Tags{{"d", d}, {"refs/heads/main", "aa"}}), Repo: repo, Needs: []string{"aa"}}
		case 2:
			e = Entry{Event: signed(t, keys[i], 1621, at, nostr.Tags{{"a", repo.String()}}), Repo: repo, WithRepo: true}
		case 3:
			if len(ids) > 0 {
				e = Entry{Event: signed(t, keys[i], 1111, at, nostr.Tags{{"E", ids[rng.Intn(len(ids))]}}), Repo: repo, AwaitEvent: ids[rng.Intn(len(ids))]}
			} else {
				continue
			}
		case 4:
			switch rng.Intn(3) {
			case 0:
				rel, _ := p.Release(repo, rng.Intn(2) == 0, func([]string) bool { return rng.Intn(2) == 0 })
				_ = p.Published(context.Background(), rel)
			case 1:
				_, _ = p.DeleteRequested(context.Background(), pks[i], ids[max(0, len(ids)-3):], []string{"30617:" + pks[i] + ":" + d}, at)
			case 2:
				clk.Advance(time.Duration(rng.Intn(10)) * time.Minute)
				_, _, _ = p.Sweep(context.Background())
			}
			continue
		}
		if err := p.Hold(context.Background(), e); err != nil && !errors.Is(err, ErrDuplicate) {
			t.Fatal(err)
		}
		ids = append(ids, e.Event.ID)

		filters := []nostr.Filter{
			{Kinds: []int{30617}, Tags: nostr.TagMap{"d": {d}}},
			{Kinds: []int{30617, 30618}, Tags: nostr.TagMap{"d": {d, "a"}}},
			{Kinds: []int{30617}, Authors: []string{pks[i]}},
			{IDs: []string{ids[rng.Intn(len(ids))], e.Event.ID}},
			{Authors: []string{pks[i]}},
		}
		for _, f := range filters {
			got, _ := p.QueryHeld(context.Background(), f)
			want := events(p.Find(func(e *Entry) bool { return f.Matches(e.Event) }))
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("step %d: QueryHeld(%v) = %d events, a scan finds %d", step, f, len(got), len(want))
			}
		}
		if got, want := p.Announcements(d), events(p.Find(func(e *Entry) bool { return e.Event.Kind == 30617 && e.Repo.Identifier == d })); !reflect.DeepEqual(got, want) {
			t.Fatalf("step %d: Announcements(%q) = %d, scan %d", step, d, len(got), len(want))
		}
		if got, want := p.States(d), events(p.Find(func(e *Entry) bool { return e.Event.Kind == 30618 && e.Repo.Identifier == d })); !reflect.DeepEqual(got, want) {
			t.Fatalf("step %d: States(%q) = %d, scan %d", step, d, len(got), len(want))
		}
		if got, want := p.HasAnnouncement(repo), len(p.Find(func(e *Entry) bool { return e.Event.Kind == 30617 && e.Repo == repo })) > 0; got != want {
			t.Fatalf("step %d: HasAnnouncement = %v, scan %v", step, got, want)
		}
	}
	// the counts the gauge and the quotas read equal a recount, also after
	// a restart from the KV
	for _, q := range []*Purgatory{p, newQuotaP(t, kv, clk, Quotas{})} {
		q.mu.Lock()
		kinds, ann := map[string]int{}, 0
		for _, e := range q.held {
			kinds[kindLabel(e.Event.Kind)]++
			if isAnnouncement(e) {
				ann++
			}
		}
		if !reflect.DeepEqual(kinds, q.idx.kinds) || ann != q.idx.annTotal {
			t.Fatalf("counts %v/%d, recount %v/%d", q.idx.kinds, q.idx.annTotal, kinds, ann)
		}
		q.mu.Unlock()
	}
}

// F31: an announcement of a key an owner invited (Entry.Invited) is neither
// refused by nor counted against the per-identifier cap, and survives a
// restart as such.
func TestInvitedAnnouncementsOutsideTheIdentifierCap(t *testing.T) {
	kv := &memkv.KV{}
	p := newQuotaP(t, kv, clock.NewFake(t0), Quotas{MaxAnnouncementsPerIdentifier: 2})
	for i := 0; i < 2; i++ {
		if err := announce(t, p, nostr.GeneratePrivateKey(), "victim", ""); err != nil {
			t.Fatal(err)
		}
	}
	wantQuota(t, announce(t, p, nostr.GeneratePrivateKey(), "victim", ""), `repository "victim"`, "limit 2")
	invite := func(p *Purgatory) error {
		sk := nostr.GeneratePrivateKey()
		pk, _ := nostr.GetPublicKey(sk)
		a := signed(t, sk, 30617, t0, nostr.Tags{{"d", "victim"}})
		return p.Hold(context.Background(), Entry{Event: a, Repo: nip34.RepoRef{Pubkey: pk, Identifier: "victim"}, Invited: true})
	}
	for i := 0; i < 3; i++ {
		if err := invite(p); err != nil {
			t.Fatalf("invited announcement %d: %v", i, err)
		}
	}
	p2 := newQuotaP(t, kv, clock.NewFake(t0), Quotas{MaxAnnouncementsPerIdentifier: 2})
	if err := invite(p2); err != nil {
		t.Fatalf("invited announcement after a restart: %v", err)
	}
	wantQuota(t, announce(t, p2, nostr.GeneratePrivateKey(), "victim", ""), `repository "victim"`, "limit 2")
}

// F26: events synced from one relay are held within that relay's caps,
// like a client address's; other relays and clients keep their room.
func TestHeldPerRelay(t *testing.T) {
	p := newQuotaP(t, &memkv.KV{}, clock.NewFake(t0), Quotas{MaxAnnouncementsPerRelay: 2, MaxHeldPerRelay: 3})
	synced := func(relay, d string, kind int) error {
		sk := nostr.GeneratePrivateKey()
		pk, _ := nostr.GetPublicKey(sk)
		evt := signed(t, sk, kind, t0, nostr.Tags{{"d", d}})
		return p.Hold(context.Background(), Entry{Event: evt, Repo: nip34.RepoRef{Pubkey: pk, Identifier: d}, Relay: relay})
	}
	const bad = "wss://attacker.example"
	for i := 0; i < 2; i++ {
		if err := synced(bad, fmt.Sprint("r", i), 30617); err != nil {
			t.Fatal(err)
		}
	}
	wantQuota(t, synced(bad, "r2", 30617), "synced from wss://attacker.example", "limit 2 per relay")
	if err := synced(bad, "r0", 30618); err != nil {
		t.Fatal(err)
	}
	wantQuota(t, synced(bad, "r1", 30618), "3 events synced from wss://attacker.example", "limit 3 per relay")
	if err := synced("wss://other.example", "r9", 30617); err != nil {
		t.Fatalf("another relay: %v", err)
	}
	if err := announce(t, p, nostr.GeneratePrivateKey(), "r8", "198.51.100.7"); err != nil {
		t.Fatalf("a client: %v", err)
	}
}
