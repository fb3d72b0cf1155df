package policy

import (
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
)

func freshKey() string {
	var b [32]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// flood builds n announcements of identifier d from fresh keys, listing
// this service (so each would host a repo), dated created.
func (e *rig) flood(n int, d string, created nostr.Timestamp) []*nostr.Event {
	var out []*nostr.Event
	for i := 0; i < n; i++ {
		pk := freshKey()
		evt := &nostr.Event{Kind: nip34.KindAnnouncement, PubKey: pk, CreatedAt: created, Tags: nostr.Tags{
			{"d", d}, {"clone", e.svc.CloneURL(pk, d)}, {"relays", e.svc.RelayURL()},
		}}
		evt.ID = evt.GetID()
		out = append(out, evt)
	}
	return out
}

// F03, held variant: the owner's announcement waits in purgatory and 600
// backdated announcements of the same identifier from fresh keys are held
// too. Before the fix the owner's and the maintainer's states were refused
// "invalid: author not authorized for this repository" (the owner's
// announcement fell out of a 500-row by-identifier read).
func TestAbuse_F03_HeldFloodDoesNotLockOutOwner(t *testing.T) {
	e := newEnv(t, nil)
	// Backdated before the owner's (the audit used created_at=1000000,
	// long before any real announcement; this rig's clock starts at 1000),
	// and held first: purgatory answers oldest first.
	e.hold(e.flood(600, "victim", 1)...)
	e.hold(e.ann(pkA, "victim", true, pkB), e.ann(pkB, "victim", false, pkA))
	for _, pk := range []string{pkA, pkB} {
		d := e.decide(e.state(pk, "victim", "refs/heads/main", oid('1')))
		want(t, d, Hold, "purgatory:")
		wantEffect(t, d, AwaitGitData, repo(pkA, "victim"))
	}
	// Positive control: a stranger's state is still refused.
	want(t, e.decide(e.state(pkX, "victim", "refs/heads/main", oid('1'))), Rejected, "invalid: author not authorized for this repository")
}

// F03, released variant: 520 stored same-identifier repositories, newer
// than the owner's. Before the fix the owner's and maintainer's states and
// issues on the repo were refused.
func TestAbuse_F03_ReleasedFloodDoesNotLockOutOwner(t *testing.T) {
	e := newEnv(t, nil)
	e.stored(e.ann(pkA, "victim", true, pkB), e.ann(pkB, "victim", false, pkA))
	e.stored(e.flood(520, "victim", e.ts+100)...)
	e.git.add(pkA, "victim", oid('1'))
	for _, pk := range []string{pkA, pkB} {
		d := e.decide(e.state(pk, "victim", "refs/heads/main", oid('1')))
		want(t, d, Store, "")
		wantEffect(t, d, AlignRepo, repo(pkA, "victim"))
	}
	issue := e.event(nip34.KindIssue, pkX, []string{"a", coord(pkA, "victim")})
	want(t, e.decide(issue), Store, "")
	// A flooding key's own repository is still its own.
	want(t, e.decide(e.state(pkX, "victim", "refs/heads/main", oid('1'))), Rejected, "invalid: author not authorized")
}

// F31: an announcement is Invited (exempt from purgatory's per-identifier
// cap) only when a served announcement of its identifier names its author;
// a held inviter, which anyone can have, and a stranger's own do not count.
func TestAbuse_F31_InvitedOnlyByAServedAnnouncement(t *testing.T) {
	e := newEnv(t, nil)
	e.stored(e.ann(pkA, "victim", true, pkB))
	e.hold(e.ann(pkX, "victim", true, pkC))
	for _, c := range []struct {
		pk, lists string
		invited   bool
	}{
		{pkB, pkA, true},  // listed by the served owner's announcement
		{pkC, pkX, false}, // listed by a held one only
		{pkC, pkA, false}, // names the owner, who does not name it
		{freshKey(), "", false},
	} {
		var evt *nostr.Event
		if c.lists != "" {
			evt = e.ann(c.pk, "victim", true, c.lists)
		} else {
			evt = e.ann(c.pk, "victim", true)
		}
		d := e.decide(evt)
		want(t, d, Hold, "purgatory:")
		if d.Invited != c.invited {
			t.Errorf("announcement by %s naming %s: Invited %v, want %v", c.pk[:8], c.lists, d.Invited, c.invited)
		}
	}
}
