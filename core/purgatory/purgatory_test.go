package purgatory

import (
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/nbd-wtf/go-nostr"
)

// memKV is a KV that survives "restarts" of a Purgatory (it is shared), the
// way the durable store survives a process.
type memKV struct {
	mu sync.Mutex
	m  map[string]map[string][]byte
}

func newMemKV() *memKV { return &memKV{m: map[string]map[string][]byte{}} }

func (k *memKV) Put(b, key string, val []byte, _ time.Duration) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m[b] == nil {
		k.m[b] = map[string][]byte{}
	}
	k.m[b][key] = append([]byte(nil), val...)
	return nil
}

func (k *memKV) Delete(b, key string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.m[b], key)
	return nil
}

func (k *memKV) Scan(b string, fn func(string, []byte, time.Time) error) error {
	k.mu.Lock()
	keys := make([]string, 0, len(k.m[b]))
	for key := range k.m[b] {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	vals := make([][]byte, len(keys))
	for i, key := range keys {
		vals[i] = k.m[b][key]
	}
	k.mu.Unlock()
	for i := range keys {
		if err := fn(keys[i], vals[i], time.Time{}); err != nil {
			return err
		}
	}
	return nil
}

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func signed(t *testing.T, sk string, kind int, at time.Time, tags nostr.Tags) *nostr.Event {
	t.Helper()
	e := &nostr.Event{Kind: kind, CreatedAt: nostr.Timestamp(at.Unix()), Tags: tags}
	if err := e.Sign(sk); err != nil {
		t.Fatal(err)
	}
	return e
}

func newP(t *testing.T, kv KV, clk clock.Clock) *Purgatory {
	t.Helper()
	p, err := New(kv, clk, nil, nil, Options{TTL: 30 * time.Minute, PlaceholderTTL: 20 * time.Minute, ExpiredMemory: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestG01P6_DuplicateAndReplacement(t *testing.T) {
	clk := clock.NewFake(t0)
	p := newP(t, newMemKV(), clk)
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	repo := Repo{Owner: pk, Identifier: "r"}
	a1 := signed(t, sk, 30617, t0, nostr.Tags{{"d", "r"}})
	if err := p.Hold(Entry{Event: a1, Repo: repo}); err != nil {
		t.Fatal(err)
	}
	if err := p.Hold(Entry{Event: a1, Repo: repo}); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("second hold: %v, want ErrDuplicate", err)
	}
	clk.Advance(20 * time.Minute)
	a2 := signed(t, sk, 30617, t0.Add(time.Minute), nostr.Tags{{"d", "r"}, {"name", "v2"}})
	if err := p.Hold(Entry{Event: a2, Repo: repo}); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Get(a1.ID); ok {
		t.Fatal("replaced announcement still held")
	}
	// the replacement got a fresh window: 20 more minutes is not enough to expire it
	clk.Advance(20 * time.Minute)
	if exp, _, _ := p.Sweep(); len(exp) != 0 {
		t.Fatalf("replacement expired early: %v", exp)
	}
	// an older replacement than the one held is refused
	if err := p.Hold(Entry{Event: a1, Repo: repo}); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("older replacement: %v", err)
	}
}

func TestG01P5_ExpiryOnTheClockSurvivesRestart(t *testing.T) {
	clk := clock.NewFake(t0)
	kv := newMemKV()
	p := newP(t, kv, clk)
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	st := signed(t, sk, 30618, t0, nostr.Tags{{"d", "r"}, {"refs/heads/main", "aa"}})
	if err := p.Hold(Entry{Event: st, Repo: Repo{pk, "r"}, Needs: []string{"aa"}}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(29 * time.Minute)
	// "kill -9": a new Purgatory over the same KV
	p2 := newP(t, kv, clk)
	if got := p2.States("r"); len(got) != 1 || got[0].ID != st.ID {
		t.Fatalf("after restart states=%v", got)
	}
	if exp, _, _ := p2.Sweep(); len(exp) != 0 {
		t.Fatal("expired before its TTL")
	}
	clk.Advance(time.Minute)
	exp, _, err := p2.Sweep()
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
	p2.Sweep()
	if p2.Expired(st.ID) {
		t.Fatal("expired id remembered past ExpiredMemory")
	}
}

func TestG01P3_ReleaseOrderAndConditions(t *testing.T) {
	clk := clock.NewFake(t0)
	p := newP(t, newMemKV(), clk)
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	repo := Repo{pk, "r"}
	ann := signed(t, sk, 30617, t0, nostr.Tags{{"d", "r"}})
	st := signed(t, sk, 30618, t0.Add(2*time.Second), nostr.Tags{{"d", "r"}, {"refs/heads/main", "aa"}})
	stMissing := signed(t, nostr.GeneratePrivateKey(), 30618, t0.Add(3*time.Second), nostr.Tags{{"d", "r"}, {"refs/heads/main", "bb"}})
	issue := signed(t, sk, 1621, t0.Add(time.Second), nostr.Tags{{"a", repo.Address()}})
	pr := signed(t, sk, 1618, t0.Add(4*time.Second), nostr.Tags{{"a", repo.Address()}, {"c", "cc"}})
	for _, e := range []Entry{
		{Event: issue, Repo: repo, WithRepo: true},
		{Event: st, Repo: repo, Needs: []string{"aa"}},
		{Event: stMissing, Repo: Repo{stMissing.PubKey, "r"}, Needs: []string{"bb"}},
		{Event: pr, Repo: repo, Needs: []string{"cc"}},
		{Event: ann, Repo: repo},
	} {
		if err := p.Hold(e); err != nil {
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
	if p.Len() != 2 {
		t.Fatalf("held after release: %d, want 2 (state and PR without data)", p.Len())
	}
	got, _ = p.Release(repo, true, func([]string) bool { return true })
	if len(got) != 2 || got[0].ID != stMissing.ID || got[1].ID != pr.ID {
		t.Fatalf("second release %v", got)
	}
}

func TestG01P7_DeletionByAuthorOnly(t *testing.T) {
	clk := clock.NewFake(t0)
	p := newP(t, newMemKV(), clk)
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	other, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey())
	ann := signed(t, sk, 30617, t0, nostr.Tags{{"d", "r"}})
	st := signed(t, sk, 30618, t0, nostr.Tags{{"d", "r"}})
	p.Hold(Entry{Event: ann, Repo: Repo{pk, "r"}})
	p.Hold(Entry{Event: st, Repo: Repo{pk, "r"}})
	if got, _ := p.DeleteRequested(other, []string{ann.ID}, []string{"30618:" + pk + ":r"}, t0.Add(time.Hour)); len(got) != 0 {
		t.Fatal("someone else's deletion removed entries")
	}
	got, err := p.DeleteRequested(pk, nil, []string{"30617:" + pk + ":r"}, t0.Add(time.Second))
	if err != nil || len(got) != 1 || got[0].Event.ID != ann.ID {
		t.Fatalf("deletion by address: %v %v", got, err)
	}
	// a deletion older than the event does not remove it
	if got, _ := p.DeleteRequested(pk, nil, []string{"30618:" + pk + ":r"}, t0.Add(-time.Second)); len(got) != 0 {
		t.Fatal("deletion older than the event removed it")
	}
	if got, _ := p.DeleteRequested(pk, []string{st.ID}, nil, t0); len(got) != 1 {
		t.Fatal("deletion by id failed")
	}
}

func TestG01G5f_PlaceholdersExpireAndBind(t *testing.T) {
	clk := clock.NewFake(t0)
	kv := newMemKV()
	p := newP(t, kv, clk)
	repo := Repo{"ab", "r"}
	id1 := "1111111111111111111111111111111111111111111111111111111111111111"
	id2 := "2222222222222222222222222222222222222222222222222222222222222222"
	p.AddPlaceholder(repo, id1, "c1")
	p.AddPlaceholder(repo, id2, "c2")
	p = newP(t, kv, clk) // restart
	got, err := p.TakePlaceholders(id1)
	if err != nil || len(got) != 1 || got[0].Commit != "c1" {
		t.Fatalf("take: %v %v", got, err)
	}
	clk.Advance(20 * time.Minute)
	_, phs, _ := p.Sweep()
	if len(phs) != 1 || phs[0].EventID != id2 {
		t.Fatalf("expired placeholders %v", phs)
	}
}

func TestAwaitEventReleasedWithItsRoot(t *testing.T) {
	clk := clock.NewFake(t0)
	p := newP(t, newMemKV(), clk)
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	repo := Repo{pk, "r"}
	pr := signed(t, sk, 1618, t0, nostr.Tags{{"a", repo.Address()}, {"c", "cc"}})
	comment := signed(t, sk, 1111, t0.Add(time.Second), nostr.Tags{{"E", pr.ID}})
	reply := signed(t, sk, 1111, t0.Add(2*time.Second), nostr.Tags{{"e", comment.ID}})
	p.Hold(Entry{Event: reply, Repo: repo, AwaitEvent: comment.ID})
	p.Hold(Entry{Event: comment, Repo: repo, AwaitEvent: pr.ID})
	p.Hold(Entry{Event: pr, Repo: repo, Needs: []string{"cc"}})
	if got, _ := p.Release(repo, true, func([]string) bool { return false }); len(got) != 0 {
		t.Fatalf("released without data: %v", got)
	}
	got, _ := p.Release(repo, true, func([]string) bool { return true })
	if len(got) != 3 || got[0].ID != pr.ID || got[1].ID != comment.ID || got[2].ID != reply.ID {
		t.Fatalf("release %v", got)
	}
}

func TestStateWithItsDataReleasesTheEmptyRepoAnnouncementFirst(t *testing.T) {
	clk := clock.NewFake(t0)
	p := newP(t, newMemKV(), clk)
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	repo := Repo{pk, "r"}
	ann := signed(t, sk, 30617, t0, nostr.Tags{{"d", "r"}})
	st := signed(t, sk, 30618, t0.Add(time.Second), nostr.Tags{{"d", "r"}, {"refs/heads/main", "aa"}})
	p.Hold(Entry{Event: st, Repo: repo, Needs: []string{"aa"}})
	p.Hold(Entry{Event: ann, Repo: repo})
	// fetched objects, no refs yet: the state's data releases both
	got, _ := p.Release(repo, false, func([]string) bool { return true })
	if len(got) != 2 || got[0].ID != ann.ID || got[1].ID != st.ID {
		t.Fatalf("released %v, want [announcement state]", got)
	}
}
