package server

import (
	"slices"
	"testing"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/nbd-wtf/go-nostr"
)

// G03-1 (end to end): a comment on an accepted issue, published only to the
// issue author's NIP-65 write relay — a relay no announcement lists — is
// fetched and served here, through the acceptance pipeline; the relay
// list itself is stored because its author takes part in a hosted
// repository. With outbox off the same relay is never dialled, and NIP-11
// lists GRASP-03 only when it is on.
func TestG03_1_CommentOnlyOnAuthorsWriteRelayIsServed(t *testing.T) {
	for _, outbox := range []bool{true, false} {
		listed := newKhatruPeer(t, khatruOpts{negentropy: true})
		write := newKhatruPeer(t, khatruOpts{negentropy: true})
		e := newSyncEnv(t, func(c *config.Config) { c.Sync.Outbox = outbox })
		cl := e.dial()
		a, b, c := newKey(t), newKey(t), newKey(t)
		w := newWork(t)
		tip := w.commit("one")
		e.release(a, "repo", w, tip, nostr.Tag{"relays", listed.url})

		issue := e.sign(b, 1621, nostr.Tags{{"a", repoCoord(a, "repo")}, {"p", a.pk}, {"subject", "bug"}}, "it breaks")
		relays := e.sign(b, 10002, nostr.Tags{{"r", write.url}}, "")
		comment := e.sign(c, 1111, nostr.Tags{{"E", issue.ID, "", b.pk}, {"K", "1621"}, {"P", b.pk}, {"e", issue.ID, "", b.pk}, {"k", "1621"}, {"p", b.pk}}, "same here")
		write.put(comment)
		cl.mustAccept(issue, "")
		cl.mustAccept(relays, "")

		if !outbox {
			e.eventually("sync idle", syncStep, func() bool {
				return e.relayUp(listed.url) && e.metric("grasp_sync_pending_batches", "") == 0
			})
			if n := write.dials.Load(); n != 0 || cl.served(comment.ID) {
				t.Fatalf("outbox off: the write relay was dialled %d times (comment served: %v)", n, cl.served(comment.ID))
			}
			if slices.Contains(e.grasps(), "GRASP-03") {
				t.Fatalf("outbox off: supported_grasps %v has GRASP-03", e.grasps())
			}
			continue
		}
		e.eventually("the comment from the author's write relay", syncStep, func() bool { return cl.served(comment.ID) })
		if e.metric("grasp_sync_outbox_relays", "") != 1 {
			t.Fatalf("grasp_sync_outbox_relays %v, want 1", e.metric("grasp_sync_outbox_relays", ""))
		}
		if !slices.Contains(e.grasps(), "GRASP-03") {
			t.Fatalf("outbox on: supported_grasps %v lacks GRASP-03", e.grasps())
		}
	}
}
