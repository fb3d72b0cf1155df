package relay

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/policy"
)

// fakeEffects records what the relay hands to Effects.
type fakeEffects struct {
	mu        sync.Mutex
	held      []*nostr.Event
	decisions []policy.Decision // given to Hold
	metas     []policy.Meta
	applied   []applied
	msg       string
	err       error
}

type applied struct {
	id string
	d  policy.Decision
}

func (h *fakeEffects) Hold(_ context.Context, evt *nostr.Event, d policy.Decision, meta policy.Meta) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		return "", h.err
	}
	h.held = append(h.held, evt)
	h.decisions = append(h.decisions, d)
	h.metas = append(h.metas, meta)
	return h.msg, nil
}

func (h *fakeEffects) Apply(_ context.Context, evt *nostr.Event, d policy.Decision) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.applied = append(h.applied, applied{evt.ID, d})
}

func (h *fakeEffects) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.held)
}

// appliedTo returns the decisions Apply received for id.
func (h *fakeEffects) appliedTo(id string) []policy.Decision {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []policy.Decision
	for _, a := range h.applied {
		if a.id == id {
			out = append(out, a.d)
		}
	}
	return out
}

// byContent routes decisions by the event's content, so one relay can be
// asked for every outcome.
func byContent(evt *nostr.Event) policy.Decision {
	switch {
	case strings.HasPrefix(evt.Content, "hold"):
		return policy.Decision{Outcome: policy.Hold, Msg: policy.MsgPurgatory,
			Effects: []policy.Effect{{Kind: policy.AwaitGitData, OIDs: []string{strings.Repeat("c", 40)}}}}
	case strings.HasPrefix(evt.Content, "reject-evict"):
		return policy.Decision{Outcome: policy.Rejected, Msg: "invalid: this server is no longer listed",
			Effects: []policy.Effect{{Kind: policy.EvictHeld}}}
	case strings.HasPrefix(evt.Content, "reject-raw"):
		return policy.Decision{Outcome: policy.Rejected, Msg: "not tagging an accepted repository"}
	case strings.HasPrefix(evt.Content, "reject"):
		return policy.Decision{Outcome: policy.Rejected, Msg: "invalid: author not authorized for this repository"}
	case strings.HasPrefix(evt.Content, "shadow"):
		return policy.Decision{Outcome: policy.Shadow}
	}
	return policy.Decision{Outcome: policy.Store}
}

type pipelineRig struct {
	tr      *testRelay
	pipe    *fakePipeline
	effects *fakeEffects
	stored  chan *nostr.Event
}

func newPipelineRig(t *testing.T) *pipelineRig {
	rig := &pipelineRig{pipe: &fakePipeline{decide: byContent}, effects: &fakeEffects{},
		stored: make(chan *nostr.Event, 100)}
	rig.tr = startRelay(t, Options{Pipeline: rig.pipe, Effects: rig.effects})
	rig.tr.srv.OnStored(func(_ context.Context, evt *nostr.Event) { rig.stored <- evt })
	return rig
}

// live opens a subscription and waits for its EOSE.
func live(t *testing.T, url string, f nostr.Filter) *client {
	c := connect(t, url)
	frame, _ := json.Marshal([]any{"REQ", "live", f})
	c.send(string(frame))
	c.readUntil(func(m []json.RawMessage) bool { return label(m) == "EOSE" })
	return c
}

// nextEvent returns the next EVENT frame's id on a live subscription.
func nextEvent(t *testing.T, c *client) string {
	t.Helper()
	seen := c.readUntil(func(m []json.RawMessage) bool { return label(m) == "EVENT" })
	var e nostr.Event
	if err := json.Unmarshal(seen[len(seen)-1][2], &e); err != nil {
		t.Fatal(err)
	}
	return e.ID
}

