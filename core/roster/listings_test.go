package roster

import (
	"context"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// G01-R2x (maintainers-v3.md §3 [R]): the index of who lists whom finds the
// inviters of an announcement that names nobody back (maintainers-v3 case
// 20's fork), loaded from the store at start and fed at acceptance; a
// replaced version's edges go with it, a forgotten held one's too, and
// every answer is checked against the author's latest announcement.
func TestRosterListingsFindInviteesNamingNobody(t *testing.T) {
	r := newRig(t)
	a1 := ann(kA, "d", 2, "", M(kA), m(kB), mt(kA, kB))
	forkB := ann(kB, "d", 1, "")
	r.store.add(a1, forkB, ann(kE, "other", 1, "", mt(kC)))
	inviters := func(of *nostr.Event) string {
		t.Helper()
		v := r.view("d")
		e, ok := v.Latest(of.PubKey)
		if !ok {
			t.Fatalf("no announcement of %s", of.PubKey[:1])
		}
		return short(pubkeys(v.Inviters(e.Announcement)))
	}
	if got := inviters(forkB); got != "" {
		t.Fatalf("control: before the index is loaded, Inviters(B's fork) = %q", got)
	}
	if err := r.src.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := inviters(forkB); got != "a" {
		t.Fatalf("after Load, Inviters(B's fork) = %q, want a", got)
	}
	// Named for another identifier only: not an inviter here.
	c := ann(kC, "d", 1, "")
	r.store.add(c)
	if got := inviters(c); got != "" {
		t.Fatalf("Inviters(C) = %q: E names C for another identifier only", got)
	}

	// A replaces its announcement without B: the old edges go.
	a2 := ann(kA, "d", 3, "", M(kA))
	r.store.evs = []*nostr.Event{a2, forkB, c}
	r.src.Observe(a2)
	if got := r.src.listed.naming(kB, "d"); len(got) != 0 {
		t.Fatalf("after A's replacement the index still says %q names B", short(got))
	}
	// An older version observed later changes nothing.
	r.src.Observe(a1)
	if got := r.src.listed.naming(kB, "d"); len(got) != 0 {
		t.Fatalf("an older version re-indexed edges: %q", short(got))
	}

	// A held inviter: found while held, forgotten when it expires.
	h := ann(kD, "d", 5, "", m(kC))
	r.held.evs = append(r.held.evs, h)
	r.src.Observe(h)
	if got := inviters(c); got != "d" {
		t.Fatalf("Inviters(C) with D's held announcement = %q, want d", got)
	}
	r.held.evs = nil
	r.src.Forget(h)
	if got := r.src.listed.naming(kC, "d"); len(got) != 0 {
		t.Fatalf("a forgotten held announcement is still indexed: %q", short(got))
	}

	// A stale edge (its announcement deleted from the store without a
	// Forget) is checked and not believed.
	r.src.Observe(ann(kE, "d", 6, "", m(kC)))
	if got := inviters(c); got != "" {
		t.Fatalf("Inviters(C) from an edge whose announcement is gone = %q", got)
	}
}
