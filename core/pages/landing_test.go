package pages

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
)

// TestPages_LandingListsSearchesAndPaginates: the hosted repositories,
// searchable by name and paginated, the version, NIP-11 and relay links, a
// favicon, and the description said once (issue 16 part 2).
func TestPages_LandingListsSearchesAndPaginates(t *testing.T) {
	r := newRig(t, "https://git.example.org", func(o *Options) { o.PerPage = 2 })
	owner := newKey(t)
	work := workTree(t, map[string]string{"a": "a"}, "a")
	for i, d := range []string{"alpha", "beta", "gamma-tools", "delta"} {
		r.announce(owner, d, 100, nostr.Tags{{"name", "Name " + d}, {"description", fmt.Sprintf("Description %d", i)}})
		r.push(owner, d, work)
	}
	status, body := r.get("/")
	if status != http.StatusOK {
		t.Fatalf("landing: %d", status)
	}
	mustContain(t, "landing page 1", body, "4 repositories, page 1 of 2", ">Name alpha</a>", ">Name beta</a>", "Description 0",
		`href="`+git.RepoURLPath(nip34.Npub(owner.PK), "alpha")+`"`, "wss://git.example.org", `href="/nip11.json"`,
		"v9.8.7", `rel="icon" type="image/png" href="/icon.png"`, `href="/?page=2#repositories"`)
	mustNotContain(t, "landing page 1", body, "Name gamma-tools")
	if n := strings.Count(body, "A server for tests"); n != 1 {
		t.Errorf("the description appears %d times, want once", n)
	}
	// The generic explanation stands in for a missing description, never
	// next to one that says the same.
	mustNotContain(t, "landing page 1", body, "git collaboration\nevents")
	r2 := newRig(t, "https://git.example.org", func(o *Options) { o.Description = "" })
	_, body = r2.get("/")
	mustContain(t, "landing without a description", body, "git collaboration\nevents")
	_, body = r.get("/?page=2")
	mustContain(t, "landing page 2", body, ">Name gamma-tools</a>", "Previous page")
	_, body = r.get("/?q=GAMMA")
	mustContain(t, "search", body, "1 matching repository", ">Name gamma-tools</a>")
	mustNotContain(t, "search", body, ">Name alpha</a>")
	// a repository page's owner link lists the owner's repositories
	_, repoPage := r.get(git.RepoURLPath(nip34.Npub(owner.PK), "beta"))
	ownerLink := "/?q=" + nip34.Npub(owner.PK) + "#repositories"
	mustContain(t, "repo page", repoPage, `href="`+ownerLink+`"`)
	_, body = r.get(strings.TrimSuffix(ownerLink, "#repositories"))
	mustContain(t, "owner's repositories", body, "4 matching repositories")
	// by the announced name too, never by a stranger's announcement of the
	// same identifier
	stranger := newKey(t)
	r.announce(stranger, "beta", 200, nostr.Tags{{"name", "Impostor title"}})
	_, body = r.get("/?q=name+BETA")
	mustContain(t, "search by name", body, "1 matching repository", ">Name beta</a>")
	_, body = r.get("/?q=impostor")
	mustContain(t, "search by a stranger's name", body, "0 matching repositories")
	_, body = r.get("/?q=%3Cscript%3E")
	mustContain(t, "hostile search", body, "0 matching repositories", `value="&lt;script&gt;"`)
}

// TestBasePath_PagesLinkUnderThePath: every link a page writes carries the
// base path (issue 10 part 5).
func TestBasePath_PagesLinkUnderThePath(t *testing.T) {
	r := newRig(t, "https://example.org/git", nil)
	owner := newKey(t)
	r.announce(owner, "r", 100, nil)
	r.push(owner, "r", workTree(t, map[string]string{"README.md": "# Under a path\n"}, "c"))
	repo := "/git" + git.RepoURLPath(nip34.Npub(owner.PK), "r")
	_, body := r.get("/git/")
	mustContain(t, "landing", body, `href="`+repo+`"`, `href="/git/nip11.json"`, `href="/git/icon.png"`, "wss://example.org/git",
		"https://example.org/git/&lt;npub&gt;")
	status, body := r.get(repo)
	if status != http.StatusOK {
		t.Fatalf("repo page under the path: %d", status)
	}
	mustContain(t, "repo page", body, "Under a path", `href="`+repo+`/tree"`, `href="/git/"`,
		"git clone https://example.org/git/"+nip34.Npub(owner.PK)+"/r.git")
	mustNotContain(t, "repo page", body, `href="/npub1`, `href="/"`)
}
