package nip86

import (
	"fmt"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip70"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/outcome"
)

// Joining with an invite code (NIP-43, whose codes nips#2408's createclaim,
// deleteclaim and listclaims manage): a user's kind-28934 join request,
// protected by NIP-70's "-" tag (so only its authenticated author may send
// it) and carrying ["claim", <code>], makes its author a GRASP-08 member
// when the code is one the operator created. The code stays until the
// operator deletes it (several people may join with one); a member joined
// this way is removed like any other (removemember).

// KindJoinRequest is NIP-43's join request.
const KindJoinRequest = 28934

// joinWindow is how far a join request's created_at may be from now.
const joinWindow = 10 * time.Minute

// Join answers a join request: what its OK says. The relay
// hands it every client's kind-28934 event, after the id, the signature
// and NIP-70 (the author is authenticated) are checked; nothing is stored.
func (s *State) Join(evt *nostr.Event) outcome.Result {
	if evt.Kind != KindJoinRequest {
		return outcome.New(outcome.Invalid, "not a join request (kind 28934)")
	}
	if why, banned := s.BannedPubkey(evt.PubKey); banned {
		return outcome.New(outcome.Blocked, fmt.Sprintf("%s is banned on this relay%s", nip34.Npub(evt.PubKey), because(why)))
	}
	if !nip70.IsProtected(*evt) {
		return outcome.New(outcome.Invalid, "a join request carries the NIP-70 \"-\" tag")
	}
	now := s.clk.Now()
	if t := evt.CreatedAt.Time(); t.Before(now.Add(-joinWindow)) || t.After(now.Add(joinWindow)) {
		return outcome.New(outcome.Invalid, "a join request is dated within 10 minutes of now")
	}
	c := evt.Tags.Find("claim")
	if c == nil || !claimRE.MatchString(c[1]) {
		return outcome.New(outcome.Invalid, "a join request carries [\"claim\", <invite code>]")
	}
	if !s.Has(ListClaims, c[1]) {
		s.log.Info("join request refused: unknown invite code", "pubkey", nip34.Npub(evt.PubKey))
		return outcome.New(outcome.Restricted, "this invite code is not valid here")
	}
	if s.Has(ListMembers, evt.PubKey) {
		return outcome.New(outcome.Duplicate, "you are already a member")
	}
	if err := s.Put(ListMembers, evt.PubKey, "joined with an invite code", "claim:"+c[1]); err != nil {
		return outcome.New(outcome.Error, fmt.Sprintf("could not record the membership: %v", err))
	}
	s.log.Info("NIP-86 change", "method", "join", "pubkey", nip34.Npub(evt.PubKey), "claim", c[1])
	return outcome.Accepted("info: welcome, you are a member of this relay")
}
