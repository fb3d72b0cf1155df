package hosting

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/purgatory"
)

// F20: /prs/ data is admitted against its quotas before git runs; a push
// over them is refused with a readable text and no reservation.
func TestReservePRsAgainstTheQuotas(t *testing.T) {
	r := newRigWith(t, rigOptions{purg: purgatory.Options{PRsQuotas: purgatory.PRsQuotas{ReposPerRemote: 1}}})
	a := newKey(t)
	rv, err := r.h.ReservePRs(nip34.PRsRepo(a.PK, "one"), "198.51.100.5", 10)
	if err != nil || rv == nil {
		t.Fatalf("first reservation: %v", err)
	}
	defer rv.Release()
	rv2, err := r.h.ReservePRs(nip34.PRsRepo(a.PK, "two"), "198.51.100.5", 10)
	var quota *purgatory.QuotaError
	if !errors.As(err, &quota) || quota.Msg == "" || rv2 != nil {
		t.Fatalf("second reservation = %v, %v; want a quota refusal and no reservation", rv2, err)
	}
}

// F20: a /prs/ repository unused for prs_ttl is removed with its data and
// its record, unless its PR is merged or mirrored into a repository hosted
// here: then it is kept and its clock starts again.
func TestPRsExpireUnlessMerged(t *testing.T) {
	r := newRigWith(t, rigOptions{prsTTL: 24 * time.Hour})
	ctx := context.Background()
	a, owner := newKey(t), newKey(t)
	repo := nip34.RepoRef{Pubkey: owner.PK, Identifier: "r"}
	if err := r.repos.Create(ctx, repo); err != nil {
		t.Fatal(err)
	}
	unused, merged := nip34.PRsRepo(a.PK, "r"), nip34.PRsRepo(owner.PK, "r")
	for _, prs := range []nip34.RepoRef{unused, merged} {
		if err := r.repos.Create(ctx, prs); err != nil {
			t.Fatal(err)
		}
	}
	r.commitTo(unused, "refs/nostr/"+strings.Repeat("6", 64), "never merged")
	tip := r.commitTo(merged, "refs/heads/tmp", "merged")
	pr := owner.pr(t, repo, tip)
	r.store.save(t, pr)
	if err := r.repos.SetRef(ctx, merged, "refs/nostr/"+pr.ID, tip, ""); err != nil {
		t.Fatal(err)
	}
	// the owner merged it: the commit is in the owner's repository
	if err := r.repos.CopyRef(ctx, merged, repo, "refs/heads/main", tip); err != nil {
		t.Fatal(err)
	}
	if err := r.h.ScanPRs(ctx); err != nil { // records both
		t.Fatal(err)
	}

	r.clk.Advance(23 * time.Hour)
	if err := r.h.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if !r.repos.Exists(unused) {
		t.Fatal("a /prs/ repository was removed inside its TTL")
	}
	r.clk.Advance(2 * time.Hour)
	if err := r.h.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if r.repos.Exists(unused) {
		t.Fatal("the unused /prs/ repository outlived its TTL")
	}
	if !r.repos.Exists(merged) {
		t.Fatal("a /prs/ repository whose PR is merged here was removed")
	}
	recs := r.purg.PRsRecords()
	if len(recs) != 1 || recs[0].Repo != merged || !recs[0].Active.Equal(r.clk.Now()) {
		t.Fatalf("records %+v, want the merged one's only, used now", recs)
	}
}
