package hosting

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/purgatory"
)

// G01-G5b: a push's refs/nostr/<id> placeholders are recorded with the
// pushing address and share the push's bytes (the remainder on the
// first), which is what the placeholder quotas count.
func TestG01_G5_PushRecordsItsPlaceholders(t *testing.T) {
	r := newRig(t)
	a := newKey(t)
	_, repo := r.announce(a, "r")
	id1, id2 := strings.Repeat("1", 64), strings.Repeat("2", 64) // PR events not yet published
	c1 := r.commitTo(repo, "refs/nostr/"+id1, "one")
	c2 := r.commitTo(repo, "refs/nostr/"+id2, "two")
	r.h.OnPush(context.Background(), pushed(repo, nil, "198.51.100.5", 11, map[string]string{id1: c1, id2: c2}))
	if n := r.purg.Placeholders(); n != 2 {
		t.Fatalf("%d placeholders recorded, want 2", n)
	}
	_, ip, _ := r.purg.PlaceholderUsage(a.PK, "198.51.100.5")
	if ip.Placeholders != 2 || ip.Bytes != 11 {
		t.Fatalf("the pushing address holds %+v, want 2 placeholders and the push's 11 bytes", ip)
	}
}

// A push of data without a state releases the repository's held
// announcement (its first branch is git data).
func TestPushWithoutStateReleasesTheAnnouncement(t *testing.T) {
	r := newRig(t)
	a := newKey(t)
	ann, repo := r.announce(a, "r")
	r.commit(repo)
	r.h.OnPush(context.Background(), pushed(repo, nil, "198.51.100.5", 0, nil))
	if !r.isPublished(ann) || r.held(ann) {
		t.Fatal("the announcement of a repository with git data stays held")
	}
}

// F02: placeholder pushes are admitted against the quotas before git
// runs; one over them is refused with a readable text and no reservation.
func TestReservePlaceholdersAgainstTheQuotas(t *testing.T) {
	r := newRigWith(t, rigOptions{purg: purgatory.Options{PlaceholderQuotas: purgatory.PlaceholderQuotas{PerRemote: 1}}})
	repo := nip34.RepoRef{Pubkey: newKey(t).PK, Identifier: "r"}
	rv, err := r.h.ReservePlaceholders(repo, "198.51.100.5", []string{"a"})
	if err != nil || rv == nil {
		t.Fatalf("first reservation: %v", err)
	}
	defer rv.Release()
	rv2, err := r.h.ReservePlaceholders(repo, "198.51.100.5", []string{"b"})
	var quota *purgatory.QuotaError
	if !errors.As(err, &quota) || quota.Msg == "" || rv2 != nil {
		t.Fatalf("second reservation = %v, %v; want a quota refusal and no reservation", rv2, err)
	}
}