func TestG01P1_HoldAnswersOKTrueAndIsNeitherServedNorBroadcast(t *testing.T) {
	rig := newPipelineRig(t)
	a := newKey(t)
	sub := live(t, rig.tr.ws, nostr.Filter{Authors: []string{a.PK}})
	c := connect(t, rig.tr.ws)

	held := a.event(t, 30617, time.Now().Unix(), nostr.Tags{{"d", "repo"}}, "hold me")
	if ok, msg := publishOK(t, c, held); !ok || msg != policy.MsgPurgatory {
		t.Fatalf("a held event must be answered OK true with the purgatory message, got %v %q", ok, msg)
	}
	if rig.effects.count() != 1 || rig.effects.metas[0].Source != policy.SourceClient || rig.effects.metas[0].Remote != "127.0.0.1" {
		t.Fatalf("Hold must receive the event with client meta: %d %+v", rig.effects.count(), rig.effects.metas)
	}
	// The decision travels with the event (issue 9 part 2).
	if d := rig.effects.decisions[0]; d.Outcome != policy.Hold || len(d.Effects) != 1 || d.Effects[0].Kind != policy.AwaitGitData {
		t.Fatalf("Hold must receive the pipeline's decision, got %+v", d)
	}
	if len(rig.effects.appliedTo(held.ID)) != 0 {
		t.Fatal("a held event must not reach Apply")
	}
	if got := query(t, c, nostr.Filter{IDs: []string{held.ID}}); len(got) != 0 {
		t.Fatal("a held event must not be served")
	}
	// The live subscriber gets the next stored event first: had the held one
	// been broadcast, it would have been written to that socket before.
	stored := a.event(t, 1, time.Now().Unix(), nil, "store me")
	mustPublish(t, c, stored)
	if got := nextEvent(t, sub); got != stored.ID {
		t.Fatalf("live subscriber received %s before the stored event: held events must not be broadcast", got)
	}
	if got := <-rig.stored; got.ID != stored.ID {
		t.Fatalf("OnStored saw %s", got.ID)
	}
	if got := rig.effects.appliedTo(stored.ID); len(got) != 1 || got[0].Outcome != policy.Store {
		t.Fatalf("a stored event must reach Apply once with its decision, got %+v", got)
	}
	if n := rig.pipe.count(held.ID) + rig.pipe.count(stored.ID); n != 2 {
		t.Fatalf("pipeline must run once per event, ran %d times for two events", n)
	}

	// Hold's own message wins; a failing Hold is a clean error.
	rig.effects.mu.Lock()
	rig.effects.msg = "purgatory: PR event stored, waiting for git push with commit abc"
	rig.effects.mu.Unlock()
	pr := a.event(t, 1618, time.Now().Unix(), nil, "hold the PR")
	if ok, msg := publishOK(t, c, pr); !ok || msg != "purgatory: PR event stored, waiting for git push with commit abc" {
		t.Fatalf("Hold's message must reach the client's OK, got %v %q", ok, msg)
	}
	rig.effects.mu.Lock()
	rig.effects.err = errors.New("disk full")
	rig.effects.mu.Unlock()
	if err := publish(t, c, a.event(t, 1618, time.Now().Unix(), nil, "hold fails")); err == nil || !strings.Contains(err.Error(), "error:") {
		t.Fatalf("a failing holder must give OK false error:, got %v", err)
	}
}

