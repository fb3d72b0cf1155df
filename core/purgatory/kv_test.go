package purgatory

import (
	"context"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/nip34"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/internal/memkv"
	"github.com/grasp-dev/grasp/core/store"
	"github.com/grasp-dev/grasp/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// eachKV runs a purgatory test on every side table it may live in: the
// in-memory one, the store's badger side tables and PostgreSQL's (issue 17
// part 5: purgatory behaves the same on both backends). Each newKV call
// returns a new, empty table; a test "restarts" by building a second
// purgatory over the same one.
func eachKV(t *testing.T, test func(t *testing.T, newKV func() KV)) {
	t.Run("memory", func(t *testing.T) {
		test(t, func() KV { return &memkv.KV{} })
	})
	for _, backend := range []string{store.BackendBadger, store.BackendPostgres} {
		t.Run(backend, func(t *testing.T) {
			test(t, func() KV {
				opts := store.Options{Dir: t.TempDir(), Backend: backend}
				if backend == store.BackendPostgres {
					opts.PostgresURL = pgtest.DB(t)
				}
				s, err := store.New(opts, env.Env{Metrics: prometheus.NewRegistry()})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s.Side()
			})
		})
	}
}

// Two purgatories on one shared table (two instances on one PostgreSQL):
// what one holds, the other learns through Reload; what the other releases,
// the first forgets, with the hooks run on both (issue 17 parts 1 and 2).
func TestReloadFollowsAnotherInstance(t *testing.T) {
	eachKV(t, func(t *testing.T, newKV func() KV) {
		clk := clock.NewFake(t0)
		kv := newKV()
		a, b := newP(t, kv, clk), newP(t, kv, clk)
		var bHeld, aGone []string
		b.OnHold = append(b.OnHold, func(e Entry) { bHeld = append(bHeld, e.Event.ID) })
		a.OnRemove = append(a.OnRemove, func(e Entry, why string) { aGone = append(aGone, e.Event.ID+" "+why) })
		sk := nostr.GeneratePrivateKey()
		pk, _ := nostr.GetPublicKey(sk)
		repo := nip34.RepoRef{Pubkey: pk, Identifier: "r"}
		st := signed(t, sk, 30618, t0, nostr.Tags{{"d", "r"}, {"refs/heads/main", "aa"}})
		if err := a.Hold(context.Background(), Entry{Event: st, Repo: repo, Needs: []string{"aa"}}); err != nil {
			t.Fatal(err)
		}
		if len(b.States("r")) != 0 {
			t.Fatal("B saw A's hold before being told")
		}
		if got, err := b.Reload(context.Background(), bucketHeld, st.ID); err != nil || got == nil || got.Event.ID != st.ID {
			t.Fatalf("B's reload returned %v, %v; want the newly held state", got, err)
		}
		if got := b.States("r"); len(got) != 1 || got[0].ID != st.ID || len(bHeld) != 1 {
			t.Fatalf("B after reload: states %v, OnHold %v", got, bHeld)
		}
		// a second notification of the same change changes nothing
		if got, err := b.Reload(context.Background(), bucketHeld, st.ID); err != nil || got != nil || len(bHeld) != 1 {
			t.Fatalf("repeated reload: %v %v, OnHold %v", got, err, bHeld)
		}
		evs, err := b.Release(repo, true, func([]string) bool { return true })
		if err != nil || len(evs) != 1 {
			t.Fatalf("B released %v, %v", evs, err)
		}
		if err := b.Published(context.Background(), evs); err != nil { // B stored it: now it leaves purgatory
			t.Fatal(err)
		}
		if _, err := a.Reload(context.Background(), bucketHeld, st.ID); err != nil {
			t.Fatal(err)
		}
		if a.Len() != 0 || len(aGone) != 1 || aGone[0] != st.ID+" elsewhere" {
			t.Fatalf("A after B's release: %d held, OnRemove %v", a.Len(), aGone)
		}
	})
}
