package hosting

import (
	"context"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/policy"
)

// maintainers-v3.md §3 [R]: a state refused because its author was not
// (yet) a maintainer goes through the write path again, after the
// request, once an announcement of its identifier is stored or held; and
// once only. Another identifier's announcement leaves it alone.
func TestRecheckRejectedStatesAfterAnAnnouncement(t *testing.T) {
	r := newRigWith(t, rigOptions{ingest: true})
	ctx := context.Background()
	a, b := newKey(t), newKey(t)
	refused := b.state(t, "r", "0000000000000000000000000000000000000007")
	r.h.roster.RememberRejected(refused)

	r.announce(a, "other")
	r.runSpawned()
	if len(r.ingested) != 0 {
		t.Fatalf("an announcement of another identifier re-evaluated %d states", len(r.ingested))
	}
	ann := a.sign(t, nip34.KindAnnouncement, nostr.Tags{{"d", "r"}, {"maintainers", b.PK}})
	r.store.save(t, ann)
	r.h.Apply(ctx, ann, policy.Decision{Outcome: policy.Store})
	if len(r.ingested) != 0 {
		t.Fatal("the re-evaluation ran inside the request")
	}
	r.runSpawned()
	if len(r.ingested) != 1 || r.ingested[0].ID != refused.ID {
		t.Fatalf("re-evaluated %v, want the refused state", r.ingested)
	}
	r.h.Recheck(ctx, "r")
	r.runSpawned()
	if len(r.ingested) != 1 {
		t.Fatalf("the state was re-evaluated %d times, want once", len(r.ingested))
	}
}

// Issue 24 part 8: an announcement another instance took re-runs this
// instance's own refused states (Recheck).
func TestRecheckForAnotherInstancesAnnouncement(t *testing.T) {
	r := newRigWith(t, rigOptions{ingest: true})
	refused := newKey(t).state(t, "r", "0000000000000000000000000000000000000008")
	r.h.roster.RememberRejected(refused)
	r.h.Recheck(context.Background(), "r")
	r.runSpawned()
	if len(r.ingested) != 1 || r.ingested[0].ID != refused.ID {
		t.Fatalf("re-evaluated %v, want the refused state", r.ingested)
	}
}
