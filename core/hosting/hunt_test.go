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

// A held state asks the hunter for its missing objects, with the clone
// URLs of the announcements of the repository's confirmed maintainers
// (never an invitee's, maintainers-v3.md §6.8) and a PR's own clone tags;
// a synced or re-checked event is hunted at once, a client's after its
// grace. A /prs/ repository's data comes by push only: never hunted.
func TestHoldAsksTheHunter(t *testing.T) {
	r := newRigWith(t, rigOptions{hunter: true})
	ctx := context.Background()
	a, b, invitee := newKey(t), newKey(t), newKey(t)
	r.store.save(t, a.sign(t, nip34.KindAnnouncement, nostr.Tags{{"d", "r"}, {"maintainers", b.PK, invitee.PK}, {"clone", "https://a.example/r.git"}}))
	r.store.save(t, b.sign(t, nip34.KindAnnouncement, nostr.Tags{{"d", "r"}, {"maintainers", a.PK}, {"clone", "https://b.example/r.git"}}))
	r.store.save(t, invitee.sign(t, nip34.KindAnnouncement, nostr.Tags{{"d", "r"}, {"clone", "https://evil.example/r.git"}}))
	repo := nip34.RepoRef{Pubkey: a.PK, Identifier: "r"}
	tip := strings.Repeat("8", 40)

	st := a.state(t, "r", tip)
	if _, err := r.h.Hold(ctx, st, policy.Decision{Outcome: policy.Hold, Effects: []policy.Effect{{Kind: policy.AwaitGitData, Repo: repo, OIDs: []string{tip}}}}, policy.Meta{Source: policy.SourceSync}); err != nil {
		t.Fatal(err)
	}
	pr := a.pr(t, repo, strings.Repeat("9", 40), nostr.Tag{"clone", "https://fork.example/r.git"})
	if _, err := r.h.Hold(ctx, pr, policy.Decision{Outcome: policy.Hold, Effects: []policy.Effect{{Kind: policy.AwaitGitData, Repo: repo, OIDs: []string{strings.Repeat("9", 40)}}}}, policy.Meta{Source: policy.SourceClient, Remote: "198.51.100.1"}); err != nil {
		t.Fatal(err)
	}
	prs := nip34.PRsRepo(a.PK, "r")
	viaPRs := a.pr(t, repo, strings.Repeat("a", 40))
	r.hold(viaPRs, policy.Effect{Kind: policy.AwaitGitData, Repo: prs, OIDs: []string{strings.Repeat("a", 40)}})

	if len(r.hunter.needs) != 2 {
		t.Fatalf("the hunter got %d needs, want the state's and the PR's: %+v", len(r.hunter.needs), r.hunter.needs)
	}
	n := r.hunter.needs[0]
	if n.EventID != st.ID || n.Repo != repo || !slices.Equal(n.OIDs, []string{tip}) || !n.FromSync {
		t.Errorf("state's need %+v", n)
	}
	slices.Sort(n.Sources)
	if want := []string{"https://a.example/r.git", "https://b.example/r.git"}; !slices.Equal(n.Sources, want) {
		t.Errorf("sources %v, want the confirmed maintainers' clone URLs %v", n.Sources, want)
	}
	n = r.hunter.needs[1]
	if n.EventID != pr.ID || n.FromSync || !slices.Contains(n.Sources, "https://fork.example/r.git") {
		t.Errorf("PR's need %+v, want its own clone tag, after the client's grace", n)
	}
}

// After a restart the hunter's queue is empty while purgatory is not:
// Requeue gives it every held event that waits for objects, and HuntHeld
// another instance's entry, a client's after its grace.
func TestRequeueAndHuntHeld(t *testing.T) {
	r := newRig(t)
	a := newKey(t)
	_, repo := r.announce(a, "r")
	tip := strings.Repeat("b", 40)
	st := a.state(t, "r", tip)
	r.hold(st, policy.Effect{Kind: policy.AwaitGitData, Repo: repo, OIDs: []string{tip}})

	h := &hunter{}
	r.h.hunter = h // the hunter starts (the leader's), empty
	r.h.Requeue(context.Background())
	if len(h.needs) != 1 || h.needs[0].EventID != st.ID || !h.needs[0].FromSync {
		t.Fatalf("requeued %+v, want the held state only (the announcement needs no objects)", h.needs)
	}
	r.h.HuntHeld(context.Background(), purgatory.Entry{Event: st, Repo: repo, Needs: []string{tip}, Remote: "198.51.100.1"})
	if len(h.needs) != 2 || h.needs[1].FromSync {
		t.Fatalf("needs %+v, want a client's entry hunted after its grace", h.needs)
	}
}

// The hunter's hourly re-check: a repository whose refs differ from its
// stored state is aligned on the spot when the objects are here, and
// listed with the objects still missing and where to fetch them otherwise.
func TestDrifted(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	a, b := newKey(t), newKey(t)
	r.store.save(t, a.sign(t, nip34.KindAnnouncement, nostr.Tags{{"d", "here"}}))
	r.store.save(t, b.sign(t, nip34.KindAnnouncement, nostr.Tags{{"d", "away"}, {"clone", "https://b.example/away.git"}}))
	here, away := nip34.RepoRef{Pubkey: a.PK, Identifier: "here"}, nip34.RepoRef{Pubkey: b.PK, Identifier: "away"}
	for _, repo := range []nip34.RepoRef{here, away} {
		if err := r.repos.Create(ctx, repo); err != nil {
			t.Fatal(err)
		}
	}
	tip := r.commitTo(here, "refs/heads/other", "here")
	r.store.save(t, a.state(t, "here", tip))
	missing := strings.Repeat("c", 40)
	r.store.save(t, b.state(t, "away", missing))

	needs, err := r.h.Drifted(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if refs := r.refs(here); refs["refs/heads/main"] != tip || len(refs) != 1 {
		t.Errorf("refs %v, want the drifted repository aligned to its state", refs)
	}
	if len(needs) != 1 || needs[0].Repo != away || !slices.Equal(needs[0].OIDs, []string{missing}) || !slices.Equal(needs[0].Sources, []string{"https://b.example/away.git"}) {
		t.Errorf("needs %+v, want the missing object of %s from its clone URL", needs, away.URLPath())
	}
	// a cancelled re-check stops
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := r.h.Drifted(cctx); err == nil {
		t.Error("a cancelled re-check reported no error")
	}
}
