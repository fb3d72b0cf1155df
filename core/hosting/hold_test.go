package hosting

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/core/purgatory"
)

// G01-P2: a held announcement's bare repository exists before the OK, so
// a git client polling info/refs right after publishing finds it (empty);
// the OK text is the purgatory one, and the entry remembers the client
// address its quotas count.
func TestG01_P2_HoldCreatesTheRepoBeforeTheOK(t *testing.T) {
	r := newRig(t)
	a := newKey(t)
	repo := nip34.RepoRef{Pubkey: a.PK, Identifier: "r"}
	ann := a.sign(t, nip34.KindAnnouncement, nostr.Tags{{"d", "r"}})
	d := policy.Decision{Outcome: policy.Hold, Effects: []policy.Effect{{Kind: policy.CreateRepo, Repo: repo}}}
	msg, err := r.h.Hold(context.Background(), ann, d, policy.Meta{Source: policy.SourceClient, Remote: "198.51.100.7"})
	if err != nil || msg != policy.MsgPurgatory {
		t.Fatalf("Hold = %q, %v; want %q", msg, err, policy.MsgPurgatory)
	}
	if !r.repos.Exists(repo) || len(r.refs(repo)) != 0 {
		t.Fatalf("the announced repo does not answer git as an empty repository")
	}
	e, ok := r.purg.Get(ann.ID)
	if !ok || e.Repo != repo || e.Remote != "198.51.100.7" || e.Relay != "" {
		t.Fatalf("held entry %+v (%v), want repo %s counted against the client address", e, ok, repo)
	}
}

// An event from a sync peer is counted against the relay it came from
// (F26), not a client address; an announcement held without effects waits
// for its own coordinate.
func TestHoldFromSyncCountsTheRelay(t *testing.T) {
	r := newRig(t)
	a := newKey(t)
	ann := a.sign(t, nip34.KindAnnouncement, nostr.Tags{{"d", "r"}})
	if _, err := r.h.Hold(context.Background(), ann, policy.Decision{Outcome: policy.Hold}, policy.Meta{Source: policy.SourceSync, Remote: "wss://peer.example"}); err != nil {
		t.Fatal(err)
	}
	e, ok := r.purg.Get(ann.ID)
	if !ok || e.Relay != "wss://peer.example" || e.Remote != "" || e.Repo != (nip34.RepoRef{Pubkey: a.PK, Identifier: "r"}) {
		t.Fatalf("held entry %+v (%v), want the announcement's coordinate counted against the relay", e, ok)
	}
}

// G01-P6: the same event held twice is a duplicate in purgatory, not an error.
func TestG01_P6_HoldTwiceIsADuplicate(t *testing.T) {
	r := newRig(t)
	a := newKey(t)
	ann, repo := r.announce(a, "r")
	d := policy.Decision{Outcome: policy.Hold, Effects: []policy.Effect{{Kind: policy.CreateRepo, Repo: repo}}}
	msg, err := r.h.Hold(context.Background(), ann, d, policy.Meta{})
	if err != nil || msg != policy.MsgInPurgatory {
		t.Fatalf("second Hold = %q, %v; want %q", msg, err, policy.MsgInPurgatory)
	}
	if r.purg.Len() != 1 {
		t.Fatalf("%d held, want 1", r.purg.Len())
	}
}

// A hold over a purgatory quota is refused with the quota's text, and
// nothing is held nor created.
func TestHoldOverQuotaIsRefused(t *testing.T) {
	r := newRigWith(t, rigOptions{purg: purgatory.Options{Quotas: purgatory.Quotas{MaxHeldPerRemote: 1}}})
	a := newKey(t)
	meta := policy.Meta{Source: policy.SourceClient, Remote: "198.51.100.7"}
	first := a.sign(t, nip34.KindAnnouncement, nostr.Tags{{"d", "one"}})
	if _, err := r.h.Hold(context.Background(), first, policy.Decision{Outcome: policy.Hold}, meta); err != nil {
		t.Fatal(err)
	}
	second := a.sign(t, nip34.KindAnnouncement, nostr.Tags{{"d", "two"}})
	repo := nip34.RepoRef{Pubkey: a.PK, Identifier: "two"}
	d := policy.Decision{Outcome: policy.Hold, Effects: []policy.Effect{{Kind: policy.CreateRepo, Repo: repo}}}
	msg, err := r.h.Hold(context.Background(), second, d, meta)
	var refusal *policy.Refusal
	if !errors.As(err, &refusal) || msg != "" || refusal.Msg == "" {
		t.Fatalf("Hold over quota = %q, %v; want a refusal with the quota's text", msg, err)
	}
	if r.held(second) || r.repos.Exists(repo) {
		t.Fatal("a refused announcement was held or got a repository")
	}
}

