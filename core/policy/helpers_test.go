package policy

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fiatjaf/eventstore/slicestore"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/nbd-wtf/go-nostr"
)

var (
	pkA = strings.Repeat("a", 64)
	pkB = strings.Repeat("b", 64)
	pkC = strings.Repeat("c", 64)
	pkX = strings.Repeat("e", 64) // stranger
)

const publicURL = "http://127.0.0.1:7334"

func oid(c byte) string { return strings.Repeat(string(c), 40) }

type fakeHeld struct{ evs []*nostr.Event }

func (h *fakeHeld) QueryHeld(_ context.Context, f nostr.Filter) ([]*nostr.Event, error) {
	var out []*nostr.Event
	for _, e := range h.evs {
		if f.Matches(e) {
			out = append(out, e)
		}
	}
	return out, nil
}

type fakeGit struct {
	objects map[string]bool // owner/d/oid
	err     error
	calls   int
}

func (g *fakeGit) add(owner, d string, oids ...string) {
	for _, o := range oids {
		g.objects[owner+"/"+d+"/"+o] = true
	}
}

func (g *fakeGit) HasCommit(_ context.Context, repo nip34.RepoRef, oid string) (bool, error) {
	g.calls++
	if g.err != nil {
		return false, g.err
	}
	return g.objects[repo.Pubkey+"/"+repo.Identifier+"/"+oid], nil
}

type rig struct {
	t     testing.TB
	store *slicestore.SliceStore
	held  *fakeHeld
	git   *fakeGit
	rules *Rules
	svc   nip34.Service
	ts    nostr.Timestamp
}

func newEnv(t testing.TB, tweak func(*Options)) *rig {
	t.Helper()
	svc, err := nip34.ParseService(publicURL)
	if err != nil {
		t.Fatal(err)
	}
	st := &slicestore.SliceStore{}
	if err := st.Init(); err != nil {
		t.Fatal(err)
	}
	e := &rig{t: t, store: st, held: &fakeHeld{}, git: &fakeGit{objects: map[string]bool{}}, svc: svc, ts: 1000}
	opts := Options{Service: svc}
	if tweak != nil {
		tweak(&opts)
	}
	opts.Events, opts.Held, opts.Git = st, e.held, e.git
	e.rules, err = New(opts, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// event builds an unsigned event with a fresh created_at; the rules never
// verify signatures (khatru does that before them).
func (e *rig) event(kind int, pk string, tags ...[]string) *nostr.Event {
	e.ts++
	evt := &nostr.Event{Kind: kind, PubKey: pk, CreatedAt: e.ts, Content: "x"}
	for _, t := range tags {
		evt.Tags = append(evt.Tags, nostr.Tag(t))
	}
	evt.ID = evt.GetID()
	return evt
}

func (e *rig) ann(pk, d string, listed bool, maintainers ...string) *nostr.Event {
	tags := [][]string{{"d", d}, {"r", oid('0'), "euc"}}
	if listed {
		tags = append(tags, []string{"clone", "https://github.com/x/y.git", e.svc.CloneURL(pk, d)}, []string{"relays", "wss://relay.example", e.svc.RelayURL()})
	} else {
		tags = append(tags, []string{"clone", "https://github.com/x/y.git"}, []string{"relays", "wss://relay.example"})
	}
	if len(maintainers) > 0 {
		tags = append(tags, append([]string{"maintainers"}, maintainers...))
	}
	return e.event(nip34.KindAnnouncement, pk, tags...)
}

func (e *rig) state(pk, d string, refs ...string) *nostr.Event {
	tags := [][]string{{"d", d}}
	for i := 0; i+1 < len(refs); i += 2 {
		tags = append(tags, []string{refs[i], refs[i+1]})
	}
	tags = append(tags, []string{"HEAD", "ref: refs/heads/main"})
	return e.event(nip34.KindState, pk, tags...)
}

func coord(pk, d string) string { return "30617:" + pk + ":" + d }

func (e *rig) stored(evts ...*nostr.Event) {
	for _, evt := range evts {
		if err := e.store.SaveEvent(context.Background(), evt); err != nil {
			e.t.Fatal(err)
		}
	}
}

func (e *rig) hold(evts ...*nostr.Event) { e.held.evs = append(e.held.evs, evts...) }

func (e *rig) decide(evt *nostr.Event) Decision {
	return e.rules.Decide(context.Background(), evt, Meta{Source: SourceClient})
}

func (e *rig) release(evt *nostr.Event) Decision {
	return e.rules.Decide(context.Background(), evt, Meta{Source: SourcePurgatory})
}

func want(t *testing.T, d Decision, outcome Outcome, msgPrefix string) {
	t.Helper()
	if d.Outcome != outcome || !strings.HasPrefix(d.Msg, msgPrefix) {
		t.Fatalf("got %s %q %v; want %s with prefix %q", d.Outcome, d.Msg, d.Effects, outcome, msgPrefix)
	}
}

func wantEffect(t *testing.T, d Decision, k EffectKind, r nip34.RepoRef) {
	t.Helper()
	if !d.Has(k, r) {
		t.Fatalf("decision %s %q lacks %s %s; effects %v", d.Outcome, d.Msg, k, r, d.Effects)
	}
}

func wantNoEffect(t *testing.T, d Decision, k EffectKind) {
	t.Helper()
	if d.Has(k, nip34.RepoRef{}) {
		t.Fatalf("decision has unexpected %s: %v", k, d.Effects)
	}
}

func repo(pk, d string) nip34.RepoRef { return nip34.RepoRef{Pubkey: pk, Identifier: d} }

var errBoom = errors.New("boom")
