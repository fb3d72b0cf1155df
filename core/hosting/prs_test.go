package hosting

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/policy"
)

// prsService is the public identity the GRASP-06 tests serve.
func prsService(t *testing.T) nip34.Service {
	t.Helper()
	svc, err := nip34.ParseService("https://grasp.example.org")
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// G06-6: a push of refs/nostr/<id> to a /prs/ path is refused, with where
// it belongs, when the known PR event is signed by another key, names no
// /prs/ clone URL of this server, or names another /prs/ path; an unknown
// id and the PR's own path pass.
func TestG06_6_PRMisfit(t *testing.T) {
	r := newRigWith(t, rigOptions{service: prsService(t)})
	ctx := context.Background()
	a, owner := newKey(t), newKey(t)
	repo := nip34.RepoRef{Pubkey: owner.PK, Identifier: "r"}
	svc := prsService(t)
	mine := nip34.PRsRepo(a.PK, "r")
	good := a.pr(t, repo, strings.Repeat("1", 40), nostr.Tag{"clone", svc.PRsURL(a.PK, "r")})
	noClone := a.pr(t, repo, strings.Repeat("2", 40))
	other := a.pr(t, nip34.RepoRef{Pubkey: owner.PK, Identifier: "s"}, strings.Repeat("3", 40), nostr.Tag{"clone", svc.PRsURL(a.PK, "s")})
	for _, evt := range []*nostr.Event{good, noClone, other} {
		r.store.save(t, evt)
	}
	for _, c := range []struct {
		name string
		repo nip34.RepoRef
		id   string
		want string // in the text; "" passes
	}{
		{"unknown id", mine, strings.Repeat("e", 64), ""},
		{"its own path", mine, good.ID, ""},
		{"another signer's path", nip34.PRsRepo(owner.PK, "r"), good.ID, "is signed by " + a.Npub + ", not by the owner of this /prs/ path; push it to " + svc.PRsURL(a.PK, "r")},
		{"another signer's path, no clone tag", nip34.PRsRepo(owner.PK, "r"), noClone.ID, "push it to " + svc.PRsURL(a.PK, "r")},
		{"no clone tag here", mine, noClone.ID, "has no 'clone' tag naming " + svc.PRsURL(a.PK, "r")},
		{"another /prs/ path", mine, other.ID, "names " + svc.BaseURL() + nip34.PRsRepo(a.PK, "s").URLPath() + ", not this /prs/ path"},
	} {
		got, err := r.h.PRMisfit(ctx, c.repo, c.id)
		if err != nil || (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: PRMisfit = %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}

// G06-7: a PR served through its /prs/ repository gets its ref there and a
// copy in the owner's repository hosted here (its objects fetched, never
// borrowed).
func TestG06_7_PRsPushMirroredIntoTheOwnersRepo(t *testing.T) {
	r := newRigWith(t, rigOptions{service: prsService(t)})
	ctx := context.Background()
	a, owner := newKey(t), newKey(t)
	repo := nip34.RepoRef{Pubkey: owner.PK, Identifier: "r"}
	r.store.save(t, owner.sign(t, nip34.KindAnnouncement, nostr.Tags{{"d", "r"}}))
	if err := r.repos.Create(ctx, repo); err != nil {
		t.Fatal(err)
	}
	prs := nip34.PRsRepo(a.PK, "r")
	done, err := r.repos.OpenPRs(ctx, prs)
	if err != nil {
		t.Fatal(err)
	}
	tip := r.commitTo(prs, "refs/heads/tmp", "the contribution")
	done()
	pr := a.pr(t, repo, tip, nostr.Tag{"clone", prsService(t).PRsURL(a.PK, "r")})
	r.h.Apply(ctx, pr, policy.Decision{Outcome: policy.Store, Effects: []policy.Effect{{Kind: policy.BindNostrRef, Repo: prs, OIDs: []string{tip}}}})
	if got := r.refs(prs)["refs/nostr/"+pr.ID]; got != tip {
		t.Fatalf("/prs/ refs/nostr/<PR> at %q, want %s", got, tip)
	}
	if got := r.refs(repo)["refs/nostr/"+pr.ID]; got != tip {
		t.Fatalf("the owner's refs/nostr/<PR> at %q, want the mirrored %s", got, tip)
	}
}

// G06-8: a /prs/ repository whose only ref was at another commit than its
// PR event's loses the ref and is removed with it.
func TestG06_8_PRsRepoWithoutRefsIsRemoved(t *testing.T) {
	r := newRigWith(t, rigOptions{service: prsService(t)})
	ctx := context.Background()
	a, owner := newKey(t), newKey(t)
	repo := nip34.RepoRef{Pubkey: owner.PK, Identifier: "r"}
	prs := nip34.PRsRepo(a.PK, "r")
	pr := a.pr(t, repo, strings.Repeat("4", 40), nostr.Tag{"clone", prsService(t).PRsURL(a.PK, "r")})
	done, err := r.repos.OpenPRs(ctx, prs)
	if err != nil {
		t.Fatal(err)
	}
	r.placeholder(prs, pr.ID, "not the PR's commit")
	done()
	r.hold(pr, policy.Effect{Kind: policy.AwaitGitData, Repo: prs, OIDs: []string{strings.Repeat("4", 40)}})
	if r.repos.Exists(prs) {
		t.Fatal("the /prs/ repository left without a ref is still there")
	}
	if !r.held(pr) {
		t.Fatal("the PR event left purgatory with the mismatched ref (G06-6: it stays held)")
	}
}

// G06-8 at start-up: /prs/ repositories without a ref are removed, the
// others charged to the quotas if they had no record (F20), and records of
// repositories no longer on disk dropped.
func TestG06_8_ScanPRs(t *testing.T) {
	r := newRigWith(t, rigOptions{service: prsService(t)})
	ctx := context.Background()
	a, b := newKey(t), newKey(t)
	empty, full := nip34.PRsRepo(a.PK, "empty"), nip34.PRsRepo(b.PK, "full")
	for _, repo := range []nip34.RepoRef{empty, full} {
		if err := r.repos.Create(ctx, repo); err != nil {
			t.Fatal(err)
		}
	}
	r.commitTo(full, "refs/nostr/"+strings.Repeat("5", 64), "data")
	if err := r.h.ScanPRs(ctx); err != nil {
		t.Fatal(err)
	}
	if r.repos.Exists(empty) || !r.repos.Exists(full) {
		t.Fatalf("after the scan: empty exists %v, full exists %v", r.repos.Exists(empty), r.repos.Exists(full))
	}
	recs := r.purg.PRsRecords()
	if len(recs) != 1 || recs[0].Repo != full || recs[0].Total() <= 0 {
		t.Fatalf("records %+v, want the repository found on disk charged its size", recs)
	}

	dir, _ := r.repos.Path(full)
	if err := os.RemoveAll(dir); err != nil { // gone behind the server's back
		t.Fatal(err)
	}
	if err := r.h.ScanPRs(ctx); err != nil {
		t.Fatal(err)
	}
	if recs := r.purg.PRsRecords(); len(recs) != 0 {
		t.Fatalf("records %+v, want the removed repository's dropped", recs)
	}
}
