package purgatory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/internal/memkv"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/internal/testkit"
	"github.com/nbd-wtf/go-nostr"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// signed is an event by sk dated at on the test clock; testkit signs it.
func signed(t *testing.T, sk string, kind int, at time.Time, tags nostr.Tags) *nostr.Event {
	t.Helper()
	return testkit.Sign(t, sk, &nostr.Event{Kind: kind, CreatedAt: nostr.Timestamp(at.Unix()), Tags: tags})
}

func newP(t *testing.T, kv KV, clk clock.Clock) *Purgatory {
	t.Helper()
	p, err := New(Options{KV: kv, TTL: 30 * time.Minute, PlaceholderTTL: 20 * time.Minute, ExpiredMemory: time.Hour}, env.Env{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestG01P6_DuplicateAndReplacement(t *testing.T) { eachKV(t, testG01P6_DuplicateAndReplacement) }

func testG01P6_DuplicateAndReplacement(t *testing.T, newKV func() KV) {
	clk := clock.NewFake(t0)
	p := newP(t, newKV(), clk)
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	repo := nip34.RepoRef{Pubkey: pk, Identifier: "r"}
	a1 := signed(t, sk, 30617, t0, nostr.Tags{{"d", "r"}})
	if err := p.Hold(context.Background(), Entry{Event: a1, Repo: repo}); err != nil {
		t.Fatal(err)
	}
	if err := p.Hold(context.Background(), Entry{Event: a1, Repo: repo}); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("second hold: %v, want ErrDuplicate", err)
	}
	clk.Advance(20 * time.Minute)
	a2 := signed(t, sk, 30617, t0.Add(time.Minute), nostr.Tags{{"d", "r"}, {"name", "v2"}})
	if err := p.Hold(context.Background(), Entry{Event: a2, Repo: repo}); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Get(a1.ID); ok {
		t.Fatal("replaced announcement still held")
	}
	// the replacement got a fresh window: 20 more minutes is not enough to expire it
	clk.Advance(20 * time.Minute)
	if exp, _, _ := p.Sweep(context.Background()); len(exp) != 0 {
		t.Fatalf("replacement expired early: %v", exp)
	}
	// an older replacement than the one held is refused
	if err := p.Hold(context.Background(), Entry{Event: a1, Repo: repo}); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("older replacement: %v", err)
	}
}

func TestG01P5_ExpiryOnTheClockSurvivesRestart(t *testing.T) {
	eachKV(t, testG01P5_ExpiryOnTheClockSurvivesRestart)
}

func testG01P5_ExpiryOnTheClockSurvivesRestart(t *testing.T, newKV func() KV) {
	clk := clock.NewFake(t0)
	kv := newKV()
	p := newP(t, kv, clk)
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	st := signed(t, sk, 30618, t0, nostr.Tags{{"d", "r"}, {"refs/heads/main", "aa"}})
	if err := p.Hold(context.Background(), Entry{Event: st, Repo: nip34.RepoRef{Pubkey: pk, Identifier: "r"}, Needs: []string{"aa"}}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(29 * time.Minute)
	// "kill -9": a new Purgatory over the same KV
	p2 := newP(t, kv, clk)
	if got := p2.States("r"); len(got) != 1 || got[0].ID != st.ID {
		t.Fatalf("after restart states=%v", got)
	}
	if exp, _, _ := p2.Sweep(context.Background()); len(exp) != 0 {
		t.Fatal("expired before its TTL")
	}
	clk.Advance(time.Minute)
	exp, _, err := p2.Sweep(context.Background())
	if err != nil || len(exp) != 1 || exp[0].Event.ID != st.ID {
		t.Fatalf("sweep at TTL: %v %v", exp, err)
	}
	if !p2.Expired(st.ID) {
		t.Fatal("expired id not remembered")
	}
	if p3 := newP(t, kv, clk); !p3.Expired(st.ID) || p3.Len() != 0 {
		t.Fatal("expiry not durable")
	}
	clk.Advance(time.Hour)
	p2.Sweep(context.Background())
	if p2.Expired(st.ID) {
		t.Fatal("expired id remembered past ExpiredMemory")
	}
}

func TestG01P3_ReleaseOrderAndConditions(t *testing.T) {
	eachKV(t, testG01P3_ReleaseOrderAndConditions)
}

func testG01P3_ReleaseOrderAndConditions(t *testing.T, newKV func() KV) {
	clk := clock.NewFake(t0)
	p := newP(t, newKV(), clk)
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	repo := nip34.RepoRef{Pubkey: pk, Identifier: "r"}
	ann := signed(t, sk, 30617, t0, nostr.Tags{{"d", "r"}})
	st := signed(t, sk, 30618, t0.Add(2*time.Second), nostr.Tags{{"d", "r"}, {"refs/heads/main", "aa"}})
	stMissing := signed(t, nostr.GeneratePrivateKey(), 30618, t0.Add(3*time.Second), nostr.Tags{{"d", "r"}, {"refs/heads/main", "bb"}})
	issue := signed(t, sk, 1621, t0.Add(time.Second), nostr.Tags{{"a", repo.String()}})
	pr := signed(t, sk, 1618, t0.Add(4*time.Second), nostr.Tags{{"a", repo.String()}, {"c", "cc"}})
	for _, e := range []Entry{
		{Event: issue, Repo: repo, WithRepo: true},
		{Event: st, Repo: repo, Needs: []string{"aa"}},
		{Event: stMissing, Repo: nip34.RepoRef{Pubkey: stMissing.PubKey, Identifier: "r"}, Needs: []string{"bb"}},
		{Event: pr, Repo: repo, Needs: []string{"cc"}},
		{Event: ann, Repo: repo},
	} {
		if err := p.Hold(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	has := func(oids []string) bool {
		for _, o := range oids {
			if o != "aa" {
				return false
			}
		}
		return true
	}
	got, err := p.Release(repo, true, has)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range got {
		ids = append(ids, e.ID)
	}
	want := []string{ann.ID, st.ID, issue.ID}
	if len(ids) != len(want) {
		t.Fatalf("released %d events, want %d", len(ids), len(want))
	}
	for i := range want {
		if ids[i] != want[i] {
			t.Fatalf("release order %v, want %v", ids, want)
		}
	}
	// until the caller has published them they stay held (a crash in
	// between loses nothing) and no other release hands them out
	if p.Len() != 5 {
		t.Fatalf("held while being published: %d, want 5", p.Len())
	}
	if again, _ := p.Release(repo, true, has); len(again) != 0 {
		t.Fatalf("a second release handed out %d events being published", len(again))
	}
	if err := p.Published(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	if p.Len() != 2 {
		t.Fatalf("held after release: %d, want 2 (state and PR without data)", p.Len())
	}
	got, _ = p.Release(repo, true, func([]string) bool { return true })
	if len(got) != 2 || got[0].ID != stMissing.ID || got[1].ID != pr.ID {
		t.Fatalf("second release %v", got)
	}
}

func TestG01P7_DeletionByAuthorOnly(t *testing.T) { eachKV(t, testG01P7_DeletionByAuthorOnly) }

func testG01P7_DeletionByAuthorOnly(t *testing.T, newKV func() KV) {
	clk := clock.NewFake(t0)
	p := newP(t, newKV(), clk)
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	other, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey())
	ann := signed(t, sk, 30617, t0, nostr.Tags{{"d", "r"}})
	st := signed(t, sk, 30618, t0, nostr.Tags{{"d", "r"}})
	p.Hold(context.Background(), Entry{Event: ann, Repo: nip34.RepoRef{Pubkey: pk, Identifier: "r"}})
	p.Hold(context.Background(), Entry{Event: st, Repo: nip34.RepoRef{Pubkey: pk, Identifier: "r"}})
	if got, _ := p.DeleteRequested(context.Background(), other, []string{ann.ID}, []string{"30618:" + pk + ":r"}, t0.Add(time.Hour)); len(got) != 0 {
		t.Fatal("someone else's deletion removed entries")
	}
	got, err := p.DeleteRequested(context.Background(), pk, nil, []string{"30617:" + pk + ":r"}, t0.Add(time.Second))
	if err != nil || len(got) != 1 || got[0].Event.ID != ann.ID {
		t.Fatalf("deletion by address: %v %v", got, err)
	}
	// a deletion older than the event does not remove it
	if got, _ := p.DeleteRequested(context.Background(), pk, nil, []string{"30618:" + pk + ":r"}, t0.Add(-time.Second)); len(got) != 0 {
		t.Fatal("deletion older than the event removed it")
	}
	if got, _ := p.DeleteRequested(context.Background(), pk, []string{st.ID}, nil, t0); len(got) != 1 {
		t.Fatal("deletion by id failed")
	}
}

func TestG01G5f_PlaceholdersExpireAndBind(t *testing.T) {
	eachKV(t, testG01G5f_PlaceholdersExpireAndBind)
}

func testG01G5f_PlaceholdersExpireAndBind(t *testing.T, newKV func() KV) {
	clk := clock.NewFake(t0)
	kv := newKV()
	p := newP(t, kv, clk)
	repo := nip34.RepoRef{Pubkey: "ab", Identifier: "r"}
	id1 := "1111111111111111111111111111111111111111111111111111111111111111"
	id2 := "2222222222222222222222222222222222222222222222222222222222222222"
	p.AddPlaceholder(context.Background(), Placeholder{Repo: repo, EventID: id1, Commit: "c1"})
	p.AddPlaceholder(context.Background(), Placeholder{Repo: repo, EventID: id2, Commit: "c2"})
	p = newP(t, kv, clk) // restart
	got, err := p.TakePlaceholders(context.Background(), id1)
	if err != nil || len(got) != 1 || got[0].Commit != "c1" {
		t.Fatalf("take: %v %v", got, err)
	}
	clk.Advance(20 * time.Minute)
	_, phs, _ := p.Sweep(context.Background())
	if len(phs) != 1 || phs[0].EventID != id2 {
		t.Fatalf("expired placeholders %v", phs)
	}
}

func TestAwaitEventReleasedWithItsRoot(t *testing.T) { eachKV(t, testAwaitEventReleasedWithItsRoot) }

func testAwaitEventReleasedWithItsRoot(t *testing.T, newKV func() KV) {
	clk := clock.NewFake(t0)
	p := newP(t, newKV(), clk)
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	repo := nip34.RepoRef{Pubkey: pk, Identifier: "r"}
	pr := signed(t, sk, 1618, t0, nostr.Tags{{"a", repo.String()}, {"c", "cc"}})
	comment := signed(t, sk, 1111, t0.Add(time.Second), nostr.Tags{{"E", pr.ID}})
	reply := signed(t, sk, 1111, t0.Add(2*time.Second), nostr.Tags{{"e", comment.ID}})
	p.Hold(context.Background(), Entry{Event: reply, Repo: repo, AwaitEvent: comment.ID})
	p.Hold(context.Background(), Entry{Event: comment, Repo: repo, AwaitEvent: pr.ID})
	p.Hold(context.Background(), Entry{Event: pr, Repo: repo, Needs: []string{"cc"}})
	if got, _ := p.Release(repo, true, func([]string) bool { return false }); len(got) != 0 {
		t.Fatalf("released without data: %v", got)
	}
	got, _ := p.Release(repo, true, func([]string) bool { return true })
	if len(got) != 3 || got[0].ID != pr.ID || got[1].ID != comment.ID || got[2].ID != reply.ID {
		t.Fatalf("release %v", got)
	}
}

func TestStateWithItsDataReleasesTheEmptyRepoAnnouncementFirst(t *testing.T) {
	eachKV(t, testStateWithItsDataReleasesTheEmptyRepoAnnouncementFirst)
}

func testStateWithItsDataReleasesTheEmptyRepoAnnouncementFirst(t *testing.T, newKV func() KV) {
	clk := clock.NewFake(t0)
	p := newP(t, newKV(), clk)
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	repo := nip34.RepoRef{Pubkey: pk, Identifier: "r"}
	ann := signed(t, sk, 30617, t0, nostr.Tags{{"d", "r"}})
	st := signed(t, sk, 30618, t0.Add(time.Second), nostr.Tags{{"d", "r"}, {"refs/heads/main", "aa"}})
	p.Hold(context.Background(), Entry{Event: st, Repo: repo, Needs: []string{"aa"}})
	p.Hold(context.Background(), Entry{Event: ann, Repo: repo})
	// fetched objects, no refs yet: the state's data releases both
	got, _ := p.Release(repo, false, func([]string) bool { return true })
	if len(got) != 2 || got[0].ID != ann.ID || got[1].ID != st.ID {
		t.Fatalf("released %v, want [announcement state]", got)
	}
}

// Held entries survive an upgrade: an entry written in the durable format
// of the releases before nip34.RepoRef became purgatory's repository
// identity ({"owner": hex, "d": identifier}) loads with its repository.
func TestHeldEntryFormatSurvivesUpgrade(t *testing.T) { eachKV(t, testHeldEntryFormatSurvivesUpgrade) }

func testHeldEntryFormatSurvivesUpgrade(t *testing.T, newKV func() KV) {
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	st := signed(t, sk, 30618, t0, nostr.Tags{{"d", "r"}})
	evt, _ := st.MarshalJSON()
	kv := newKV()
	old := `{"event":` + string(evt) + `,"repo":{"owner":"` + pk + `","d":"r"},"also":[{"owner":"` + pk + `","d":"r2"}],"needs":["aa"],"expires":"2026-11-22T12:30:00Z","held_at":"2026-11-22T12:00:00Z"}`
	if err := kv.Put(context.Background(), bucketHeld, st.ID, []byte(old), 0); err != nil {
		t.Fatal(err)
	}
	p := newP(t, kv, clock.NewFake(t0))
	e, ok := p.Get(st.ID)
	if !ok {
		t.Fatal("entry written in the earlier format was not loaded")
	}
	want := nip34.RepoRef{Pubkey: pk, Identifier: "r"}
	if e.Repo != want || len(e.Also) != 1 || e.Also[0] != (nip34.RepoRef{Pubkey: pk, Identifier: "r2"}) {
		t.Fatalf("repo %+v also %+v, want %+v", e.Repo, e.Also, want)
	}
	b, err := json.Marshal(e)
	if err != nil || !strings.Contains(string(b), `"repo":{"owner":"`+pk+`","d":"r"}`) {
		t.Fatalf("entry is written in another format now: %s", b)
	}
}

// Every way into and out of purgatory reaches the hooks, after the change is
// made and outside purgatory's lock (a hook may read purgatory): the
// GRASP-02 self-subscriber follows held repositories through them instead of
// polling.
func TestHooksSeeEveryHoldAndRemoval(t *testing.T) { eachKV(t, testHooksSeeEveryHoldAndRemoval) }

func testHooksSeeEveryHoldAndRemoval(t *testing.T, newKV func() KV) {
	clk := clock.NewFake(t0)
	p := newP(t, newKV(), clk)
	var got []string
	p.OnHold = append(p.OnHold, func(e Entry) {
		_, held := p.Get(e.Event.ID) // a hook may call back into purgatory
		got = append(got, fmt.Sprintf("hold %s %v", e.Event.Content, held))
	})
	p.OnRemove = append(p.OnRemove, func(e Entry, why string) {
		_, held := p.Get(e.Event.ID)
		got = append(got, fmt.Sprintf("%s %s %v", why, e.Event.Content, held))
	})
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	repo := nip34.RepoRef{Pubkey: pk, Identifier: "r"}
	ann := func(content string, at time.Time) *nostr.Event {
		e := signed(t, sk, 30617, at, nostr.Tags{{"d", "r"}})
		e.Content = content
		if err := e.Sign(sk); err != nil {
			t.Fatal(err)
		}
		return e
	}
	a1, a2 := ann("a1", t0), ann("a2", t0.Add(time.Second))
	for _, e := range []*nostr.Event{a1, a2} {
		if err := p.Hold(context.Background(), Entry{Event: e, Repo: repo}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Remove(context.Background(), a2.ID, "evicted"); err != nil {
		t.Fatal(err)
	}
	a3 := ann("a3", t0.Add(2*time.Second))
	p.Hold(context.Background(), Entry{Event: a3, Repo: repo})
	rel, err := p.Release(repo, true, func([]string) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Published(context.Background(), rel); err != nil {
		t.Fatal(err)
	}
	a4 := ann("a4", t0.Add(3*time.Second))
	p.Hold(context.Background(), Entry{Event: a4, Repo: repo})
	if _, err := p.DeleteRequested(context.Background(), pk, []string{a4.ID}, nil, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	a5 := ann("a5", t0.Add(4*time.Second))
	p.Hold(context.Background(), Entry{Event: a5, Repo: repo})
	clk.Advance(time.Hour)
	if _, _, err := p.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"hold a1 true", "hold a2 true", "replaced a1 false", "evicted a2 false",
		"hold a3 true", "released a3 false", "hold a4 true", "deleted a4 false",
		"hold a5 true", "expired a5 false",
	}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("hooks saw\n  %s\nwant\n  %s", strings.Join(got, ", "), strings.Join(want, ", "))
	}
}

// TestWaitingForLists a repository's held events: those waiting on it as
// their repository or as another maintainer's copy, oldest first, cut at
// max with the full count; another repository of the same identifier is
// not listed (issue 26 part 5, the repository page).
func TestWaitingForLists(t *testing.T) {
	p := newP(t, &memkv.KV{}, clock.NewFake(t0))
	sk, other := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	opk, _ := nostr.GetPublicKey(other)
	repo := nip34.RepoRef{Pubkey: pk, Identifier: "r"}
	elsewhere := nip34.RepoRef{Pubkey: opk, Identifier: "r"}
	st := signed(t, sk, 30618, t0.Add(2*time.Second), nostr.Tags{{"d", "r"}, {"refs/heads/main", "aa"}})
	pr := signed(t, other, 1618, t0.Add(time.Second), nostr.Tags{{"a", elsewhere.String()}, {"c", "cc"}})
	theirs := signed(t, other, 30618, t0.Add(3*time.Second), nostr.Tags{{"d", "r"}, {"refs/heads/main", "dd"}})
	for _, e := range []Entry{
		{Event: st, Repo: repo, Needs: []string{"aa"}},
		{Event: pr, Repo: elsewhere, Also: []nip34.RepoRef{repo}, Needs: []string{"cc"}},
		{Event: theirs, Repo: elsewhere, Needs: []string{"dd"}},
	} {
		if err := p.Hold(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	got, n := p.WaitingFor(repo, 10)
	if n != 2 || len(got) != 2 || got[0].Event.ID != pr.ID || got[1].Event.ID != st.ID {
		t.Fatalf("waiting for %s: %d %v", repo, n, got)
	}
	if got, n := p.WaitingFor(repo, 1); n != 2 || len(got) != 1 || got[0].Event.ID != pr.ID {
		t.Fatalf("cut at 1: %d %v", n, got)
	}
}
