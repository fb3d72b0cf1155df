package server_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// One ordering of replaceable and addressable events (maintainers-v3.md §4,
// issue 10 part 2): the greater created_at, then the lower id, on every
// path — the store, purgatory, the latest announcement, the authoritative
// state, and a held state authorising a push only if it sorts after the
// stored authoritative one.

// grind signs a kind event of k with tags at created_at, adding a nonce tag
// (as ngit does) until keep accepts the id.
func (e *testServer) grind(k key, kind int, tags nostr.Tags, at nostr.Timestamp, keep func(id string) bool) *nostr.Event {
	e.t.Helper()
	for n := 0; n < 10000; n++ {
		evt := &nostr.Event{Kind: kind, CreatedAt: at, Tags: append(append(nostr.Tags{}, tags...), nostr.Tag{"nonce", fmt.Sprint(n)})}
		if err := evt.Sign(k.SK); err != nil {
			e.t.Fatal(err)
		}
		if keep(evt.ID) {
			return evt
		}
	}
	e.t.Fatal("grind: no id found")
	return nil
}

func stateTags(d string, refs ...string) nostr.Tags {
	tags := nostr.Tags{{"d", d}, {"HEAD", "ref: refs/heads/main"}}
	for i := 0; i+1 < len(refs); i += 2 {
		tags = append(tags, nostr.Tag{refs[i], refs[i+1]})
	}
	return tags
}

func below(id string) func(string) bool { return func(x string) bool { return x < id } }
func above(id string) func(string) bool { return func(x string) bool { return x > id } }

// The store: a same-second replacement with the lower id replaces the
// stored version (announcement and state); the higher id is refused once
// the lower one is stored, and never served.
func TestMaintainersV3_S4_TieInTheStore(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a := newKey(t)
	w := newWork(t)
	x := w.commit("x")
	e.release(a, "repo", w, x)
	e.clk.Advance(time.Second)
	at := nostr.Timestamp(e.clk.Now().Unix())

	annTags := nostr.Tags{{"d", "repo"}, {"clone", e.cloneURL(a, "repo")}, {"relays", e.ws}}
	hiAnn := e.grind(a, 30617, append(annTags, nostr.Tag{"name", "high"}), at, func(id string) bool { return id[0] >= '8' })
	loAnn := e.grind(a, 30617, append(annTags, nostr.Tag{"name", "low"}), at, below(hiAnn.ID))
	hiSt := e.grind(a, 30618, stateTags("repo", "refs/heads/main", x), at, func(id string) bool { return id[0] >= '8' })
	loSt := e.grind(a, 30618, stateTags("repo", "refs/heads/main", x), at, below(hiSt.ID))

	for _, p := range [][2]*nostr.Event{{hiAnn, loAnn}, {hiSt, loSt}} {
		hi, lo := p[0], p[1]
		cl.mustAccept(hi, "")
		if !cl.served(hi.ID) {
			t.Fatalf("kind %d: the first same-second version is not served", hi.Kind)
		}
		cl.mustAccept(lo, "")
		got := cl.query(nostr.Filter{Kinds: []int{hi.Kind}, Authors: []string{a.PK}, Tags: nostr.TagMap{"d": {"repo"}}})
		if len(got) != 1 || got[0].ID != lo.ID {
			t.Fatalf("kind %d: store serves %d versions, want only the lower id", hi.Kind, len(got))
		}
		ok, msg := cl.publish(hi)
		if ok && !strings.HasPrefix(msg, "duplicate:") || !ok && !strings.HasPrefix(msg, "duplicate:") {
			t.Fatalf("kind %d: the higher id resent: %v %q, want a duplicate answer", hi.Kind, ok, msg)
		}
		if cl.served(hi.ID) {
			t.Fatalf("kind %d: the higher id is served again", hi.Kind)
		}
	}
}

// Purgatory: of two held same-second states, only the lower id is kept,
// whichever arrives first, and only it authorises a push.
func TestMaintainersV3_S4_TieInPurgatory(t *testing.T) {
	for _, lowFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("lowFirst=%v", lowFirst), func(t *testing.T) {
			e := newEnv(t, nil)
			cl := e.dial()
			a := newKey(t)
			w := newWork(t)
			x := w.commit("x")
			y := w.commit("y")
			cl.mustAccept(e.announcement(a, "repo"), purg)
			at := nostr.Timestamp(e.clk.Now().Unix())
			hi := e.grind(a, 30618, stateTags("repo", "refs/heads/main", x), at, func(id string) bool { return id[0] >= '8' })
			lo := e.grind(a, 30618, stateTags("repo", "refs/heads/main", y), at, below(hi.ID))
			first, second := hi, lo
			if lowFirst {
				first, second = lo, hi
			}
			cl.mustAccept(first, purg)
			ok, msg := cl.publish(second)
			if !ok {
				t.Fatalf("second same-second state: %q", msg)
			}
			if e.held(hi.ID) || !e.held(lo.ID) {
				t.Fatalf("held: high %v low %v, want only the lower id", e.held(hi.ID), e.held(lo.ID))
			}
			refused(t, w, e.cloneURL(a, "repo"), x+":refs/heads/main")
			if out, err := w.push(e.cloneURL(a, "repo"), y+":refs/heads/main"); err != nil {
				t.Fatalf("push realising the lower-id state: %v\n%s", err, out)
			}
			e.eventually("the lower-id state released", 0, func() bool { return cl.served(lo.ID) })
			if cl.served(hi.ID) {
				t.Fatal("the higher-id state served")
			}
		})
	}
}

