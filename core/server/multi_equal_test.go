package server_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// Every instance is equal (issue 24 part 8): what one instance on a shared
// PostgreSQL store knows or decides, the others honour.

// A deletion made through A is honoured by B: the issue deleted on A and
// published again through B is refused there too, and neither instance
// serves it. (Before, B's index of deletions knew only its own, so B
// accepted the issue and both served it again.)
func TestMulti_DeletionOnAHonouredOnB(t *testing.T) {
	in := newInstances(t, 2, nil)
	a, b := in[0], in[1]
	k := newKey(t)
	w := newWork(t)
	a.release(k, "repo", w, w.commit("one"))
	issue := a.sign(k, 1621, nostr.Tags{{"a", "30617:" + k.PK + ":repo"}, {"subject", "to delete"}}, "an issue")
	ca := a.dial()
	ca.mustAccept(issue, "")
	a.clk.Advance(time.Second)
	ca.mustAccept(a.sign(k, 5, nostr.Tags{{"e", issue.ID}, {"k", "1621"}}, "deleted"), "")
	ca.mustReject(issue, "blocked: this event was deleted by its author")
	// at once through B: no wait for the fan-out
	cb := b.dial()
	cb.mustReject(issue, "blocked: this event was deleted by its author")
	if ca.served(issue.ID) || cb.served(issue.ID) {
		t.Fatal("the deleted issue is served again")
	}
	// and an addressable event deleted by address through A
	ann := a.announcement(k, "other")
	ca.mustAccept(ann, purg)
	a.clk.Advance(time.Second)
	ca.mustAccept(a.sign(k, 5, nostr.Tags{{"a", "30617:" + k.PK + ":other"}}, ""), "")
	cb.mustReject(ann, "blocked: this event was deleted by its author")
}

// A state B refused, because its author was only invited, is re-run on B
// when the invitee lists back through A: the index of refused states is
// each instance's own, the re-run is shared. (Before, only the instance
// that took the announcement re-ran its own refusals, and B's were lost.)
func TestMulti_StateRefusedOnBReRunWhenInviteeListsBackOnA(t *testing.T) {
	in := newInstances(t, 2, nil)
	a, b := in[0], in[1]
	owner, invitee := newKey(t), newKey(t)
	w := newWork(t)
	x := w.commit("x")
	a.release(owner, "repo", w, x, role("M", owner), role("m", invitee))
	a.clk.Advance(time.Second)
	b.clk.Advance(time.Second)
	st := a.state(invitee, "repo", map[string]string{"refs/heads/main": x, "refs/heads/dev": x}, "refs/heads/main")
	cb := b.dial()
	cb.mustReject(st, notAuthorized)

	a.clk.Advance(time.Second)
	a.dial().mustAccept(a.sign(invitee, 30617, nostr.Tags{{"d", "repo"}, role("M", owner), role("m", invitee)}, ""), "")
	b.eventually("B to re-run the state it refused and store it", 0, func() bool { return cb.served(st.ID) })
	ca := a.dial()
	a.eventually("A to serve the state B stored", 0, func() bool { return ca.served(st.ID) })
	a.eventually("the owner's repository aligned to the invitee's state", 0, func() bool {
		return lsRemote(t, a.cloneURL(owner, "repo"))["refs/heads/dev"] == x
	})
}

// An ephemeral event is refused by every instance alike, from a client
// and from a purgatory release: no instance relays one that the others
// would not see (the release path used to hand it to this instance's own
// subscribers only).
func TestMulti_EphemeralEventsAlikeOnEveryInstance(t *testing.T) {
	in := newInstances(t, 2, nil)
	k := newKey(t)
	for _, e := range in {
		evt := e.sign(k, 20001, nil, "ephemeral")
		e.dial().mustReject(evt, "blocked: ephemeral events are not relayed here")
		if err := e.srv.Relay().Publish(context.Background(), evt); err == nil || !strings.Contains(err.Error(), "blocked: ephemeral") {
			t.Fatalf("a released ephemeral event: %v, want it refused", err)
		}
	}
}

// An instance on PostgreSQL keeps nothing in a local database: it opens
// no badger store in its data directory (before, each opened an empty one
// beside PostgreSQL, with its memtables, caches and goroutines).
func TestMulti_NoLocalStoreOnPostgres(t *testing.T) {
	for _, e := range newInstances(t, 2, nil) {
		dir := filepath.Join(e.cfg.Server.DataDir, "store")
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("%s exists (%v): a local store was opened beside PostgreSQL", dir, err)
		}
	}
}
