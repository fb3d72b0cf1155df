package server

import (
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// N34-12 (NIP-34 #2395) and N34-13 (#2435): the `u` tag of a subordinate
// fork and the `b` target branch of a PR are stored and queryable by tag
// filter, and never change who may push.
func TestN34_12_13_UAndBTagsQueryableNotAuthority(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a, f, k := newKey(t), newKey(t), newKey(t)
	w := newWork(t)
	x := w.commit("x")
	e.release(a, "repo", w, x)
	upstream := "30617:" + a.pk + ":repo"
	fork := e.release(f, "repo", w, x, nostr.Tag{"u", upstream, e.ws, a.pk})
	if got := cl.query(nostr.Filter{Tags: nostr.TagMap{"u": {upstream}}}); len(got) != 1 || got[0].ID != fork.ID {
		t.Fatalf("#u query: %d events, want the fork's announcement", len(got))
	}
	// Positive control: a filter on another value finds nothing.
	if got := cl.query(nostr.Filter{Tags: nostr.TagMap{"u": {"30617:" + k.pk + ":repo"}}}); len(got) != 0 {
		t.Fatalf("#u query for another upstream: %d events", len(got))
	}
	// The fork names a as its upstream: that makes f no maintainer of a's
	// repo (a state by f is not authoritative there).
	y := w.commit("y")
	// a second later than f's first state: in the same second the lower id
	// wins, so the test failed half the time
	e.clk.Advance(time.Second)
	cl.mustAccept(e.state(f, "repo", map[string]string{"refs/heads/main": y}, "refs/heads/main"), purg)
	refused(t, w, e.cloneURL(a, "repo"), "main:refs/heads/main")

	pr := e.sign(k, 1618, nostr.Tags{{"a", upstream}, {"c", x}, {"b", "dev"}, {"clone", e.cloneURL(a, "repo")}}, "")
	cl.mustAccept(pr, "")
	if got := cl.query(nostr.Filter{Kinds: []int{1618}, Tags: nostr.TagMap{"b": {"dev"}}}); len(got) != 1 || got[0].ID != pr.ID {
		t.Fatalf("#b query: %d events, want the PR", len(got))
	}
	if got := cl.query(nostr.Filter{Kinds: []int{1618}, Tags: nostr.TagMap{"b": {"main"}}}); len(got) != 0 {
		t.Fatalf("#b query for another branch: %d events", len(got))
	}
}
