package hosting

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/core/purgatory"
)

// A replacement announcement that no longer lists this server retires the
// repository: an empty one is removed, one with git data is kept for the
// operator (grasp.md §9.4) and the log says so.
func TestRetireRemovesOnlyEmptyRepos(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	a, b := newKey(t), newKey(t)
	_, empty := r.announce(a, "r")
	_, full := r.announce(b, "r")
	r.commit(full)
	r.logs.Take()
	for _, k := range []key{a, b} {
		gone := k.sign(t, nip34.KindAnnouncement, nostr.Tags{{"d", "r"}})
		r.h.Apply(ctx, gone, policy.Decision{Outcome: policy.Rejected, Msg: "invalid: does not list this server",
			Effects: []policy.Effect{{Kind: policy.RemoveRepo, Repo: nip34.RepoRef{Pubkey: k.PK, Identifier: "r"}}}})
	}
	if r.repos.Exists(empty) {
		t.Error("the empty repository of an announcement that no longer lists this server was kept")
	}
	if !r.repos.Exists(full) {
		t.Error("a repository with git data was removed")
	}
	if log := r.logs.Take(); !strings.Contains(log, "repo no longer announced here; keeping its git data: repo="+full.URLPath()) {
		t.Errorf("the log does not say the data was kept:\n%s", log)
	}
}

// A held announcement whose replacement no longer lists this server is
// evicted from purgatory, and its empty repository goes with it.
func TestEvictHeldAnnouncementOnRejectedReplacement(t *testing.T) {
	r := newRig(t)
	a := newKey(t)
	ann, repo := r.announce(a, "r")
	repl := a.sign(t, nip34.KindAnnouncement, nostr.Tags{{"d", "r"}})
	r.h.Apply(context.Background(), repl, policy.Decision{Outcome: policy.Rejected, Msg: "invalid: does not list this server",
		Effects: []policy.Effect{{Kind: policy.EvictHeld, Repo: repo}}})
	if r.held(ann) || r.repos.Exists(repo) {
		t.Fatalf("held %v, repo exists %v; want both gone", r.held(ann), r.repos.Exists(repo))
	}
}

// The operator's ban (issue 25 part 3) evicts what the banned key holds:
// the events leave purgatory, the hunter stops hunting them, the empty
// repository its held announcement created is removed, unless a stored
// announcement still announces it.
func TestEvictForTheOperator(t *testing.T) {
	r := newRigWith(t, rigOptions{hunter: true})
	ctx := context.Background()
	banned, stays, other := newKey(t), newKey(t), newKey(t)
	ann, repo := r.announce(banned, "r")
	tip := strings.Repeat("3", 40)
	st := banned.state(t, "r", tip)
	r.hold(st, policy.Effect{Kind: policy.AwaitGitData, Repo: repo, OIDs: []string{tip}})
	// stays has a stored announcement and a newer one held
	r.store.save(t, stays.sign(t, nip34.KindAnnouncement, nostr.Tags{{"d", "s"}}))
	annStays, repoStays := r.announce(stays, "s", nostr.Tag{"description", "newer"})
	annOther, _ := r.announce(other, "o")

	n := r.h.Evict(ctx, func(e *purgatory.Entry) bool { return e.Event.PubKey == banned.PK }, "its key was banned")
	if n != 2 || r.held(ann) || r.held(st) {
		t.Fatalf("evicted %d, announcement held %v, state held %v; want both evicted", n, r.held(ann), r.held(st))
	}
	if r.repos.Exists(repo) {
		t.Error("the banned key's empty repository was kept")
	}
	if !slices.Contains(r.hunter.forgot, st.ID) {
		t.Error("the hunter still hunts for an evicted state")
	}
	if !r.held(annOther) {
		t.Error("another key's announcement was evicted")
	}

	if n := r.h.Evict(ctx, func(e *purgatory.Entry) bool { return e.Event.ID == annStays.ID }, "the event was banned"); n != 1 {
		t.Fatalf("evicted %d, want 1", n)
	}
	if !r.repos.Exists(repoStays) {
		t.Error("a repository a stored announcement still announces was removed")
	}
}
