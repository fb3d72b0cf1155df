package hosting

import (
	"context"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/policy"
)

// G01-P3: the data of a push releases the held announcement and the state
// it satisfies; the repository is aligned to the state before the state is
// published, so a client that sees it can fetch its refs. An issue held
// with the repository goes out too; a PR whose commit is not here stays
// held.
func TestG01_P3_ReleasePublishesWhatTheDataMakesServable(t *testing.T) {
	r := newRigWith(t, rigOptions{hunter: true})
	a := newKey(t)
	ann, repo := r.announce(a, "r")
	issue := a.sign(t, nip34.KindIssue, nostr.Tags{{"a", repo.String()}})
	r.hold(issue, policy.Effect{Kind: policy.AwaitRepo, Repo: repo})
	tip := r.commitTo(repo, "refs/heads/wip", "data")
	st := a.state(t, "r", tip)
	r.hold(st, policy.Effect{Kind: policy.AwaitGitData, Repo: repo, OIDs: []string{tip}})
	missing := strings.Repeat("5", 40)
	pr := a.sign(t, nip34.KindPR, nostr.Tags{{"a", repo.String()}, {"c", missing}})
	r.hold(pr, policy.Effect{Kind: policy.AwaitGitData, Repo: repo, OIDs: []string{missing}})

	r.h.Arrived(context.Background(), repo)

	for _, evt := range []*nostr.Event{ann, st, issue} {
		if !r.isPublished(evt) || r.held(evt) {
			t.Errorf("kind %d not released (published %v, held %v)", evt.Kind, r.isPublished(evt), r.held(evt))
		}
	}
	if r.isPublished(pr) || !r.held(pr) {
		t.Error("a PR whose commit is not here was released")
	}
	if r.published[0].ID != ann.ID {
		t.Errorf("published kind %d first, want the announcement", r.published[0].Kind)
	}
	if refs := r.refs(repo); refs["refs/heads/main"] != tip || len(refs) != 1 {
		t.Errorf("refs %v, want exactly main at the released state's tip", refs)
	}
	if got := strings.Join(r.hunter.forgot, ","); !strings.Contains(got, st.ID) || !strings.Contains(got, ann.ID) {
		t.Errorf("the hunter still hunts for released events (forgot %s)", got)
	}
}

// An event the rules refuse on release (a ban or deletion made while it
// was held) is not published and leaves purgatory; the others go out.
func TestReleaseRechecksEveryEvent(t *testing.T) {
	r := newRig(t)
	a := newKey(t)
	ann, repo := r.announce(a, "r")
	tip := r.commit(repo)
	st := a.state(t, "r", tip)
	r.hold(st, policy.Effect{Kind: policy.AwaitGitData, Repo: repo, OIDs: []string{tip}})
	r.refuse[st.ID] = "blocked: banned while held"

	r.h.OnPush(context.Background(), pushed(repo, nil, "", 0, nil))
	if !r.isPublished(ann) || r.isPublished(st) {
		t.Fatalf("published %v; want the announcement only", r.published)
	}
	if r.held(st) {
		t.Fatal("the refused state stays held")
	}
	if log := r.logs.Take(); !strings.Contains(log, "released event refused on re-check: id="+st.ID) {
		t.Fatalf("the log does not say why the state was not published:\n%s", log)
	}
}

// N34-2: a repository whose authoritative stored state is empty has all
// the data it will have; its held announcement goes out without a push.
func TestReleaseEmptyStateReleasesTheAnnouncement(t *testing.T) {
	r := newRig(t)
	a := newKey(t)
	ann, repo := r.announce(a, "r")
	empty := a.sign(t, nip34.KindState, nostr.Tags{{"d", "r"}})
	r.store.save(t, empty)
	r.h.Apply(context.Background(), empty, policy.Decision{Outcome: policy.Store, Effects: []policy.Effect{{Kind: policy.ReleaseHeld, Repo: repo}}})
	if !r.isPublished(ann) || r.held(ann) {
		t.Fatal("the announcement of a repository whose state is empty stays held")
	}
}

// An OK true means the event is durable: a released event whose
// publishing fails (a store error) stays held, and the next release
// publishes it.
func TestReleaseKeepsWhatFailedToPublish(t *testing.T) {
	r := newRig(t)
	a := newKey(t)
	ann, repo := r.announce(a, "r")
	tip := r.commit(repo)
	st := a.state(t, "r", tip)
	r.hold(st, policy.Effect{Kind: policy.AwaitGitData, Repo: repo, OIDs: []string{tip}})
	r.failPublish[st.ID] = true

	r.h.OnPush(context.Background(), pushed(repo, nil, "", 0, nil))
	if !r.isPublished(ann) || r.held(ann) {
		t.Fatal("the announcement was not released")
	}
	if r.isPublished(st) || !r.held(st) {
		t.Fatalf("a state whose publishing failed is neither stored nor held (published %v, held %v)", r.isPublished(st), r.held(st))
	}

	delete(r.failPublish, st.ID)
	r.h.OnPush(context.Background(), pushed(repo, nil, "", 0, nil))
	if !r.isPublished(st) || r.held(st) {
		t.Fatalf("the next release did not publish the kept state (published %v, held %v)", r.isPublished(st), r.held(st))
	}
}
