package relay

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
)

func get(t *testing.T, method, url string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body of %s: %v", url, err)
	}
	return resp, string(body)
}

func assertCORS(t *testing.T, what string, resp *http.Response) {
	t.Helper()
	h := resp.Header
	if got := h.Values("Access-Control-Allow-Origin"); len(got) != 1 || got[0] != "*" {
		t.Errorf("%s: Access-Control-Allow-Origin = %q, want exactly one \"*\"", what, got)
	}
	if got := h.Get("Access-Control-Allow-Methods"); !strings.Contains(got, "GET") || !strings.Contains(got, "POST") {
		t.Errorf("%s: Access-Control-Allow-Methods = %q", what, got)
	}
	allow := h.Get("Access-Control-Allow-Headers")
	for _, need := range []string{"Content-Type", "Git-Protocol", "Authorization", "Accept", "Content-Encoding", "X-Requested-With", "X-Git-Request-Id"} {
		if !strings.Contains(allow, need) {
			t.Errorf("%s: Access-Control-Allow-Headers %q lacks %s", what, allow, need)
		}
	}
}

var nostrJSON = map[string]string{"Accept": "application/nostr+json"}

func TestG01N1_NIP11Document(t *testing.T) {
	tr := startRelay(t, Options{
		Name: "test grasp", Description: "a test", PubkeyHex: strings.Repeat("ab", 32),
		Contact: "mailto:op@example.org", IconURL: "https://example.org/icon.png",
		SoftwareURL: "https://example.org/grasp", Version: "1.2.3",
		SupportedGrasps: []string{"GRASP-01", "GRASP-02"}, AcceptanceCriteria: "anything listing us",
		Limits: config.Limits{MaxEventTags: 77, CreatedAtLowerLimit: config.Duration(time.Hour)},
	})
	resp, body := get(t, http.MethodGet, tr.base+"/", nostrJSON)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/nostr+json" {
		t.Fatalf("NIP-11: status %d, content-type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	assertCORS(t, "NIP-11", resp)
	var doc map[string]any
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("NIP-11 is not JSON: %v\n%s", err, body)
	}
	for k, want := range map[string]string{"name": "test grasp", "description": "a test",
		"pubkey": strings.Repeat("ab", 32), "contact": "mailto:op@example.org",
		"icon": "https://example.org/icon.png", "software": "https://example.org/grasp",
		"version": "1.2.3", "repo_acceptance_criteria": "anything listing us"} {
		if doc[k] != want {
			t.Errorf("%s = %v, want %q", k, doc[k], want)
		}
	}
	var nips []int
	for _, n := range doc["supported_nips"].([]any) {
		nips = append(nips, int(n.(float64)))
	}
	for _, n := range []int{1, 9, 11, 34, 42, 45, 70, 77} {
		if !slices.Contains(nips, n) {
			t.Errorf("supported_nips %v lacks %d", nips, n)
		}
	}
	if g := doc["supported_grasps"].([]any); len(g) != 2 || g[0] != "GRASP-01" {
		t.Errorf("supported_grasps = %v", g)
	}
	if _, present := doc["curation"]; present {
		t.Error("G01-N4: curation must be absent when not configured")
	}
	lim := doc["limitation"].(map[string]any)
	// The unset limits are config's defaults (issue 9 part 5: one source of
	// defaults; the relay had its own, 100 / 1 MiB / 480 KiB).
	want := map[string]float64{"max_event_tags": 77, "created_at_lower_limit": 3600, "created_at_upper_limit": 900,
		"max_limit": 500, "default_limit": 500, "max_subid_length": 64, "max_subscriptions": 200,
		"max_message_length": 2 << 20, "max_content_length": 1 << 20}
	for k, v := range want {
		if lim[k] != v {
			t.Errorf("limitation.%s = %v, want %v", k, lim[k], v)
		}
	}
}

func TestG01N4_CurationPresentWhenConfigured(t *testing.T) {
	tr := startRelay(t, Options{Curation: "whitelisted maintainers only"})
	_, body := get(t, http.MethodGet, tr.base+"/", map[string]string{"Accept": "text/html, application/nostr+json;q=0.9"})
	var doc map[string]any
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("NIP-11 must be served for an Accept list containing application/nostr+json: %v", err)
	}
	if doc["curation"] != "whitelisted maintainers only" {
		t.Fatalf("curation = %v", doc["curation"])
	}
	if doc["repo_acceptance_criteria"] == "" {
		t.Fatal("G01-N3: repo_acceptance_criteria must never be empty")
	}
}

