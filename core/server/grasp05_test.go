package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/policy"
)

// foreignRepo is a repository announced only elsewhere: its data on a
// foreign git server (plainGit) and its events on foreign relays.
type foreignRepo struct {
	ann, state *nostr.Event
	tip        string
}

func newForeignRepo(t *testing.T, k key, d, gitRoot, cloneBase string, relays ...string) foreignRepo {
	t.Helper()
	w := newWork(t)
	tip := w.commit("archived " + d)
	seedBare(t, gitRoot, d, w, "main:refs/heads/main")
	ann := k.Event(t, 30617, nostr.Now(), nostr.Tags{{"d", d}, {"clone", cloneBase + "/" + d + ".git"}, append(nostr.Tag{"relays"}, relays...)}, "")
	st := k.Event(t, 30618, nostr.Now(), nostr.Tags{{"d", d}, {"refs/heads/main", tip}, {"HEAD", "ref: refs/heads/main"}}, "")
	return foreignRepo{ann: ann, state: st, tip: tip}
}

// nip11 is e's NIP-11 document.
func (e *testServer) nip11() map[string]any {
	doc := map[string]any{}
	e.nip11Into(&doc)
	return doc
}

// nip11Into decodes e's NIP-11 document into v.
func (e *testServer) nip11Into(v any) {
	e.t.Helper()
	status, _, body := httpGet(e.t, e.base, "Accept", "application/nostr+json")
	if status != http.StatusOK {
		e.t.Fatalf("NIP-11: status %d: %s", status, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		e.t.Fatalf("NIP-11: %v: %s", err, body)
	}
}

// G05-1: archive_all, discovery through a bootstrap relay. An announcement
// that does not list this server is accepted, its bare repo created, its
// git data fetched by the hunter from the foreign git server its `clone`
// names, and its events synced from its `relays`; an announcement found
// only on that relay (the relay of an accepted repository) is archived too.
func TestG05_1_ArchiveAllMirrorsARepositoryFromForeignRelayAndGitServer(t *testing.T) {
	gitRoot, gitURL := plainGit(t)
	boot := newKhatruPeer(t, khatruOpts{negentropy: true})
	theirs := newKhatruPeer(t, khatruOpts{negentropy: true})
	a, b, c := newKey(t), newKey(t), newKey(t)
	repo := newForeignRepo(t, a, "repo", gitRoot, gitURL, theirs.url)
	issue := b.Event(t, 1621, nostr.Now(), nostr.Tags{{"a", "30617:" + a.PK + ":repo"}, {"p", a.PK}, {"subject", "bug"}}, "")
	other := newForeignRepo(t, c, "other", gitRoot, gitURL, theirs.url)
	boot.put(repo.ann, repo.state)
	theirs.put(issue, other.ann, other.state)

	e := newSyncEnv(t, func(cfg *config.Config) {
		cfg.Grasp.ArchiveAll = true
		cfg.Sync.BootstrapRelays = []string{boot.url}
	})
	cl := e.dial()
	e.advanceUntil(200*time.Millisecond, func() bool { return cl.served(repo.state.ID) })
	if !cl.served(repo.ann.ID) {
		t.Fatal("the archived announcement is not served with its state")
	}
	if refs := lsRemote(t, e.cloneURL(a, "repo")); refs["refs/heads/main"] != repo.tip {
		t.Fatalf("archived refs %v, want main=%s fetched from the foreign git server", refs, repo.tip)
	}
	// events synced from the announcement's relays, and the repository
	// announced there archived as well
	e.advanceUntil(200*time.Millisecond, func() bool { return cl.served(issue.ID) && cl.served(other.state.ID) })
	if refs := lsRemote(t, e.cloneURL(c, "other")); refs["refs/heads/main"] != other.tip {
		t.Fatalf("second archived repo refs %v, want main=%s", refs, other.tip)
	}
	if err := e.srv.Hosting().CountArchived(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := e.metric("grasp_archive_repos", "mirrored"); n != 2 {
		t.Fatalf("grasp_archive_repos{state=mirrored} = %v, want 2", n)
	}
}

// G05-1, the other side: with archive mode off the same foreign
// repository is neither accepted from the bootstrap relay nor from a
// client, and no bare repo is made for it.
func TestG05_1_WithoutArchiveAForeignRepositoryIsRefused(t *testing.T) {
	gitRoot, gitURL := plainGit(t)
	boot := newKhatruPeer(t, khatruOpts{negentropy: true})
	a := newKey(t)
	repo := newForeignRepo(t, a, "repo", gitRoot, gitURL, boot.url)
	boot.put(repo.ann, repo.state)
	e := newSyncEnv(t, func(cfg *config.Config) { cfg.Sync.BootstrapRelays = []string{boot.url} })
	cl := e.dial()
	// the announcement did reach the rules (and was refused there)
	e.eventually("the foreign announcement synced and refused", syncStep, func() bool {
		return e.metric("grasp_policy_decisions_total", "reject") >= 1
	})
	e.eventually("sync idle", syncStep, func() bool { return e.metric("grasp_sync_pending_batches", "") == 0 })
	e.clk.Advance(time.Second)
	if cl.served(repo.ann.ID) || cl.served(repo.state.ID) {
		t.Fatal("a foreign announcement was taken with archive mode off")
	}
	if st := infoRefsStatus(t, e.cloneURL(a, "repo")); st != http.StatusNotFound {
		t.Fatalf("info/refs of the foreign repo: %d, want 404", st)
	}
	cl.mustReject(repo.ann, "invalid: announcement must list this service")
	if slices.Contains(e.grasps(), "GRASP-05") {
		t.Fatal("GRASP-05 advertised with archive mode off")
	}
}

// G05-1 from a client, by whitelist: the whitelisted owner's announcement
// that does not list this server is answered OK true and its bare repo
// answers git at once; a stranger's is refused. G05-2: the read-only
// archive (the default) refuses an announcement that lists it but is not
// whitelisted, and a push to the archived repository, with a readable git
// error.
func TestG05_2_ReadOnlyArchiveRefusesPushesAndUnlistedRepos(t *testing.T) {
	a, x := newKey(t), newKey(t)
	e := newSyncEnv(t, func(cfg *config.Config) { cfg.Grasp.ArchiveWhitelist = []string{a.Npub} })
	cl := e.dial()
	ann := e.sign(a, 30617, nostr.Tags{{"d", "repo"}, {"clone", "https://git.example.org/repo.git"}, {"relays", "wss://relay.example.org"}}, "")
	cl.mustAccept(ann, purg)
	if st := infoRefsStatus(t, e.cloneURL(a, "repo")); st != http.StatusOK {
		t.Fatalf("archived repo info/refs: %d, want 200", st)
	}
	cl.mustReject(e.sign(x, 30617, nostr.Tags{{"d", "repo"}, {"clone", "https://git.example.org/x.git"}, {"relays", "wss://relay.example.org"}}, ""),
		"invalid: announcement must list this service")
	cl.mustReject(e.announcement(x, "mine"), "restricted: this server is a read-only archive")

	w := newWork(t)
	tip := w.commit("x")
	cl.mustAccept(e.state(a, "repo", map[string]string{"refs/heads/main": tip}, "refs/heads/main"), purg)
	out, err := w.push(e.cloneURL(a, "repo"), "main:refs/heads/main")
	if err == nil {
		t.Fatalf("push to a read-only archive succeeded:\n%s", out)
	}
	if !strings.Contains(out, "read-only archive") || !strings.Contains(out, a.Npub+"/repo") {
		t.Fatalf("the git error does not say why:\n%s", out)
	}
	if refs := lsRemote(t, e.cloneURL(a, "repo")); len(refs) != 0 {
		t.Fatalf("refused push wrote refs: %v", refs)
	}
	if n := e.metric("grasp_archive_refusals_total", "read_only_push"); n != 1 {
		t.Fatalf("read_only_push refusals %v, want 1", n)
	}
	if n := e.metric("grasp_archive_refusals_total", "out_of_scope"); n != 1 {
		t.Fatalf("out_of_scope refusals %v, want 1", n)
	}
}

// With archive_read_only = false an archived repository takes a push the
// maintainers' state authorises, and still refuses one it does not.
func TestG05_2_ReadWriteArchiveTakesAuthorisedPushes(t *testing.T) {
	a := newKey(t)
	e := newSyncEnv(t, func(cfg *config.Config) {
		cfg.Grasp.ArchiveAll = true
		cfg.Grasp.ArchiveReadOnly = false
	})
	cl := e.dial()
	ann := e.sign(a, 30617, nostr.Tags{{"d", "repo"}, {"clone", "https://git.example.org/repo.git"}, {"relays", "wss://relay.example.org"}}, "")
	cl.mustAccept(ann, purg)
	w := newWork(t)
	tip := w.commit("x")
	st := e.state(a, "repo", map[string]string{"refs/heads/main": tip}, "refs/heads/main")
	cl.mustAccept(st, purg)
	w.commit("not in the state")
	if out, err := w.push(e.cloneURL(a, "repo"), "main:refs/heads/main"); err == nil || !strings.Contains(out, "authorisation failed") {
		t.Fatalf("push outside the state: %v\n%s", err, out)
	}
	if out, err := w.push(e.cloneURL(a, "repo"), tip+":refs/heads/main"); err != nil {
		t.Fatalf("authorised push to a read-write archive: %v\n%s", err, out)
	}
	if refs := lsRemote(t, e.cloneURL(a, "repo")); refs["refs/heads/main"] != tip {
		t.Fatalf("refs %v", refs)
	}
	e.eventually("announcement released by the push", 0, func() bool { return cl.served(ann.ID) && cl.served(st.ID) })
}

// G05-1 in hosts mode: repositories announced with a clone or relays URL
// on a listed GRASP host are archived (mirrored from it), others are not.
func TestG05_1_HostsModeArchivesReposOfAGraspHost(t *testing.T) {
	gitRoot, gitURL := plainGit(t)
	u, _ := url.Parse(gitURL)
	// the same foreign git server under two names: only "localhost" is listed
	byName := "http://localhost:" + u.Port()
	boot := newKhatruPeer(t, khatruOpts{negentropy: true})
	a, b := newKey(t), newKey(t)
	listed := newForeignRepo(t, a, "listed", gitRoot, byName, boot.url)
	unlisted := newForeignRepo(t, b, "unlisted", gitRoot, gitURL, "wss://relay.example.org")
	boot.put(listed.ann, listed.state, unlisted.ann, unlisted.state)
	e := newSyncEnv(t, func(cfg *config.Config) {
		cfg.Grasp.ArchiveHosts = []string{"localhost"}
		cfg.Sync.BootstrapRelays = []string{boot.url}
	})
	cl := e.dial()
	e.advanceUntil(200*time.Millisecond, func() bool { return cl.served(listed.state.ID) })
	if refs := lsRemote(t, e.cloneURL(a, "listed")); refs["refs/heads/main"] != listed.tip {
		t.Fatalf("archived refs %v, want main=%s", refs, listed.tip)
	}
	if cl.served(unlisted.ann.ID) {
		t.Fatal("a repository of an unlisted host was archived")
	}
	if st := infoRefsStatus(t, e.cloneURL(b, "unlisted")); st != http.StatusNotFound {
		t.Fatalf("unlisted host's repo info/refs: %d, want 404", st)
	}
	doc := e.nip11()
	if c, _ := doc["curation"].(string); !strings.HasPrefix(c, "Read-only sync of repositories from specified GRASP servers (localhost)") {
		t.Fatalf("curation %q", c)
	}
}

// G05-3: NIP-11 lists GRASP-05 while archiving, with the scope in
// ngit-grasp's words as `curation`.
func TestG05_3_NIP11AdvertisesArchiveAndItsScope(t *testing.T) {
	e := newSyncEnv(t, func(cfg *config.Config) { cfg.Grasp.ArchiveAll = true })
	doc := e.nip11()
	var grasps []string
	for _, g := range doc["supported_grasps"].([]any) {
		grasps = append(grasps, g.(string))
	}
	if !slices.Contains(grasps, "GRASP-05") || !slices.Contains(grasps, "GRASP-02") {
		t.Fatalf("supported_grasps %v", grasps)
	}
	if c := doc["curation"]; c != "Read-only sync of all repositories found on network." {
		t.Fatalf("curation %q", c)
	}
	w := newSyncEnv(t, func(cfg *config.Config) {
		cfg.Grasp.ArchiveWhitelist = []string{nip34.Npub(strings.Repeat("ab", 32))}
	})
	if c, _ := w.nip11()["curation"].(string); !strings.HasPrefix(c, "Read-only sync of whitelisted repositories and maintainers") {
		t.Fatalf("whitelist curation %q", c)
	}
}

// A bulk sync delivers a state before its announcement: refused then,
// re-checked when the announcement is archived, and hunted at once like
// any synced event (sync_fetch_delay), not after the 3 minutes a client is
// given to push.
func TestG05_1_StateBeforeItsAnnouncementIsHuntedAtOnce(t *testing.T) {
	gitRoot, gitURL := plainGit(t)
	a := newKey(t)
	repo := newForeignRepo(t, a, "repo", gitRoot, gitURL, "wss://relay.example.org")
	e := newSyncEnv(t, func(cfg *config.Config) { cfg.Grasp.ArchiveAll = true })
	ctx := context.Background()
	sync := policy.Meta{Source: policy.SourceSync, Remote: "wss://relay.example.org"}
	if ok, msg := e.srv.Relay().Ingest(ctx, repo.state, sync); ok {
		t.Fatalf("a state without its announcement was taken: %q", msg)
	}
	if ok, msg := e.srv.Relay().Ingest(ctx, repo.ann, sync); !ok || !strings.HasPrefix(msg, purg) {
		t.Fatalf("archived announcement: %v %q", ok, msg)
	}
	cl := e.dial()
	e.eventually("the state re-checked and held", 0, func() bool { _, held := e.srv.Purgatory().Get(repo.state.ID); return held })
	// past sync_fetch_delay (500 ms) and a hunt tick, far below 3 minutes
	for i := 0; i < 15; i++ {
		e.clk.Advance(200 * time.Millisecond)
		time.Sleep(10 * time.Millisecond)
	}
	e.eventually("the re-checked state's data fetched", 0, func() bool { return cl.served(repo.state.ID) })
	if refs := lsRemote(t, e.cloneURL(a, "repo")); refs["refs/heads/main"] != repo.tip {
		t.Fatalf("refs %v", refs)
	}
}

// Discovery is live as well as by catch-up: an announcement that appears
// on a bootstrap relay after the archive has caught up with it is archived
// from the live subscription. The bootstrap relay is another archive_all
// grasp (it serves the repository once it has mirrored it itself).
func TestG05_1_LiveDiscoveryFromABootstrapRelay(t *testing.T) {
	gitRoot, gitURL := plainGit(t)
	up := newSyncEnv(t, func(cfg *config.Config) { cfg.Grasp.ArchiveAll = true })
	e := newSyncEnv(t, func(cfg *config.Config) {
		cfg.Grasp.ArchiveAll = true
		cfg.Sync.BootstrapRelays = []string{up.ws}
	})
	e.eventually("caught up with the bootstrap relay", syncStep, func() bool {
		return e.relayUp(up.ws) && e.metric("grasp_sync_pending_batches", "") == 0
	})
	a := newKey(t)
	repo := newForeignRepo(t, a, "repo", gitRoot, gitURL, up.ws)
	sync := policy.Meta{Source: policy.SourceSync, Remote: "wss://relay.example.org"}
	for _, evt := range []*nostr.Event{repo.ann, repo.state} {
		if ok, msg := up.srv.Relay().Ingest(context.Background(), evt, sync); !ok {
			t.Fatalf("bootstrap relay refused %d: %q", evt.Kind, msg)
		}
	}
	upc := up.dial()
	up.advanceUntil(200*time.Millisecond, func() bool { return upc.served(repo.state.ID) })
	cl := e.dial()
	e.advanceUntil(200*time.Millisecond, func() bool { return cl.served(repo.state.ID) && cl.served(repo.ann.ID) })
	if refs := lsRemote(t, e.cloneURL(a, "repo")); refs["refs/heads/main"] != repo.tip {
		t.Fatalf("refs %v", refs)
	}
	if n := e.metric("grasp_sync_events_total", "live"); n < 2 {
		t.Fatalf("%v events counted as live, want the announcement and its state", n)
	}
}

// G05-1 by maintainer: a whitelisted key archives the repositories it is a
// confirmed maintainer of (nip34.Resolve: the owner lists it and it lists
// the owner back), not those that merely name it.
func TestG05_1_WhitelistedMaintainerArchivesTheRepositoriesItMaintains(t *testing.T) {
	m, o, x := newKey(t), newKey(t), newKey(t)
	e := newSyncEnv(t, func(cfg *config.Config) { cfg.Grasp.ArchiveWhitelist = []string{m.Npub} })
	cl := e.dial()
	foreign := func(k key, d string, maintainers ...string) *nostr.Event {
		tags := nostr.Tags{{"d", d}, {"clone", "https://git.example.org/" + k.Npub + "/" + d + ".git"}, {"relays", "wss://relay.example.org"}}
		if len(maintainers) > 0 {
			tags = append(tags, append(nostr.Tag{"maintainers"}, maintainers...))
		}
		return e.sign(k, 30617, tags, "")
	}
	// x names m without m listing x back: not m's repository
	cl.mustReject(foreign(x, "proj", m.PK), "invalid: announcement must list this service")
	cl.mustAccept(foreign(m, "proj", o.PK), purg)
	cl.mustAccept(foreign(o, "proj", m.PK), purg)
	for _, k := range []key{m, o} {
		if st := infoRefsStatus(t, e.cloneURL(k, "proj")); st != http.StatusOK {
			t.Fatalf("%s/proj info/refs: %d, want 200", k.Npub, st)
		}
	}
	if st := infoRefsStatus(t, e.cloneURL(x, "proj")); st != http.StatusNotFound {
		t.Fatalf("the non-maintained repo info/refs: %d, want 404", st)
	}
}