// The authoritative state among confirmed maintainers, and a held state
// against the stored one: with A's state stored at t, B's held state at
// the same t authorises a push only if its id is lower than A's; a push
// realising the higher id is refused and writes nothing.
func TestMaintainersV3_S4_HeldStateAuthorisesOnlyIfLaterThanStored(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a, b := newKey(t), newKey(t)
	w := newWork(t)
	x := w.commit("x")
	e.release(a, "repo", w, x, nostr.Tag{"maintainers", b.PK})
	cl.mustAccept(e.sign(b, 30617, nostr.Tags{{"d", "repo"}, {"maintainers", a.PK}}, ""), "")
	e.clk.Advance(time.Second)
	at := nostr.Timestamp(e.clk.Now().Unix())
	// A's stored state at t: main and dev at x.
	sA := e.grind(a, 30618, stateTags("repo", "refs/heads/main", x, "refs/heads/dev", x), at, func(id string) bool { return id[0] >= '4' && id[0] < 'c' })
	cl.mustAccept(sA, "")
	if refs := lsRemote(t, e.cloneURL(a, "repo")); refs["refs/heads/dev"] != x {
		t.Fatalf("A's repo not aligned to A's state: %v", refs)
	}
	y := w.commit("y")
	// B's state at t with a higher id: held (its data is missing) but not
	// authoritative.
	hiB := e.grind(b, 30618, stateTags("repo", "refs/heads/main", y), at, above(sA.ID))
	cl.mustAccept(hiB, purg)
	refused(t, w, e.cloneURL(a, "repo"), "main:refs/heads/main", ":refs/heads/dev")
	// B's state at t with a lower id sorts after A's: it authorises.
	loB := e.grind(b, 30618, stateTags("repo", "refs/heads/main", y), at, below(sA.ID))
	cl.mustAccept(loB, purg)
	if out, err := w.push(e.cloneURL(a, "repo"), "main:refs/heads/main", ":refs/heads/dev"); err != nil {
		t.Fatalf("push realising the lower-id held state: %v\n%s", err, out)
	}
	if refs := lsRemote(t, e.cloneURL(a, "repo")); refs["refs/heads/main"] != y || refs["refs/heads/dev"] != "" {
		t.Fatalf("A's refs after the push: %v", refs)
	}
	e.eventually("B's lower-id state released", 0, func() bool { return cl.served(loB.ID) })
}

// The authoritative stored state decides alignment: of two stored
// same-second states by two maintainers, the repository follows the lower
// id whichever arrives last.
func TestMaintainersV3_S4_TieAuthoritativeStoredState(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a, b := newKey(t), newKey(t)
	w := newWork(t)
	x := w.commit("x")
	e.release(a, "repo", w, x, nostr.Tag{"maintainers", b.PK})
	cl.mustAccept(e.sign(b, 30617, nostr.Tags{{"d", "repo"}, {"maintainers", a.PK}}, ""), "")
	e.clk.Advance(time.Second)
	at := nostr.Timestamp(e.clk.Now().Unix())
	lo := e.grind(b, 30618, stateTags("repo", "refs/heads/main", x, "refs/heads/dev", x), at, func(id string) bool { return id[0] < '8' })
	hi := e.grind(a, 30618, stateTags("repo", "refs/heads/main", x, "refs/heads/other", x), at, above(lo.ID))
	cl.mustAccept(lo, "")
	e.eventually("aligned to the lower-id state", 0, func() bool { return lsRemote(t, e.cloneURL(a, "repo"))["refs/heads/dev"] == x })
	cl.mustAccept(hi, "") // stored: another author's version
	refs := lsRemote(t, e.cloneURL(a, "repo"))
	if refs["refs/heads/dev"] != x || refs["refs/heads/other"] != "" {
		t.Fatalf("repo followed the higher-id state: %v", refs)
	}
	// Positive control: a state one second later is authoritative.
	e.clk.Advance(time.Second)
	cl.mustAccept(e.state(a, "repo", map[string]string{"refs/heads/main": x, "refs/heads/other": x}, "refs/heads/main"), "")
	e.eventually("aligned to the later state", 0, func() bool {
		r := lsRemote(t, e.cloneURL(a, "repo"))
		return r["refs/heads/other"] == x && r["refs/heads/dev"] == ""
	})
	// G01-G3: a co-maintainer's state that is its author's latest but
	// older than the authoritative one (sync delivers late) is stored and
	// changes no repository.
	late := e.grind(b, 30618, stateTags("repo", "refs/heads/main", x, "refs/heads/late", x), at, below(lo.ID))
	cl.mustAccept(late, "")
	if r := lsRemote(t, e.cloneURL(a, "repo")); r["refs/heads/late"] != "" || r["refs/heads/other"] != x {
		t.Fatalf("repo rolled back to an older state: %v", r)
	}
}