func TestG01C1_CORSAndRouting(t *testing.T) {
	tr := startRelay(t, Options{Name: "routing test"})
	const repo = "/npub1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq8yaf0w/my%20repo.git/info/refs?service=git-upload-pack"

	// Nothing mounted yet: a 404, with CORS.
	resp, _ := get(t, http.MethodGet, tr.base+repo, nil)
	if resp.StatusCode != 404 {
		t.Fatalf("git path without git handler: %d", resp.StatusCode)
	}
	assertCORS(t, "git 404", resp)

	var gitPaths, pagePaths []string
	tr.srv.HandleGit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gitPaths = append(gitPaths, r.URL.Path)
		w.WriteHeader(http.StatusTeapot)
	}))
	tr.srv.HandlePages(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pagePaths = append(pagePaths, r.Method+" "+r.URL.Path)
		w.WriteHeader(http.StatusAccepted)
	}))
	for _, p := range []string{repo, "/prs/npub1abc/x.git/info/refs", "/npub1abc/x.git/git-upload-pack"} {
		resp, _ = get(t, http.MethodGet, tr.base+p, nil)
		if resp.StatusCode != http.StatusTeapot {
			t.Errorf("%s must go to the git handler, got %d", p, resp.StatusCode)
		}
		assertCORS(t, "git "+p, resp)
	}
	if len(gitPaths) != 3 || gitPaths[0] != "/npub1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq8yaf0w/my repo.git/info/refs" {
		t.Errorf("git handler saw %q", gitPaths)
	}
	// Everything else that is not a websocket or NIP-11 is a page: the
	// landing page, the icon, repository pages and their views, 404s.
	for _, p := range []string{"/", "/icon.png", "/npub1abc/x.git", "/npub1abc/x.git/tree/main", "/nope"} {
		resp, _ = get(t, http.MethodGet, tr.base+p, map[string]string{"Accept": "text/html"})
		if resp.StatusCode != http.StatusAccepted {
			t.Errorf("%s must go to the pages, got %d", p, resp.StatusCode)
		}
		assertCORS(t, "page "+p, resp)
	}
	resp, _ = get(t, http.MethodGet, tr.base+"/nip11.json", nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/nostr+json" {
		t.Errorf("/nip11.json = %d %q, want the NIP-11 document", resp.StatusCode, resp.Header.Get("Content-Type"))
	}

	// G01-C4: OPTIONS on any path, known or not, is a 204 with CORS.
	for _, p := range []string{"/", repo, "/anything/else"} {
		resp, body := get(t, http.MethodOptions, tr.base+p, map[string]string{
			"Origin": "https://budabit.club", "Access-Control-Request-Method": "POST",
			"Access-Control-Request-Headers": "git-protocol, content-type"})
		if resp.StatusCode != http.StatusNoContent || body != "" {
			t.Errorf("OPTIONS %s = %d %q", p, resp.StatusCode, body)
		}
		assertCORS(t, "OPTIONS "+p, resp)
	}
	if len(gitPaths) != 3 || len(pagePaths) != 5 {
		t.Errorf("OPTIONS must not reach git or the pages: %q %q", gitPaths, pagePaths)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	store := openBadger(t, t.TempDir(), false)
	defer store.Close()
	for name, opts := range map[string]Options{
		"ftp public URL":     {PublicURL: "ftp://example.org"},
		"public URL no host": {PublicURL: "http://"},
		"default above max":  {Limits: config.Limits{MaxLimit: 10, DefaultLimit: 20}},
	} {
		opts.Events = store
		if _, err := New(opts, env.Env{}); err == nil {
			t.Errorf("%s: New must fail", name)
		}
	}
	if _, err := New(Options{}, env.Env{}); err == nil {
		t.Error("New without a store must fail")
	}
	s, err := New(Options{PublicURL: "https://git.example.org/", Events: store}, env.Env{})
	if err != nil || s.RelayURL() != "wss://git.example.org" {
		t.Fatalf("https public URL must give wss: %q %v", s.RelayURL(), err)
	}
}
