package deploy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/internal/testkit"
	"github.com/grasp-dev/grasp/internal/testwait"
	"github.com/nbd-wtf/go-nostr"
)

// graspConfigFor writes the config an operator's cron would pass to
// `grasp admin backup`: the server's data dir and the metrics address it
// listens on (startGrasp lets it pick a port).
func graspConfigFor(t *testing.T, g *graspProc) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "grasp.toml")
	writeFile(t, path, fmt.Sprintf("[server]\ndata_dir = %q\n\n[metrics]\nenabled = true\nlisten = %q\n", g.DataDir, g.Metrics))
	return path
}

// publisher keeps filing issues on a repository, one after another, each
// waiting for its OK, and remembers the ids acknowledged.
type publisher struct {
	mu    sync.Mutex
	acked []string
}

func (p *publisher) ids() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.acked...)
}

func (p *publisher) count() int { p.mu.Lock(); defer p.mu.Unlock(); return len(p.acked) }

func (p *publisher) run(ctx context.Context, relay *relayConn, k key, d string, stop <-chan struct{}) error {
	for i := 0; i < 5000; i++ {
		select {
		case <-stop:
			return nil
		default:
		}
		evt := &nostr.Event{Kind: 1621, CreatedAt: nostr.Now(), Content: "filed while a backup runs", Tags: nostr.Tags{
			{"a", "30617:" + k.PK + ":" + d}, {"p", k.PK}, {"subject", fmt.Sprintf("issue %d", i)},
		}}
		if err := evt.Sign(k.SK); err != nil {
			return err
		}
		ok, msg, err := relay.publish(ctx, evt)
		if err != nil || !ok {
			return fmt.Errorf("issue %d: ok=%v %q %v", i, ok, msg, err)
		}
		p.mu.Lock()
		p.acked = append(p.acked, evt.ID)
		p.mu.Unlock()
	}
	return nil
}

// pusher keeps moving main of a repository: a new commit, its signed state
// (OK true), then the push. It remembers every commit a state named, with
// its place in that order.
type pusher struct {
	mu     sync.Mutex
	states map[string]int
	pushes int
}

func (p *pusher) count() int { p.mu.Lock(); defer p.mu.Unlock(); return p.pushes }

func (p *pusher) stated(sha string) (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n, ok := p.states[sha]
	return n, ok
}

func (p *pusher) run(ctx context.Context, relay *relayConn, k key, d, dir, url string, last nostr.Timestamp, stop <-chan struct{}) error {
	env := gitEnv(dir, "")
	for i := 0; i < 200; i++ {
		select {
		case <-stop:
			return nil
		default:
		}
		if err := os.WriteFile(filepath.Join(dir, "pushed"), []byte(fmt.Sprintf("push %d\n", i)), 0o644); err != nil {
			return err
		}
		if _, err := git(dir, env, "add", "pushed"); err != nil {
			return err
		}
		if _, err := git(dir, env, "commit", "-q", "-m", fmt.Sprintf("push %d", i)); err != nil {
			return err
		}
		sha, err := git(dir, env, "rev-parse", "HEAD")
		if err != nil {
			return err
		}
		// Each state strictly newer than the last, so it replaces it.
		last = max(nostr.Now(), last+1)
		st := &nostr.Event{Kind: 30618, CreatedAt: last, Tags: nostr.Tags{
			{"d", d}, {"refs/heads/main", sha}, {"HEAD", "ref: refs/heads/main"},
		}}
		if err := st.Sign(k.SK); err != nil {
			return err
		}
		p.mu.Lock()
		p.states[sha] = len(p.states)
		p.mu.Unlock()
		if ok, msg, err := relay.publish(ctx, st); err != nil || !ok {
			return fmt.Errorf("state %d: ok=%v %q %v", i, ok, msg, err)
		}
		if _, err := git(dir, env, "push", "-q", url, "main:refs/heads/main"); err != nil {
			return fmt.Errorf("push %d: %w", i, err)
		}
		p.mu.Lock()
		p.pushes++
		p.mu.Unlock()
	}
	return nil
}

