package sigcheck

import (
	"testing"
	"unsafe"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/internal/testkit"
)

// TestEventVerifiesASignatureOnce: an event checked again (a catch-up
// session verified it, then the write path checks it) costs one signature
// verification, not two (issue 27 part 3).
func TestEventVerifiesASignatureOnce(t *testing.T) {
	evt := testkit.NewKey(t).Event(t, 1617, 1700000000, nostr.Tags{{"a", "30617:x:y"}}, "diff")
	before := verifies.Load()
	for pass := range 3 {
		if r := Event(evt); r != Valid {
			t.Fatalf("pass %d: %d", pass, r)
		}
	}
	if n := Verifications() - before; n != 1 {
		t.Fatalf("three checks of one event verified its signature %d times, want 1", n)
	}
	Forget()
	if Event(evt) != Valid || Verifications()-before != 2 {
		t.Fatalf("after Forget the event was not verified again (%d verifications)", Verifications()-before)
	}
}

// TestVerifiedEventTamperedIsStillRefused: after an event verified, a copy
// with its content, tags, created_at, kind, key or signature changed (id kept,
// or recomputed) is refused as go-nostr refuses it: the remembered
// verification covers only the exact id, key and signature it checked.
func TestVerifiedEventTamperedIsStillRefused(t *testing.T) {
	k := testkit.NewKey(t)
	evt := k.Event(t, 1617, 1700000000, nostr.Tags{{"a", "30617:x:y"}}, "diff --git a/x")
	sibling := k.Event(t, 1617, 1700000001, nostr.Tags{{"a", "30617:x:y"}}, "another patch")
	stranger := testkit.NewKey(t).Event(t, 1617, 1700000000, nostr.Tags{{"a", "30617:x:y"}}, "diff --git a/x")
	for _, e := range []*nostr.Event{evt, sibling, stranger} {
		if Event(e) != Valid {
			t.Fatal("a control event does not check")
		}
	}
	cases := map[string]func(e *nostr.Event){
		"content changed, id kept":       func(e *nostr.Event) { e.Content += " " },
		"tag changed, id kept":           func(e *nostr.Event) { e.Tags = nostr.Tags{{"a", "30617:x:z"}} },
		"created_at changed, id kept":    func(e *nostr.Event) { e.CreatedAt++ },
		"kind changed, id kept":          func(e *nostr.Event) { e.Kind = 1 },
		"content changed, id recomputed": func(e *nostr.Event) { e.Content += " "; e.ID = e.GetID() },
		"the author's other signature":   func(e *nostr.Event) { e.Sig = sibling.Sig },
		"another author, id recomputed":  func(e *nostr.Event) { e.PubKey = stranger.PubKey; e.ID = e.GetID() },
		"another author's event's sig":   func(e *nostr.Event) { e.PubKey = stranger.PubKey; e.ID = stranger.ID; e.Sig = sibling.Sig },
		"one bit of s":                   func(e *nostr.Event) { e.Sig = flip(e.Sig, 100) },
		"another event's id and sig":     func(e *nostr.Event) { e.ID, e.Sig = sibling.ID, sibling.Sig },
	}
	for name, f := range cases {
		e := *evt
		e.Tags = append(nostr.Tags(nil), evt.Tags...)
		f(&e)
		want := goNostr(&e)
		if want == Valid {
			t.Fatalf("%s: go-nostr accepts it (the case is wrong)", name)
		}
		for pass := range 2 {
			if got := Event(&e); got != want {
				t.Errorf("%s (pass %d): Event = %d, go-nostr = %d", name, pass, got, want)
			}
		}
	}
	if Event(evt) != Valid {
		t.Fatal("the original fails after its tampered copies")
	}
}

// TestVerifiedTableIsBounded: whatever is verified, the table holds at most
// maxVerified proofs of 128 bytes (an anonymous cost has a bound), keeps the
// newest and forgets the oldest first.
func TestVerifiedTableIsBounded(t *testing.T) {
	if s := unsafe.Sizeof(proof{}); s != 128 {
		t.Fatalf("a proof is %d bytes, want 128", s)
	}
	var v = &verifiedSet{m: map[proof]struct{}{}}
	at := func(i int) *proof {
		var p proof
		p.id[0], p.id[1], p.id[2] = byte(i), byte(i>>8), byte(i>>16)
		return &p
	}
	const n = maxVerified + 100
	for i := range n {
		v.add(at(i))
		v.add(at(i)) // a second add of the same proof takes no other place
	}
	if len(v.m) != maxVerified {
		t.Fatalf("the table holds %d proofs, bound %d", len(v.m), maxVerified)
	}
	if v.has(at(0)) || v.has(at(99)) {
		t.Fatal("the oldest proofs are still remembered")
	}
	if !v.has(at(100)) || !v.has(at(n-1)) {
		t.Fatal("the newest proofs were forgotten")
	}
}
