package hosting

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/policy"
)

// G01-G2/G3: push authorisation is offered the states of the repository's
// maintainers, stored and held (a re-published state heals lost data,
// grasp.md §10 item 6), never a stranger's.
func TestG01_G3_StatesForPushAuthorisation(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	a, b, stranger := newKey(t), newKey(t), newKey(t)
	repoA, _ := r.maintainers(a, b, "r")
	stored := a.signAt(t, nip34.KindState, 100, nostr.Tags{{"d", "r"}, {"refs/heads/main", strings.Repeat("1", 40)}})
	r.store.save(t, stored)
	held := b.state(t, "r", strings.Repeat("2", 40))
	r.hold(held, policy.Effect{Kind: policy.AwaitGitData, Repo: repoA, OIDs: []string{strings.Repeat("2", 40)}})
	theirs := stranger.state(t, "r", strings.Repeat("3", 40))
	r.hold(theirs, policy.Effect{Kind: policy.AwaitGitData, Repo: repoA, OIDs: []string{strings.Repeat("3", 40)}})

	states, err := r.h.States(ctx, repoA)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range states {
		ids = append(ids, s.EventID)
	}
	slices.Sort(ids)
	want := []string{stored.ID, held.ID}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Fatalf("states %v, want the maintainers' stored and held ones %v", ids, want)
	}
}

// G01-G5: a push to refs/nostr/<id> is checked against the `c` of the PR
// or PR update id, held or stored; any other id (unknown, another kind)
// has none.
func TestG01_G5_PRTip(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	a := newKey(t)
	_, repo := r.announce(a, "r")
	held := a.pr(t, repo, strings.Repeat("4", 40))
	r.hold(held, policy.Effect{Kind: policy.AwaitGitData, Repo: repo, OIDs: []string{strings.Repeat("4", 40)}})
	stored := a.sign(t, nip34.KindPRUpdate, nostr.Tags{{"a", repo.String()}, {"c", strings.Repeat("5", 40)}, {"E", held.ID}})
	issue := a.sign(t, nip34.KindIssue, nostr.Tags{{"a", repo.String()}})
	r.store.save(t, stored)
	r.store.save(t, issue)
	for _, c := range []struct {
		id, tip string
		ok      bool
	}{{held.ID, strings.Repeat("4", 40), true}, {stored.ID, strings.Repeat("5", 40), true}, {issue.ID, "", false}, {strings.Repeat("f", 64), "", false}} {
		tip, ok, err := r.h.PRTip(ctx, c.id)
		if err != nil || ok != c.ok || tip != c.tip {
			t.Errorf("PRTip(%s) = %q, %v, %v; want %q, %v", c.id, tip, ok, err, c.tip, c.ok)
		}
	}
}