func TestPipelineRejectShadowAndDuplicate(t *testing.T) {
	rig := newPipelineRig(t)
	a := newKey(t)
	c := connect(t, rig.tr.ws)
	now := time.Now().Unix()

	rej := a.event(t, 30618, now, nostr.Tags{{"d", "repo"}}, "reject")
	if err := publish(t, c, rej); err == nil || err.Error() != "msg: invalid: author not authorized for this repository" {
		t.Fatalf("Rejected must give OK false with the pipeline's message, got %v", err)
	}
	raw := a.event(t, 1, now, nil, "reject-raw")
	if err := publish(t, c, raw); err == nil || err.Error() != "msg: blocked: not tagging an accepted repository" {
		t.Fatalf("an unprefixed reason must get blocked:, got %v", err)
	}

	if len(rig.effects.appliedTo(rej.ID)) != 0 {
		t.Fatal("a rejection without effects must not reach Apply")
	}
	evict := a.event(t, 30617, now, nostr.Tags{{"d", "repo"}}, "reject-evict")
	if err := publish(t, c, evict); err == nil || !strings.Contains(err.Error(), "no longer listed") {
		t.Fatalf("rejection with effects: %v", err)
	}
	if got := rig.effects.appliedTo(evict.ID); len(got) != 1 || got[0].Outcome != policy.Rejected || got[0].Effects[0].Kind != policy.EvictHeld {
		t.Fatalf("a rejection with effects must reach Apply at once, got %+v", got)
	}

	shadow := a.event(t, 1, now, nil, "shadow")
	if err := publish(t, c, shadow); err != nil {
		t.Fatalf("Shadow must answer OK true: %v", err)
	}
	if got := query(t, c, nostr.Filter{Authors: []string{a.PK}}); len(got) != 0 {
		t.Fatalf("rejected and shadowed events must not be stored, got %v", ids(got))
	}

	ok := a.event(t, 1, now, nil, "fine")
	if accepted, msg := publishOK(t, c, ok); !accepted || msg != "" {
		t.Fatalf("first publication: %v %q", accepted, msg)
	}
	if accepted, msg := publishOK(t, c, ok); !accepted || msg != "duplicate: already have this event" {
		t.Fatalf("a real duplicate must be answered OK true duplicate:, got %v %q", accepted, msg)
	}
	if n := rig.pipe.count(ok.ID); n != 1 {
		t.Fatalf("duplicates must not reach the pipeline again, ran %d times", n)
	}
}

func TestPipelineGuardsDeletions(t *testing.T) {
	rig := newPipelineRig(t)
	a := newKey(t)
	c := connect(t, rig.tr.ws)
	now := time.Now().Unix()
	target := a.event(t, 1, now-10, nil, "target")
	mustPublish(t, c, target)

	refused := a.event(t, 5, now-5, nostr.Tags{{"e", target.ID}}, "reject this deletion")
	if err := publish(t, c, refused); err == nil {
		t.Fatal("a deletion the pipeline rejects must be OK false")
	}
	if got := query(t, c, nostr.Filter{IDs: []string{target.ID}}); len(got) != 1 {
		t.Fatal("a rejected deletion must not delete anything")
	}

	del := a.event(t, 5, now-4, nostr.Tags{{"e", target.ID}}, "")
	mustPublish(t, c, del)
	if got := query(t, c, nostr.Filter{IDs: []string{target.ID}}); len(got) != 0 {
		t.Fatal("an accepted deletion must delete its target")
	}
	if n := rig.pipe.count(del.ID); n != 1 {
		t.Fatalf("the pipeline must run once for a deletion, ran %d times", n)
	}
	if got := rig.effects.appliedTo(del.ID); len(got) != 1 || got[0].Outcome != policy.Store {
		t.Fatalf("a stored deletion must reach Apply, got %+v", got)
	}
	// The target, deleted by its author, is refused from now on, with the
	// one answer (issue 9 part 3).
	if ok, msg := publishOK(t, c, target); ok || msg != msgDeleted {
		t.Fatalf("re-publishing a deleted event: %v %q, want OK false %q", ok, msg, msgDeleted)
	}
}

