package hosting

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/githttp"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/policy"
)

// The info log has one line per repository created, announcement or state
// held, accepted and released, push accepted and expiry, and nothing for an
// ordinary issue held or released with its repository (issue 16 part 4).
func TestInfoLogLines(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	a := newKey(t)
	repo := nip34.RepoRef{Pubkey: a.PK, Identifier: "r"}
	expect := func(what string, want []string, not ...string) {
		t.Helper()
		got := r.logs.Take()
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: the log lacks %q:\n%s", what, w, got)
			}
		}
		for _, n := range not {
			if strings.Contains(got, n) {
				t.Errorf("%s: the log has %q:\n%s", what, n, got)
			}
		}
	}

	ann := a.sign(t, nip34.KindAnnouncement, nostr.Tags{{"d", "r"}})
	if _, err := r.h.Hold(ctx, ann, policy.Decision{Outcome: policy.Hold, Effects: []policy.Effect{{Kind: policy.CreateRepo, Repo: repo}}}, policy.Meta{Source: policy.SourceClient}); err != nil {
		t.Fatal(err)
	}
	expect("announcement", []string{"[INFO]  repository created: repo=" + repo.URLPath(),
		"[INFO]  announcement held until its git data arrives: id=" + ann.ID})

	issue := a.sign(t, nip34.KindIssue, nostr.Tags{{"a", repo.String()}})
	if _, err := r.h.Hold(ctx, issue, policy.Decision{Outcome: policy.Hold, Effects: []policy.Effect{{Kind: policy.AwaitRepo, Repo: repo}}}, policy.Meta{}); err != nil {
		t.Fatal(err)
	}
	expect("issue held with its repo", nil, issue.ID)

	tip := r.commit(repo)
	st := a.sign(t, nip34.KindState, nostr.Tags{{"d", "r"}, {"refs/heads/main", tip}, {"HEAD", "ref: refs/heads/main"}})
	if _, err := r.h.Hold(ctx, st, policy.Decision{Outcome: policy.Hold, Effects: []policy.Effect{{Kind: policy.AwaitGitData, Repo: repo, OIDs: []string{tip}}}}, policy.Meta{}); err != nil {
		t.Fatal(err)
	}
	expect("state", []string{"[INFO]  state held until its git data arrives: id=" + st.ID})

	c, _ := candidate(st)
	r.h.OnPush(ctx, githttp.PushResult{Repo: repo, State: &c, Remote: "198.51.100.4", Updates: []git.RefUpdate{{Ref: "refs/heads/main", Old: git.ZeroOID, New: tip}}})
	expect("push", []string{"[INFO]  push accepted: repo=" + repo.URLPath() + " remote=198.51.100.4 refs=\"refs/heads/main 0000000000→" + tip[:10] + "\" state=" + st.ID,
		"[INFO]  announcement released from purgatory: id=" + ann.ID,
		"[INFO]  state released from purgatory: id=" + st.ID}, issue.ID)

	st2 := a.sign(t, nip34.KindState, nostr.Tags{{"d", "r"}, {"refs/heads/main", tip}})
	r.h.Apply(ctx, st2, policy.Decision{Outcome: policy.Store})
	expect("stored state", []string{"[INFO]  state accepted: id=" + st2.ID + " repo=" + repo.URLPath()})
	comment := a.sign(t, nip34.KindComment, nostr.Tags{{"a", repo.String()}})
	r.h.Apply(ctx, comment, policy.Decision{Outcome: policy.Store})
	expect("stored comment", nil, comment.ID)
	// A PR's d is empty; its line names the repository of its a tag
	// (issue 26 part 6).
	pr := a.sign(t, nip34.KindPR, nostr.Tags{{"a", repo.String()}, {"c", tip}})
	r.h.Apply(ctx, pr, policy.Decision{Outcome: policy.Store})
	expect("stored PR", []string{"[INFO]  PR accepted: id=" + pr.ID + " repo=" + repo.URLPath() + " author=" + a.Npub})

	late := a.sign(t, nip34.KindState, nostr.Tags{{"d", "r"}, {"refs/heads/main", strings.Repeat("1", 40)}})
	if _, err := r.h.Hold(ctx, late, policy.Decision{Outcome: policy.Hold, Effects: []policy.Effect{{Kind: policy.AwaitGitData, Repo: repo, OIDs: []string{strings.Repeat("1", 40)}}}}, policy.Meta{}); err != nil {
		t.Fatal(err)
	}
	r.logs.Take()
	r.h.clk.(*clock.Fake).Advance(time.Hour)
	if err := r.h.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	expect("expiry", []string{"[INFO]  expired from purgatory without git data: id=" + late.ID})
}

// An archived repository says so when it is created (issue 12 part 5).
func TestG05_InfoLogLineWhenArchived(t *testing.T) {
	r := newRig(t)
	a := newKey(t)
	repo := nip34.RepoRef{Pubkey: a.PK, Identifier: "mirror"}
	ann := a.sign(t, nip34.KindAnnouncement, nostr.Tags{{"d", "mirror"}, {"clone", "https://git.example.org/mirror.git"}})
	d := policy.Decision{Outcome: policy.Hold, Archived: true, Effects: []policy.Effect{{Kind: policy.CreateRepo, Repo: repo}}}
	if _, err := r.h.Hold(context.Background(), ann, d, policy.Meta{Source: policy.SourceSync}); err != nil {
		t.Fatal(err)
	}
	got := r.logs.Take()
	if want := "[INFO]  repository archived (GRASP-05): created, its git data is fetched from the servers its announcement lists: repo=" + repo.URLPath() + " source=sync"; !strings.Contains(got, want) {
		t.Fatalf("the log lacks %q:\n%s", want, got)
	}
	if strings.Contains(got, "repository created:") {
		t.Fatalf("an archived repository is logged as an ordinary one:\n%s", got)
	}
}
