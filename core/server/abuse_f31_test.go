package server_test

import (
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/nbd-wtf/go-nostr"
)

// F31: since the F03 fix, 20 throwaway announcements of a victim's
// identifier (one address, renewable every TTL) made the owner's invited
// maintainer's list-back fail with "rate-limited: 20 announcements of
// repository "victim" already wait...". The maintainer now lists back
// whatever strangers park under the identifier, and the cap still holds
// for the strangers.
func TestAbuse_F31_InviteeListsBackPastTheIdentifierCap(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		// the stranger's address is not what stops it here
		c.Purgatory.MaxHeldAnnouncementsPerIP = 100
		c.Purgatory.MaxHeldAnnouncementsPerIdentifier = 20
	})
	a, b, c := newKey(t), newKey(t), newKey(t)
	w := newWork(t)
	x := w.commit("x")
	e.release(a, "victim", w, x, nostr.Tag{"maintainers", b.PK, c.PK})

	cl := e.dial()
	for i := 0; i < 20; i++ {
		cl.mustAccept(e.announcement(newKey(t), "victim"), purg)
	}
	// positive control: the cap holds for a 21st stranger
	cl.mustReject(e.announcement(newKey(t), "victim"), `rate-limited: 20 announcements of repository "victim" already wait`)

	// the invited maintainer lists back (its own copy here, waiting for its
	// first push), and so does the second one: neither is counted
	annB := e.announcement(b, "victim", nostr.Tag{"maintainers", a.PK})
	cl.mustAccept(annB, purg)
	cl.mustAccept(e.announcement(c, "victim", nostr.Tag{"maintainers", a.PK}), purg)
	cl.mustReject(e.announcement(newKey(t), "victim"), `rate-limited: 20 announcements of repository "victim" already wait`)

	// the maintainer's copy takes its push once its state is there
	cl.mustAccept(e.state(b, "victim", map[string]string{"refs/heads/main": x}, "refs/heads/main"), "")
	if out, err := w.push(e.cloneURL(b, "victim"), "main:refs/heads/main"); err != nil {
		t.Fatalf("the invited maintainer's push: %v\n%s", err, out)
	}
	e.eventually("the maintainer's announcement served", 0, func() bool { return cl.served(annB.ID) })
	if got := lsRemote(t, e.cloneURL(b, "victim"))["refs/heads/main"]; !strings.EqualFold(got, x) {
		t.Fatalf("the maintainer's copy has main at %q, want %s", got, x)
	}
}
