package purgatory

import (
	"context"
	"testing"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/nip34"
)

func newPRsP(t *testing.T, kv KV, clk clock.Clock, q PRsQuotas) *Purgatory {
	t.Helper()
	p, err := New(Options{KV: kv, PRsQuotas: q}, env.Env{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// push is one applied /prs/ push of n bytes into r from remote.
func push(t *testing.T, p *Purgatory, r nip34.RepoRef, remote string, n int64) error {
	t.Helper()
	rv, err := p.ReservePRs(r, remote, 0)
	if err != nil {
		return err
	}
	defer rv.Release()
	if err := rv.Charge(n); err != nil {
		return err
	}
	return rv.Commit(context.Background())
}

// F20: /prs/ data counts per address, per npub and in total; what an
// applied push brought stays counted (through restarts) until the
// repository is dropped; a push in progress counts too; a new repository
// counts once however many pushes create it at once.
func TestPRsQuotas(t *testing.T) { eachKV(t, testPRsQuotas) }

func testPRsQuotas(t *testing.T, newKV func() KV) {
	const mib = 1 << 20
	t.Run("per npub and in total", func(t *testing.T) {
		kv := newKV()
		p := newPRsP(t, kv, clock.NewFake(t0), PRsQuotas{BytesPerPubkey: 3 * mib, Bytes: 5 * mib})
		if err := push(t, p, nip34.PRsRepo("aa", "x"), "198.51.100.1", 2*mib); err != nil {
			t.Fatal(err)
		}
		wantQuota(t, push(t, p, nip34.PRsRepo("aa", "y"), "198.51.100.2", 2*mib), "under /prs/"+nip34.Npub("aa")+"/", "may take 3 MiB")
		if err := push(t, p, nip34.PRsRepo("bb", "x"), "198.51.100.3", 3*mib); err != nil {
			t.Fatal(err)
		}
		wantQuota(t, push(t, p, nip34.PRsRepo("cc", "x"), "198.51.100.4", mib), "on this server in all", "may take 5 MiB")
		// a restart keeps the charges; dropping a repository frees them
		p2 := newPRsP(t, kv, clock.NewFake(t0), PRsQuotas{BytesPerPubkey: 3 * mib, Bytes: 5 * mib})
		wantQuota(t, push(t, p2, nip34.PRsRepo("cc", "x"), "198.51.100.4", mib), "on this server in all")
		if err := p2.DropPRs(context.Background(), nip34.PRsRepo("bb", "x")); err != nil {
			t.Fatal(err)
		}
		if err := push(t, p2, nip34.PRsRepo("cc", "x"), "198.51.100.4", mib); err != nil {
			t.Fatalf("after a repository was dropped: %v", err)
		}
		_, pk, total, _ := p2.PRsUsage("aa", "")
		if pk != (PRsUse{Repos: 1, Bytes: 2 * mib}) || total != (PRsUse{Repos: 2, Bytes: 3 * mib}) {
			t.Fatalf("usage: npub %+v, total %+v", pk, total)
		}
	})
	t.Run("per address, in flight", func(t *testing.T) {
		p := newPRsP(t, newKV(), clock.NewFake(t0), PRsQuotas{BytesPerRemote: 4 * mib, ReposPerRemote: 2})
		const ip = "198.51.100.7"
		a, err := p.ReservePRs(nip34.PRsRepo("aa", "x"), ip, 0)
		if err != nil {
			t.Fatal(err)
		}
		// a second push into the same new repository is not a second
		// repository; a third repository is
		b, err := p.ReservePRs(nip34.PRsRepo("aa", "x"), ip, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.ReservePRs(nip34.PRsRepo("aa", "y"), ip, 0); err != nil {
			t.Fatal(err)
		}
		wantQuota(t, func() error { _, err := p.ReservePRs(nip34.PRsRepo("aa", "z"), ip, 0); return err }(), "your address", "limit 2")
		if err := a.Charge(3 * mib); err != nil {
			t.Fatal(err)
		}
		wantQuota(t, b.Charge(2*mib), "pushed from your address may take 4 MiB")
		// a Content-Length past the room is refused before anything
		wantQuota(t, func() error { _, err := p.ReservePRs(nip34.PRsRepo("aa", "x"), ip, 2*mib); return err }(), "your address")
		if err := a.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
		b.Release()
		a.Release()
		ip1, _, _, _ := p.PRsUsage("aa", ip)
		if ip1.Bytes != 3*mib {
			t.Fatalf("committed bytes after Release: %+v", ip1)
		}
		// another address is not this one
		if err := push(t, p, nip34.PRsRepo("aa", "w"), "198.51.100.8", 3*mib); err != nil {
			t.Fatal(err)
		}
	})
}

// Two instances on one table: a push recorded by one is counted by the
// other after Reload (issue 17: every instance enforces the same quotas).
func TestPRsQuotasFollowAnotherInstance(t *testing.T) {
	eachKV(t, func(t *testing.T, newKV func() KV) {
		kv := newKV()
		q := PRsQuotas{ReposPerPubkey: 1}
		a, b := newPRsP(t, kv, clock.NewFake(t0), q), newPRsP(t, kv, clock.NewFake(t0), q)
		r := nip34.PRsRepo("aa", "x")
		if err := push(t, a, r, "", 10); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Reload(context.Background(), bucketPRs, pruneKey(r)); err != nil {
			t.Fatal(err)
		}
		wantQuota(t, push(t, b, nip34.PRsRepo("aa", "y"), "", 10), "limit 1")
		if err := a.DropPRs(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Reload(context.Background(), bucketPRs, pruneKey(r)); err != nil {
			t.Fatal(err)
		}
		if err := push(t, b, nip34.PRsRepo("aa", "y"), "", 10); err != nil {
			t.Fatalf("after the other instance dropped it: %v", err)
		}
		recs := b.PRsRecords()
		if len(recs) != 1 || recs[0].Repo.Identifier != "y" || !recs[0].Created.Equal(t0) || !recs[0].Active.Equal(t0) {
			t.Fatalf("records: %+v", recs)
		}
	})
}