func TestIngestChecksIDAndSignatureThenTakesClientPath(t *testing.T) {
	rig := newPipelineRig(t)
	a := newKey(t)
	ctx := context.Background()
	meta := policy.Meta{Source: policy.SourceSync, Remote: "wss://peer.example"}
	sub := live(t, rig.tr.ws, nostr.Filter{Authors: []string{a.PK}})

	bad := a.event(t, 1, time.Now().Unix(), nil, "tampered")
	bad.Content = "changed after signing"
	if ok, msg := rig.tr.srv.Ingest(ctx, bad, meta); ok || !strings.HasPrefix(msg, "invalid: id") {
		t.Fatalf("wrong id: %v %q", ok, msg)
	}
	badSig := a.event(t, 1, time.Now().Unix(), nil, "sig")
	badSig.Sig = strings.Repeat("0", 128)
	if ok, msg := rig.tr.srv.Ingest(ctx, badSig, meta); ok || !strings.HasPrefix(msg, "invalid: sig") {
		t.Fatalf("bad signature: %v %q", ok, msg)
	}

	held := a.event(t, 30618, time.Now().Unix(), nostr.Tags{{"d", "r"}}, "hold")
	if ok, msg := rig.tr.srv.Ingest(ctx, held, meta); !ok || !strings.HasPrefix(msg, "purgatory:") {
		t.Fatalf("held synced event: %v %q", ok, msg)
	}
	if rig.effects.metas[0].Source != policy.SourceSync || rig.effects.metas[0].ReceivedAt.IsZero() {
		t.Fatalf("Hold must see the sync meta, got %+v", rig.effects.metas[0])
	}
	good := a.event(t, 1, time.Now().Unix(), nil, "synced")
	if ok, msg := rig.tr.srv.Ingest(ctx, good, meta); !ok || msg != "" {
		t.Fatalf("good synced event: %v %q", ok, msg)
	}
	if got := nextEvent(t, sub); got != good.ID {
		t.Fatalf("synced event must be broadcast (first delivery %s)", got)
	}
	if ok, msg := rig.tr.srv.Ingest(ctx, good, meta); !ok || msg != "duplicate: already have this event" {
		t.Fatalf("synced duplicate: %v %q", ok, msg)
	}
	if ok, msg := rig.tr.srv.Ingest(ctx, a.event(t, 1, time.Now().Unix(), nil, "reject"), meta); ok || !strings.HasPrefix(msg, "invalid:") {
		t.Fatalf("rejected synced event: %v %q", ok, msg)
	}
	// A synced deletion applies like a client's.
	if ok, msg := rig.tr.srv.Ingest(ctx, a.event(t, 5, time.Now().Unix(), nostr.Tags{{"e", good.ID}}, ""), meta); !ok {
		t.Fatalf("synced deletion refused: %q", msg)
	}
	c := connect(t, rig.tr.ws)
	if got := query(t, c, nostr.Filter{IDs: []string{good.ID}}); len(got) != 0 {
		t.Fatal("synced deletion did not delete")
	}
	if ok, _ := rig.tr.srv.Ingest(ctx, good, meta); ok {
		t.Fatal("an event deleted by its author must not be re-ingested")
	}
	rig.pipe.mu.Lock()
	defer rig.pipe.mu.Unlock()
	for _, m := range rig.pipe.metas {
		if m.Source != policy.SourceSync || m.Remote != "wss://peer.example" {
			t.Fatalf("pipeline must see the caller's meta, got %+v", m)
		}
	}
}