// TestBackupWhileServing takes the documented backup (deploy/backup.sh,
// which runs `grasp admin backup`) of a grasp that keeps acknowledging
// events and accepting pushes throughout, restores it with `grasp admin
// restore` into a fresh data dir and starts a server there: every event
// acknowledged before the backup began is served, every ref of every
// repository names a commit a signed state named and `git fsck` finds
// nothing missing, and the server starts without an error. The restored
// server is then backed up --offline and restored again (issue 16 part 6,
// issue 18 part 4).
func TestBackupWhileServing(t *testing.T) {
	needTool(t, "git", "git")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	port := testkit.FreePort(t)
	public := fmt.Sprintf("http://127.0.0.1:%d", port)
	relayURL := fmt.Sprintf("ws://127.0.0.1:%d", port)
	data := filepath.Join(t.TempDir(), "data")
	g := startGrasp(t, fmt.Sprintf("127.0.0.1:%d", port), public, data, "")

	// Two repositories: "archive" pushed once, "busy" pushed throughout.
	// The archive holds 16 MiB that does not compress and is copied first
	// (by identifier), so pushes to busy land while a backup runs, and a
	// backup that dumped the store before copying the repositories would
	// restore busy's refs ahead of its stored state.
	k := newKey(t)
	archiveDir, _ := smallRepo(t)
	if err := writeRandom(filepath.Join(archiveDir, "blob"), 16<<20); err != nil {
		t.Fatal(err)
	}
	mustGit(t, archiveDir, gitEnv(archiveDir, ""), "add", "blob")
	mustGit(t, archiveDir, gitEnv(archiveDir, ""), "commit", "-q", "-m", "blob")
	archiveSHA := mustGit(t, archiveDir, gitEnv(archiveDir, ""), "rev-parse", "HEAD")
	busyDir, busySHA := smallRepo(t)
	pub, err := dialRelay(ctx, relayURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.close()
	busyState := k.state(t, "busy", busySHA)
	for _, evt := range []*nostr.Event{
		k.announcement(t, public, relayURL, "archive"), k.state(t, "archive", archiveSHA),
		k.announcement(t, public, relayURL, "busy"), busyState,
	} {
		if ok, msg, err := pub.publish(ctx, evt); err != nil || !ok {
			t.Fatalf("publish kind %d: %v %q %v", evt.Kind, ok, msg, err)
		}
	}
	mustGit(t, archiveDir, gitEnv(archiveDir, ""), "push", cloneURL(public, k, "archive"), "main:refs/heads/main")
	mustGit(t, busyDir, gitEnv(busyDir, ""), "push", cloneURL(public, k, "busy"), "main:refs/heads/main")

	// Issues and pushes go on before, during and after the backup, each on
	// its own connection.
	pushRelay, err := dialRelay(ctx, relayURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pushRelay.close()
	issues := &publisher{}
	pushes := &pusher{states: map[string]int{archiveSHA: 0, busySHA: 0}}
	stop := make(chan struct{})
	issuesDone, pushesDone := make(chan error, 1), make(chan error, 1)
	go func() { issuesDone <- issues.run(ctx, pub, k, "archive", stop) }()
	go func() {
		pushesDone <- pushes.run(ctx, pushRelay, k, "busy", busyDir, cloneURL(public, k, "busy"), busyState.CreatedAt, stop)
	}()
	running := func() error {
		select {
		case err := <-issuesDone:
			return fmt.Errorf("issues stopped: %v", err)
		case err := <-pushesDone:
			return fmt.Errorf("pushes stopped: %v", err)
		default:
			return nil
		}
	}
	testwait.ForErr(t, "the first issues and pushes", func() (bool, error) {
		return issues.count() >= 20 && pushes.count() >= 2, running()
	})

	// Three backups in a row, as cron would take them, keeping two; the
	// last is restored.
	dir := filepath.Join(t.TempDir(), "backups")
	var beforeBackup []string
	var pushesBefore, issuesAfter, pushesAfter int
	for range 3 {
		// Every OK read so far was sent before the backup began.
		beforeBackup, pushesBefore = issues.ids(), pushes.count()
		cmd := exec.CommandContext(ctx, "bash", filepath.Join(repoRoot, "deploy/backup.sh"),
			"--keep", "2", "--grasp", graspBinary(t), graspConfigFor(t, g), dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("backup.sh: %v\n%s", err, out)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if !strings.HasPrefix(lines[len(lines)-1], "backup: done, "+dir+"/grasp-") {
			t.Fatalf("backup.sh output:\n%s", out)
		}
		issuesAfter, pushesAfter = issues.count(), pushes.count()
		t.Logf("backup taken while %d issues and %d pushes were acknowledged (%d and %d before it)",
			issuesAfter-len(beforeBackup), pushesAfter-pushesBefore, len(beforeBackup), pushesBefore)
	}
	if gens, err := filepath.Glob(filepath.Join(dir, "grasp-*")); err != nil || len(gens) != 2 {
		t.Errorf("backup.sh --keep 2 left %v, %v", gens, err)
	}
	// The server carries on: more issues and pushes after the backups.
	testwait.ForErr(t, "an issue and a push acknowledged after the backup", func() (bool, error) {
		return issues.count() > issuesAfter && pushes.count() > pushesAfter, running()
	})
	close(stop)
	if err := <-issuesDone; err != nil {
		t.Fatal(err)
	}
	if err := <-pushesDone; err != nil {
		t.Fatal(err)
	}
	// --offline is for a stopped server: with this one running it refuses.
	offDest := filepath.Join(t.TempDir(), "offline")
	if out, err := exec.Command(graspBinary(t), "admin", "backup", "--offline", "--config", graspConfigFor(t, g), offDest).CombinedOutput(); err == nil || !strings.Contains(string(out), "is the server running?") {
		t.Errorf("backup --offline of a running server: %v %s", err, out)
	}
	if _, err := os.Stat(offDest); !os.IsNotExist(err) {
		t.Errorf("the refused offline backup left %s: %v", offDest, err)
	}
	g.stop(t)

	// Restore as docs/operations.md says, into a fresh data dir.
	restored := filepath.Join(t.TempDir(), "restored")
	if b, err := exec.Command(graspBinary(t), "admin", "restore", filepath.Join(dir, "latest"), restored).CombinedOutput(); err != nil {
		t.Fatalf("grasp admin restore: %v\n%s", err, b)
	}
	g2 := checkRestored(ctx, t, restored, public, k, beforeBackup, pushes)

	// The same with the server stopped: --offline reads the data dir.
	g2.stop(t)
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(repoRoot, "deploy/backup.sh"),
		"--offline", "--grasp", graspBinary(t), graspConfigFor(t, g2), dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("backup.sh --offline: %v\n%s", err, out)
	}
	again := filepath.Join(t.TempDir(), "again")
	if b, err := exec.Command(graspBinary(t), "admin", "restore", filepath.Join(dir, "latest"), again).CombinedOutput(); err != nil {
		t.Fatalf("grasp admin restore of the offline backup: %v\n%s", err, b)
	}
	checkRestored(ctx, t, again, public, k, beforeBackup, pushes)
}

// checkRestored starts grasp on a restored data dir and checks what
// TestBackupWhileServing promises; it returns the running server.
func checkRestored(ctx context.Context, t *testing.T, data, public string, k key, acked []string, pushes *pusher) *graspProc {
	t.Helper()
	g := startGrasp(t, fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t)), public, data, "")
	r, err := dialRelay(ctx, "ws://"+g.Addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	served := map[string]bool{}
	for i := 0; i < len(acked); i += 200 {
		batch := acked[i:min(len(acked), i+200)]
		_, evs, err := r.subscribe(ctx, nostr.Filter{IDs: batch, Limit: len(batch)})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			served[e.ID] = true
		}
	}
	missing := 0
	for _, id := range acked {
		if !served[id] {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%s: %d of the %d issues acknowledged before the backup are missing", data, missing, len(acked))
	}
	_, anns, err := r.subscribe(ctx, nostr.Filter{Authors: []string{k.PK}, Kinds: []int{30617}})
	if err != nil || len(anns) != 2 {
		t.Errorf("%s: restored announcements: %d, %v", data, len(anns), err)
	}

	repos, err := filepath.Glob(filepath.Join(data, "git", "npub1*", "*.git"))
	if err != nil || len(repos) != 2 {
		t.Fatalf("%s: restored repositories %v, %v", data, repos, err)
	}
	for _, repo := range repos {
		env := gitEnv(t.TempDir(), "")
		name := strings.TrimSuffix(filepath.Base(repo), ".git")
		if out, err := git(repo, env, "fsck", "--no-dangling", "--no-progress"); err != nil || out != "" {
			t.Errorf("git fsck %s: %v\n%s", repo, err, out)
		}
		refs := mustGit(t, repo, env, "for-each-ref", "--format=%(objectname) %(refname)")
		if refs == "" {
			t.Errorf("%s has no refs", repo)
		}
		for _, l := range strings.Split(refs, "\n") {
			sha, ref, _ := strings.Cut(l, " ")
			if _, ok := pushes.stated(sha); !ok {
				t.Errorf("%s: %s is %s, which no signed state named", repo, ref, sha)
			}
		}
		// The store was dumped after the repositories were copied: the
		// state it holds is the one the refs match or a later one. It may
		// still be held in purgatory (the dump came between the push and
		// the state's release, which follows the push): the restored
		// server then releases it, as after a power cut at that moment.
		onDisk, _ := pushes.stated(mustGit(t, repo, env, "rev-parse", "main"))
		var served int
		var waited bool
		testwait.ForErr(t, "the restored server to serve a state of "+name+" as new as its refs", func() (bool, error) {
			id, st, err := r.subscribe(ctx, nostr.Filter{Authors: []string{k.PK}, Kinds: []int{30618}, Tags: nostr.TagMap{"d": {name}}})
			if err == nil {
				closeSub := nostr.CloseEnvelope(id)
				err = r.send(ctx, &closeSub)
			}
			if err != nil || len(st) > 1 {
				return false, fmt.Errorf("restored state of %s: %d events, %v", name, len(st), err)
			}
			if len(st) == 0 {
				return false, nil
			}
			var main string
			if tag := st[0].Tags.Find("refs/heads/main"); len(tag) > 1 {
				main = tag[1]
			}
			n, ok := pushes.stated(main)
			if !ok {
				return false, fmt.Errorf("the restored state of %s names main %q, which the test never published", name, main)
			}
			if served = n; served < onDisk && !waited {
				waited = true
				t.Logf("%s: %s serves the state of push %d, its refs are at push %d: waiting for its release", data, name, served, onDisk)
			}
			return served >= onDisk, nil
		})
		t.Logf("%s: %s serves the state of push %d, its refs are at push %d", data, name, served, onDisk)
		// What the restored server serves is what is on disk.
		url := fmt.Sprintf("http://%s/%s/%s.git", g.Addr, filepath.Base(filepath.Dir(repo)), name)
		if got := mustGit(t, t.TempDir(), env, "ls-remote", url, "refs/heads/main"); !strings.HasPrefix(got, mustGit(t, repo, env, "rev-parse", "main")) {
			t.Errorf("restored %s: served main %q differs from the one on disk", name, got)
		}
	}
	if errs := logErrors(t, g); len(errs) > 0 {
		t.Errorf("%s: the restored server logged errors:\n%s", data, strings.Join(errs, "\n"))
	}
	return g
}

// logErrors lists the error records of grasp's log so far.
func logErrors(t *testing.T, g *graspProc) []string {
	t.Helper()
	f, err := os.Open(g.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec map[string]any
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec["@level"] == "error" {
			out = append(out, sc.Text())
		}
	}
	return out
}

// TestRestoreRefusesNonEmptyTarget: `grasp admin restore` into a data dir
// that holds anything (a running server's, or one restored before) refuses,
// names the reason, and leaves the directory as it was; an incomplete
// backup (no manifest) is refused too.
func TestRestoreRefusesNonEmptyTarget(t *testing.T) {
	needTool(t, "git", "git")
	data := filepath.Join(t.TempDir(), "data")
	g := startGrasp(t, "127.0.0.1:0", "http://127.0.0.1", data, "")
	dir := filepath.Join(t.TempDir(), "backups")
	if out, err := exec.Command("bash", filepath.Join(repoRoot, "deploy/backup.sh"), "--grasp", graspBinary(t), graspConfigFor(t, g), dir).CombinedOutput(); err != nil {
		t.Fatalf("backup.sh: %v\n%s", err, out)
	}
	src := filepath.Join(dir, "latest")

	before := listTree(t, data)
	out, err := exec.Command(graspBinary(t), "admin", "restore", src, data).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "refusing to restore into "+data) || !strings.Contains(string(out), "not empty") {
		t.Errorf("restore into the running server's data dir: %v %s", err, out)
	}
	if after := listTree(t, data); after != before {
		t.Errorf("the refused restore changed the data dir:\nbefore %s\nafter %s", before, after)
	}

	other := t.TempDir()
	writeFile(t, filepath.Join(other, "keep-me"), "an operator's file\n")
	out, err = exec.Command(graspBinary(t), "admin", "restore", src, other).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "not empty") {
		t.Errorf("restore into a directory with a file: %v %s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(other, "keep-me")); err != nil || string(b) != "an operator's file\n" {
		t.Errorf("the refused restore touched the file: %q %v", b, err)
	}
	if ents, _ := os.ReadDir(other); len(ents) != 1 {
		t.Errorf("the refused restore left %d entries", len(ents))
	}

	incomplete := t.TempDir()
	out, err = exec.Command(graspBinary(t), "admin", "restore", incomplete, filepath.Join(t.TempDir(), "new")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "not a complete grasp backup") {
		t.Errorf("restore from a directory without a manifest: %v %s", err, out)
	}
}

// listTree names every file under dir with its size, to compare; the
// serving store's own files are left out (badger may write them any time).
func listTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if p == filepath.Join(dir, "store") {
			return filepath.SkipDir
		}
		fmt.Fprintf(&b, "%s %d\n", p, info.Size())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
