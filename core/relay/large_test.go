package relay

import (
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/store"
)

// realDiff is a git format-patch of exactly size bytes: a diff with the
// characters JSON escapes (newlines, tabs, quotes, backslashes) and
// non-ASCII text, as real patches carry.
func realDiff(size int) string {
	var b strings.Builder
	b.WriteString("From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001\n" +
		"From: Alice <alice@example.org>\nSubject: [PATCH] rewrite the parser\n\n---\n" +
		"diff --git a/parse.go b/parse.go\n--- a/parse.go\n+++ b/parse.go\n@@ -1,3 +1,9000 @@\n")
	for i := 0; b.Len() < size; i++ {
		b.WriteString("+\tif s[i] == '\"' || s[i] == '\\\\' { // ünïcödé line ")
		b.WriteString(strings.Repeat("x", i%50))
		b.WriteString("\n")
	}
	return b.String()[:size]
}

// N34-5 with the production limits: a patch of 1 MiB with a commit-pgp-sig
// tag is published over the websocket, stored in the embedded store (beyond
// its codec's 64 KiB content limit), served back identical, and still
// served after the relay and the store restart.
func TestN34_5_OneMebibytePatchEndToEnd(t *testing.T) {
	dir := t.TempDir()
	open := func() *store.Store {
		st, err := store.New(store.Options{Dir: dir}, env.Env{})
		if err != nil {
			t.Fatalf("open store: %v", err)
		}
		return st
	}
	a := newKey(t)
	sig := "-----BEGIN PGP SIGNATURE-----\n\n" + strings.Repeat("iQIzBAABCAAdFiEE", 60) + "\n-----END PGP SIGNATURE-----\n"
	patch := a.event(t, 1617, time.Now().Unix(), nostr.Tags{
		{"a", "30617:" + a.PK + ":repo"}, {"commit", strings.Repeat("1", 40)},
		{"commit-pgp-sig", sig}, {"t", "root"},
	}, realDiff(1<<20))
	want, err := patch.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}

	served := func(tr *testRelay) {
		t.Helper()
		got := query(t, connect(t, tr.ws), nostr.Filter{IDs: []string{patch.ID}})
		if len(got) != 1 {
			t.Fatalf("patch served %d times, want once", len(got))
		}
		j, _ := got[0].MarshalJSON()
		if string(j) != string(want) {
			t.Fatalf("served patch differs: %d bytes, want %d", len(j), len(want))
		}
		if ok, err := got[0].CheckSignature(); !ok || err != nil {
			t.Fatalf("served patch does not verify: %v", err)
		}
	}
	stop := func(tr *testRelay, st *store.Store) {
		t.Helper()
		tr.cancel()
		err := <-tr.done
		tr.done <- err // for the cleanup startRelay registered
		if err := st.Close(); err != nil {
			t.Fatalf("close store: %v", err)
		}
	}

	st := open()
	tr := startRelay(t, Options{Events: st.Events()})
	if ok, msg := publishOK(t, connect(t, tr.ws), patch); !ok {
		t.Fatalf("a 1 MiB patch was refused: %q", msg)
	}
	served(tr)
	stop(tr, st)

	st = open()
	tr = startRelay(t, Options{Events: st.Events()})
	served(tr)
	stop(tr, st)
}
