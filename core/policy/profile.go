package policy

import (
	"context"

	"github.com/nbd-wtf/go-nostr"
)

// Kinds GRASP-03 syncs for the participants of hosted repositories.
const (
	kindMetadata  = 0     // NIP-01 profile
	kindRelayList = 10002 // NIP-65: where GRASP-03 finds a participant's outbox
)

// profile decides a kind 0 or kind 10002 event (GRASP-03 part 2: the
// outbox lookup needs the relay lists, and clients find the profiles of a
// conversation here). Both are anyone's and name no repository, so they are
// stored only for participants of what this server hosts: the author of a
// stored event, or a key a stored event p-tags. Everyone else gets a
// restricted: refusal, so strangers cannot fill the store with profiles.
func (r *Rules) profile(ctx context.Context, evt *nostr.Event) Decision {
	for _, f := range []nostr.Filter{
		{Authors: []string{evt.PubKey}, Limit: 1},
		{Tags: nostr.TagMap{"p": []string{evt.PubKey}}, Limit: 1},
	} {
		found, err := r.stored(ctx, f)
		if err != nil {
			return r.internal("look up the author's events", evt, err)
		}
		if len(found) > 0 {
			return Decision{Outcome: Store}
		}
	}
	return reject("restricted: kind %d is stored only for participants of repositories hosted here", evt.Kind)
}
