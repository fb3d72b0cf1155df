package pages

import (
	"net/http"
	"testing"

	"github.com/grasp-dev/grasp/core/policy"
)

// TestPages_PublishingGuideLinkedAndServed: the landing page links the
// publishing guide, and the server serves it rendered from the binary with
// its own URLs, under a base path too (issue 26 part 7).
func TestPages_PublishingGuideLinkedAndServed(t *testing.T) {
	r := newRig(t, "https://example.org/git", nil)
	_, body := r.get("/git/")
	mustContain(t, "landing", body, `href="/git/publishing">How to publish a repository here</a>`)
	status, body := r.get("/git/publishing")
	if status != http.StatusOK {
		t.Fatalf("guide: %d", status)
	}
	mustContain(t, "guide", body, "<h1>Publishing a repository to a grasp server</h1>", "<h2>Without ngit</h2>",
		"This server is <code>https://example.org/git</code>, its relay <code>wss://example.org/git</code>",
		"<code>"+policy.MsgInPurgatory+"</code>", "refs/nostr/")
	mustNotContain(t, "guide", body, "publish: commands", "raw HTML omitted")
}
