package server_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/config"
)

// prsRound is one round of the audit's F20 flood from this client: a fresh
// key, a PR naming /prs/<its npub>/<d>.git and a push of n random bytes to
// it (a repository of its own), event first or push first. It returns the
// key, the push's output and error.
func (e *testServer) prsRound(cl *client, d string, n int, eventFirst bool) (key, string, error) {
	e.t.Helper()
	k, owner := newKey(e.t), newKey(e.t)
	w := newWork(e.t)
	tip := w.commitRandom(d+".bin", n)
	url := e.prsURL(k, d)
	pr := e.prEvent(k, owner, d, tip, url)
	if eventFirst {
		cl.mustAccept(pr, purg)
	}
	out, err := w.push(url, tip+":refs/nostr/"+pr.ID)
	if err == nil && !eventFirst {
		cl.mustAccept(pr, "")
	}
	if err == nil {
		e.eventually("the PR served", 0, func() bool { return cl.served(pr.ID) })
	}
	return k, out, err
}

// F20: a served PR's /prs/ data counted toward no quota, so one address
// with throwaway keys stored any amount (6 rounds of 8 MiB where its
// placeholders could hold 10 MiB: all kept). The operator now sees /prs/
// data bounded per address whether the PR event came first or second,
// the bound not given back when the event is served, a refused push write
// nothing, the bounds in NIP-11, and unused data expire on the fake clock,
// which frees the address's quota.
func TestAbuse_F20_PRsDataBoundedPerAddress(t *testing.T) {
	const ttl = 48 * time.Hour
	e := newPRsEnv(t, func(c *config.Config) {
		c.Purgatory.MaxPlaceholderMBPerIP = 10
		c.Grasp.PRsMaxMBPerIP = 10
		c.Grasp.PRsMaxReposPerIP = 3
		c.Grasp.PRsTTL = config.Duration(ttl)
	})
	var doc struct {
		Limitation map[string]int64 `json:"limitation"`
	}
	e.nip11Into(&doc)
	for k, want := range map[string]int64{
		"max_prs_bytes_per_ip": 10 << 20, "max_prs_repos_per_ip": 3, "prs_ttl": int64(ttl.Seconds()),
		"max_prs_bytes": 10240 << 20, "max_prs_bytes_per_pubkey": 1024 << 20, "max_prs_repos": 5000, "max_prs_repos_per_pubkey": 50,
	} {
		if doc.Limitation[k] != want {
			t.Errorf("NIP-11 limitation.%s = %d, want %d", k, doc.Limitation[k], want)
		}
	}

	cl := e.dial()
	root := filepath.Join(e.srv.Repos().Root(), "prs")
	// two rounds of 4 MiB, one event first, one push first: both served
	k1, out, err := e.prsRound(cl, "r1", 4<<20, true)
	if err != nil {
		t.Fatalf("round 1 (event first): %v\n%s", err, out)
	}
	if _, out, err := e.prsRound(cl, "r2", 4<<20, false); err != nil {
		t.Fatalf("round 2 (push first): %v\n%s", err, out)
	}
	stored := dirBytes(t, root)
	// the third would pass 10 MiB: refused as its bytes arrive, whichever
	// comes first, although both earlier PR events are served
	for i, eventFirst := range []bool{true, false} {
		d := fmt.Sprint("r3-", i)
		k, out, err := e.prsRound(cl, d, 4<<20, eventFirst)
		if err == nil || !strings.Contains(out, "rate-limited: GRASP-06 /prs/ data pushed from your address may take 10 MiB") {
			t.Fatalf("a third 4 MiB round (event first %v) past 10 MiB per address: err=%v\n%s", eventFirst, err, out)
		}
		if exists(e.prsDir(k, d)) {
			t.Fatalf("the refused push (event first %v) left its /prs/ repository", eventFirst)
		}
	}
	if now := dirBytes(t, root); now > stored+256<<10 {
		t.Fatalf("refused pushes grew /prs/ from %d to %d bytes", stored, now)
	}
	t.Logf("/prs/ on disk for one address: %d bytes after 2 rounds of 4 MiB, the same after 2 refused ones", stored)

	// a third repository within the bytes bound, then a fourth past the
	// repositories bound, refused before git runs
	if _, out, err := e.prsRound(cl, "small", 1<<10, true); err != nil {
		t.Fatalf("a small third repository: %v\n%s", err, out)
	}
	k4, out, err := e.prsRound(cl, "small2", 1<<10, false)
	if err == nil || !strings.Contains(out, "rate-limited: 3 GRASP-06 /prs/ repositories are already stored pushed from your address (limit 3)") {
		t.Fatalf("a fourth /prs/ repository from one address: err=%v\n%s", err, out)
	}
	if exists(e.prsDir(k4, "small2")) {
		t.Fatal("the refused fourth repository is on disk")
	}

	// the served PRs' data stays while used (well past the placeholder
	// TTL), and goes once unused for the TTL, which frees the quota
	e.clk.Advance(ttl / 2)
	if err := e.srv.Hosting().Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !exists(e.prsDir(k1, "r1")) {
		t.Fatal("a served PR's /prs/ data went before its TTL")
	}
	e.clk.Advance(ttl/2 + time.Minute)
	if err := e.srv.Hosting().Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	if exists(e.prsDir(k1, "r1")) {
		t.Fatalf("/prs/ data unused for %v is still on disk", ttl)
	}
	if n := dirBytes(t, root); n > 64<<10 {
		t.Fatalf("%d bytes left under /prs/ after every repository expired", n)
	}
	cl = e.dial() // the fake days closed the idle connection
	if _, out, err := e.prsRound(cl, "after", 4<<20, true); err != nil {
		t.Fatalf("a round after the expiry: %v\n%s", err, out)
	}
	if e.metric("grasp_prs_events_total", "expired") != 3 {
		t.Fatalf("grasp_prs_events_total{what=expired} = %v, want 3", e.metric("grasp_prs_events_total", "expired"))
	}
}

// F20: /prs/ data unused for prs_ttl goes, unless its PR made it into a
// repository hosted here that the PR names (mirrored or merged): that
// one's data is kept with its repository's history.
func TestAbuse_F20_MergedPRsDataOutlivesTheTTL(t *testing.T) {
	const ttl = 24 * time.Hour
	e := newPRsEnv(t, func(c *config.Config) { c.Grasp.PRsTTL = config.Duration(ttl) })
	cl := e.dial()
	owner, k := newKey(t), newKey(t)
	ow := newWork(t)
	e.release(owner, "repo", ow, ow.commit("base"))
	w := newWork(t)
	p := w.commit("proposal")
	url := e.prsURL(k, "repo")
	pr := e.prEvent(k, owner, "repo", p, url)
	cl.mustAccept(pr, purg)
	if out, err := w.push(url, p+":refs/nostr/"+pr.ID); err != nil {
		t.Fatalf("push to /prs/: %v\n%s", err, out)
	}
	e.eventually("the PR served", 0, func() bool { return cl.served(pr.ID) })
	// a PR for a repository hosted elsewhere, never used again
	other, _, err := e.prsRound(cl, "elsewhere", 1<<10, true)
	if err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(ttl + time.Minute)
	if err := e.srv.Hosting().Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	if exists(e.prsDir(other, "elsewhere")) {
		t.Fatal("an unused, unmerged PR's /prs/ data outlived its TTL")
	}
	if got := lsRemote(t, url)["refs/nostr/"+pr.ID]; got != p {
		t.Fatalf("the mirrored PR's /prs/ data went: refs/nostr/%s = %q", pr.ID, got)
	}
}
