package purgatory

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/nip34"
)

func hexID(c byte) string { return strings.Repeat(string(c), 64) }

// Placeholders count per repository, per owner and per client address,
// waiting ones and pushes in progress alike; a refusal is rate-limited:
// and reserves nothing; expiry and restart keep the counts right (F02).
func TestPlaceholderQuotas(t *testing.T) { eachKV(t, testPlaceholderQuotas) }

func testPlaceholderQuotas(t *testing.T, newKV func() KV) {
	clk := clock.NewFake(t0)
	kv := newKV()
	q := PlaceholderQuotas{PerRepo: 2, PerOwner: 3, PerRemote: 10, BytesPerRepo: 1000, BytesPerOwner: 10000, BytesPerRemote: 1500}
	open := func() *Purgatory {
		p, err := New(Options{KV: kv, PlaceholderTTL: 20 * time.Minute, PlaceholderQuotas: q}, env.Env{Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := open()
	r1 := nip34.RepoRef{Pubkey: hexID('a'), Identifier: "one"}
	r2 := nip34.RepoRef{Pubkey: hexID('a'), Identifier: "two"}
	r3 := nip34.RepoRef{Pubkey: hexID('b'), Identifier: "three"}

	// three new placeholders in one push to one repository: over PerRepo
	if _, err := p.ReservePlaceholders(r1, "1.1.1.1", []string{hexID('1'), hexID('2'), hexID('3')}); err == nil || !strings.HasPrefix(err.Error(), "rate-limited: 0 refs/nostr/<id> placeholders already wait") {
		t.Fatalf("3 placeholders in a repo allowing 2: %v", err)
	}
	rv, err := p.ReservePlaceholders(r1, "1.1.1.1", []string{hexID('1'), hexID('2')})
	if err != nil {
		t.Fatal(err)
	}
	// a push in progress counts: bytes as they arrive
	if err := rv.Charge(900); err != nil {
		t.Fatal(err)
	}
	if err := rv.Charge(200); err == nil || !strings.Contains(err.Error(), "in this repository may hold") {
		t.Fatalf("bytes past the repository's bound: %v", err)
	}
	// the refused bytes were not counted; the reservation blocks a second push
	if _, err := p.ReservePlaceholders(r1, "2.2.2.2", []string{hexID('4')}); err == nil {
		t.Fatal("a third placeholder while two are being pushed")
	}
	if err := p.AddPlaceholder(context.Background(), Placeholder{Repo: r1, EventID: hexID('1'), Commit: "c1", Remote: "1.1.1.1", Bytes: 450}); err != nil {
		t.Fatal(err)
	}
	if err := p.AddPlaceholder(context.Background(), Placeholder{Repo: r1, EventID: hexID('2'), Commit: "c2", Remote: "1.1.1.1", Bytes: 450}); err != nil {
		t.Fatal(err)
	}
	rv.Release()
	rv.Release() // idempotent
	// pushing an existing placeholder again is not a new one
	rv, err = p.ReservePlaceholders(r1, "1.1.1.1", []string{hexID('1')})
	if err != nil {
		t.Fatalf("re-push of a waiting placeholder: %v", err)
	}
	rv.Release()
	// the owner's other repository: one more fits PerOwner (3), then not
	rv, err = p.ReservePlaceholders(r2, "2.2.2.2", []string{hexID('5')})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AddPlaceholder(context.Background(), Placeholder{Repo: r2, EventID: hexID('5'), Commit: "c5", Remote: "2.2.2.2"}); err != nil {
		t.Fatal(err)
	}
	rv.Release()
	if _, err := p.ReservePlaceholders(r2, "2.2.2.2", []string{hexID('6')}); err == nil || !strings.Contains(err.Error(), "in the repositories of npub1") {
		t.Fatalf("fourth placeholder of one owner: %v", err)
	}
	// per address: 1.1.1.1 holds 900 bytes, 600 more passes 1500
	rv, err = p.ReservePlaceholders(r3, "1.1.1.1", []string{hexID('7')})
	if err != nil {
		t.Fatal(err)
	}
	if err := rv.Charge(601); err == nil || !strings.Contains(err.Error(), "pushed from your address") {
		t.Fatalf("bytes past the address's bound: %v", err)
	}
	rv.Release()

	// a restart rebuilds the counts from the store
	p = open()
	if _, err := p.ReservePlaceholders(r2, "3.3.3.3", []string{hexID('6')}); err == nil {
		t.Fatal("owner's quota forgotten across a restart")
	}
	// expiry frees them
	clk.Advance(21 * time.Minute)
	if _, phs, err := p.Sweep(context.Background()); err != nil || len(phs) != 3 {
		t.Fatalf("sweep: %d placeholders, %v", len(phs), err)
	}
	rv, err = p.ReservePlaceholders(r1, "1.1.1.1", []string{hexID('1'), hexID('2')})
	if err != nil {
		t.Fatalf("after expiry: %v", err)
	}
	if err := rv.Charge(1000); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
	rv.Release()
}