func TestPublishBypassesPipelineAndKeepsReplaceSemantics(t *testing.T) {
	pipe := &fakePipeline{decide: func(*nostr.Event) policy.Decision {
		return policy.Decision{Outcome: policy.Rejected, Msg: "invalid: nothing gets in"}
	}}
	tr := startRelay(t, Options{Pipeline: pipe})
	var stored []string
	tr.srv.OnStored(func(_ context.Context, evt *nostr.Event) { stored = append(stored, evt.ID) })
	a := newKey(t)
	sub := live(t, tr.ws, nostr.Filter{Authors: []string{a.PK}})
	now := time.Now().Unix()

	state := a.event(t, 30618, now-10, nostr.Tags{{"d", "repo"}}, "released")
	if err := tr.srv.Publish(context.Background(), state); err != nil {
		t.Fatalf("publish: %v", err)
	}
	if got := nextEvent(t, sub); got != state.ID {
		t.Fatalf("released event must be broadcast, got %s", got)
	}
	if pipe.count(state.ID) != 0 {
		t.Fatal("Publish must not ask the pipeline")
	}
	if err := tr.srv.Publish(context.Background(), state); err != nil {
		t.Fatalf("publishing a stored event again must be a no-op: %v", err)
	}
	older := a.event(t, 30618, now-20, nostr.Tags{{"d", "repo"}}, "older")
	if err := tr.srv.Publish(context.Background(), older); err == nil || !strings.Contains(err.Error(), "duplicate:") {
		t.Fatalf("an older addressable event must not replace the newer one: %v", err)
	}
	if len(stored) != 1 || stored[0] != state.ID {
		t.Fatalf("OnStored calls: %v", stored)
	}
	// A late release of an event its author deleted meanwhile is refused.
	mustDelete := a.event(t, 1617, now-5, nil, "patch")
	if err := tr.srv.Publish(context.Background(), a.event(t, 5, now-1, nostr.Tags{{"e", mustDelete.ID}}, "")); err != nil {
		t.Fatalf("publish deletion: %v", err)
	}
	if err := tr.srv.Publish(context.Background(), mustDelete); err == nil || !strings.HasPrefix(strings.TrimPrefix(err.Error(), "publish "+mustDelete.ID+": "), "blocked:") {
		t.Fatalf("a deleted event must not be released: %v", err)
	}
}

// The decision travels with the event: Effects gets the very decision the
// pipeline made, with its effects, when the event is held, after it is
// stored, and at once for a rejection that has effects (an eviction).
func TestDecisionReachesEffectsWithTheEvent(t *testing.T) {
	repo := nip34.RepoRef{Pubkey: strings.Repeat("ab", 32), Identifier: "r"}
	withEffect := func(o policy.Outcome, k policy.EffectKind) policy.Decision {
		return policy.Decision{Outcome: o, Effects: []policy.Effect{{Kind: k, Repo: repo}}}
	}
	eff := &fakeEffects{}
	pipe := &fakePipeline{decide: func(evt *nostr.Event) policy.Decision {
		switch evt.Content {
		case "store":
			return withEffect(policy.Store, policy.AlignRepo)
		case "evict":
			d := withEffect(policy.Rejected, policy.EvictHeld)
			d.Msg = "invalid: announcement no longer lists this service"
			return d
		case "reject":
			return policy.Decision{Outcome: policy.Rejected, Msg: "invalid: no"}
		}
		return withEffect(policy.Hold, policy.CreateRepo)
	}}
	tr := startRelay(t, Options{Pipeline: pipe, Effects: eff})
	c := connect(t, tr.ws)
	a := newKey(t)
	mustPublish(t, c, a.event(t, 1, time.Now().Unix(), nil, "store"))
	mustPublish(t, c, a.event(t, 1, time.Now().Unix(), nil, "hold"))
	if err := publish(t, c, a.event(t, 1, time.Now().Unix(), nil, "evict")); err == nil {
		t.Fatal("a rejection must be OK false")
	}
	if err := publish(t, c, a.event(t, 1, time.Now().Unix(), nil, "reject")); err == nil {
		t.Fatal("a rejection must be OK false")
	}
	eff.mu.Lock()
	defer eff.mu.Unlock()
	if len(eff.applied) != 2 || !eff.applied[0].d.Has(policy.AlignRepo, repo) || !eff.applied[1].d.Has(policy.EvictHeld, repo) {
		t.Fatalf("applied %+v, want the stored decision's AlignRepo, then the rejection's EvictHeld, and nothing for a plain rejection", eff.applied)
	}
	if len(eff.held) != 1 || eff.held[0].Content != "hold" || !eff.decisions[0].Has(policy.CreateRepo, repo) {
		t.Fatalf("held %d events (decisions %+v), want the one the pipeline held with its CreateRepo", len(eff.held), eff.decisions)
	}
}
