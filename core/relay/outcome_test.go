package relay

import (
	"context"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/outcome"
	"github.com/grasp-dev/grasp/core/policy"
)

// Accept answers what became of each event as a kind, the one sync and the
// metrics count by; the OK text is that kind's (issue 28 part 1).
func TestAcceptAnswersTheOutcomeAsAType(t *testing.T) {
	rig := newPipelineRig(t)
	a := newKey(t)
	ctx := context.Background()
	meta := policy.Meta{Source: policy.SourceSync, Remote: "wss://peer.example"}
	now := time.Now().Unix()

	check := func(what string, evt *nostr.Event, want outcome.Kind, told outcome.Kind) {
		t.Helper()
		r := rig.tr.srv.Accept(ctx, evt, meta)
		if r.Kind != want || r.Told() != told {
			t.Fatalf("%s: kind %v told %v (%q), want %v told %v", what, r.Kind, r.Told(), r.Text(), want, told)
		}
		if ok, msg := rig.tr.srv.Ingest(ctx, evt, meta); want == outcome.Stored && (!ok || msg != "duplicate: already have this event") {
			t.Fatalf("%s: the text form of a second write is %v %q", what, ok, msg)
		}
	}
	stored := a.event(t, 1, now, nil, "store me")
	check("stored", stored, outcome.Stored, outcome.Stored)
	check("duplicate", stored, outcome.Duplicate, outcome.Duplicate)
	check("held", a.event(t, 30618, now, nostr.Tags{{"d", "r"}}, "hold"), outcome.Held, outcome.Held)
	check("shadowed", a.event(t, 1, now, nil, "shadow"), outcome.Shadowed, outcome.Stored)
	check("refused by the pipeline", a.event(t, 1, now, nil, "reject"), outcome.Invalid, outcome.Invalid)
	check("refused without a prefix", a.event(t, 1, now, nil, "reject-raw"), outcome.Blocked, outcome.Blocked)
	check("ephemeral", a.event(t, 20001, now, nil, "gone"), outcome.Blocked, outcome.Blocked)

	newer := a.event(t, 30617, now, nostr.Tags{{"d", "repo"}}, "store")
	check("addressable", newer, outcome.Stored, outcome.Stored)
	check("older version", a.event(t, 30617, now-10, nostr.Tags{{"d", "repo"}}, "store"), outcome.Outdated, outcome.Outdated)

	del := a.event(t, 5, now, nostr.Tags{{"e", stored.ID}}, "")
	check("deletion", del, outcome.Stored, outcome.Stored)
	if r := rig.tr.srv.Accept(ctx, stored, meta); r.Kind != outcome.Blocked || r.Text() != msgDeleted {
		t.Fatalf("deleted by its author: %v %q", r.Kind, r.Text())
	}
	if err := rig.tr.srv.Publish(ctx, stored); err == nil {
		t.Fatal("publishing a deleted event must fail")
	} else if r, ok := outcome.Of(err); !ok || r.Kind != outcome.Blocked {
		t.Fatalf("Publish's error carries %v %v, want blocked", r.Kind, ok)
	}
}