// Issue 10 part 4: an announcement whose repository cannot be made is
// refused with a readable error and not kept, so an OK true always means
// the repository answers git.
func TestHoldRefusedWhenTheRepoCannotBeMade(t *testing.T) {
	r := newRig(t)
	a := newKey(t)
	repo := nip34.RepoRef{Pubkey: a.PK, Identifier: "r"}
	dir, err := r.repos.Path(repo)
	if err != nil {
		t.Fatal(err)
	}
	// the owner's directory is a file: nothing can be made under it
	if err := os.MkdirAll(filepath.Dir(filepath.Dir(dir)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Dir(dir), []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	ann := a.sign(t, nip34.KindAnnouncement, nostr.Tags{{"d", "r"}})
	d := policy.Decision{Outcome: policy.Hold, Effects: []policy.Effect{{Kind: policy.CreateRepo, Repo: repo}}}
	_, err = r.h.Hold(context.Background(), ann, d, policy.Meta{})
	var refusal *policy.Refusal
	if !errors.As(err, &refusal) || !strings.HasPrefix(refusal.Msg, "error: could not create the repository") {
		t.Fatalf("Hold = %v, want the error: refusal", err)
	}
	if r.held(ann) {
		t.Fatal("the announcement whose repository could not be made stays held")
	}
}

// The rules' own text is the OK message when they give one.
func TestHoldAnswersTheRulesText(t *testing.T) {
	r := newRig(t)
	a := newKey(t)
	_, repo := r.announce(a, "r")
	issue := a.sign(t, nip34.KindIssue, nostr.Tags{{"a", repo.String()}})
	const text = "purgatory: waits for its repository's announcement"
	d := policy.Decision{Outcome: policy.Hold, Msg: text, Effects: []policy.Effect{{Kind: policy.AwaitRepo, Repo: repo}}}
	msg, err := r.h.Hold(context.Background(), issue, d, policy.Meta{})
	if err != nil || msg != text {
		t.Fatalf("Hold = %q, %v; want the rules' text", msg, err)
	}
	if e, _ := r.purg.Get(issue.ID); !e.WithRepo || e.Repo != repo {
		t.Fatalf("held %+v, want it waiting with %s", e, repo)
	}
}

// A state held for the data of two maintainers' repositories is released
// by a push to either (the second is its Also), and a comment held with
// it (AwaitEvent) goes out with it.
func TestHoldWaitsForEveryRepoItNames(t *testing.T) {
	r := newRig(t)
	a, b := newKey(t), newKey(t)
	_, repoA := r.announce(a, "r", nostr.Tag{"maintainers", b.PK})
	_, repoB := r.announce(b, "r", nostr.Tag{"maintainers", a.PK})
	tip := r.commitTo(repoB, "refs/heads/side", "b's data")
	st := a.state(t, "r", tip)
	r.hold(st,
		policy.Effect{Kind: policy.AwaitGitData, Repo: repoA, OIDs: []string{tip}},
		policy.Effect{Kind: policy.AwaitGitData, Repo: repoB, OIDs: []string{tip}})
	e, _ := r.purg.Get(st.ID)
	if e.Repo != repoA || !slices.Equal(e.Needs, []string{tip}) || !slices.Equal(e.Also, []nip34.RepoRef{repoB}) {
		t.Fatalf("held %+v, want it waiting for %s, also %s", e, repoA, repoB)
	}
	comment := a.sign(t, nip34.KindComment, nostr.Tags{{"E", st.ID}})
	r.hold(comment, policy.Effect{Kind: policy.AwaitEvent, EventID: st.ID, Repo: repoA})
	if e, _ := r.purg.Get(comment.ID); e.AwaitEvent != st.ID || e.Repo != repoA {
		t.Fatalf("held %+v, want it waiting for %s", e, st.ID)
	}

	r.h.OnPush(context.Background(), pushed(repoB, nil, "", 0, nil))
	if !r.isPublished(st) || !r.isPublished(comment) || r.held(st) || r.held(comment) {
		t.Fatalf("the data in %s released %d events; want the state and the comment waiting for it", repoB.URLPath(), len(r.published))
	}
}
