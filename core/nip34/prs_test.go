package nip34

import (
	"strings"
	"testing"
)

// G06-4/5: which clone URLs name this service's /prs/ endpoint.
func TestPRsEndpointAndTarget(t *testing.T) {
	signer := strings.Repeat("ab", 32)
	other := strings.Repeat("cd", 32)
	npub := Npub(signer)
	for _, c := range []struct {
		base, url string
		ok        bool
		id        string
	}{
		{"https://d.example", "https://d.example/prs/" + npub + "/repo.git", true, "repo"},
		{"https://d.example", "https://D.example:443/prs/" + npub + "/my%20repo.git", true, "my repo"},
		{"https://d.example", "https://d.example/prs/" + npub + "/repo.git/", true, "repo"},
		{"https://d.example/git", "https://d.example/git/prs/" + npub + "/repo.git", true, "repo"},
		{"https://d.example/git", "https://d.example/prs/" + npub + "/repo.git", false, ""},
		{"https://d.example", "https://d.example.evil.com/prs/" + npub + "/repo.git", false, ""},
		{"https://d.example", "https://d.example:8443/prs/" + npub + "/repo.git", false, ""},
		{"https://d.example", "wss://d.example/prs/" + npub + "/repo.git", false, ""},
		{"https://d.example", "https://d.example/prs/" + signer + "/repo.git", false, ""},
		{"https://d.example", "https://d.example/prs/" + strings.ToUpper(npub) + "/repo.git", false, ""},
		{"https://d.example", "https://d.example/prs/" + npub + "/repo", false, ""},
		{"https://d.example", "https://d.example/" + npub + "/repo.git", false, ""},
		{"https://d.example", "https://d.example/prs/" + npub + "/a/b.git", false, ""},
	} {
		svc, err := ParseService(c.base)
		if err != nil {
			t.Fatal(err)
		}
		pk, id, ok := svc.PRsEndpoint(c.url)
		if ok != c.ok || (ok && (pk != signer || id != c.id)) {
			t.Errorf("%s on %s: %q %q %v, want %q %v", c.url, c.base, pk, id, ok, c.id, c.ok)
		}
	}
	svc, _ := ParseService("https://d.example")
	if got := svc.PRsURL(signer, "my repo"); got != "https://d.example/prs/"+npub+"/my%20repo.git" {
		t.Errorf("PRsURL: %s", got)
	}
	url := svc.PRsURL(signer, "repo")
	pr := PR{Pubkey: signer, Repos: []RepoRef{{Pubkey: other, Identifier: "repo"}}, Clone: []string{"https://elsewhere.example/x.git", url}}
	if r, ok := svc.PRsTarget(pr); !ok || r != PRsRepo(signer, "repo") || !r.PRs {
		t.Errorf("target: %+v %v", r, ok)
	}
	for name, p := range map[string]PR{
		"another signer":  {Pubkey: other, Repos: pr.Repos, Clone: pr.Clone},
		"d in no 'a' tag": {Pubkey: signer, Repos: []RepoRef{{Pubkey: other, Identifier: "else"}}, Clone: pr.Clone},
		"no /prs/ clone":  {Pubkey: signer, Repos: pr.Repos, Clone: []string{svc.CloneURL(other, "repo")}},
	} {
		if r, ok := svc.PRsTarget(p); ok {
			t.Errorf("%s: target %+v", name, r)
		}
	}
	if PRsRepo(signer, "repo") == (RepoRef{Pubkey: signer, Identifier: "repo"}) {
		t.Error("a /prs/ repository equals the hosted one of the same owner and d")
	}
}
