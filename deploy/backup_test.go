package deploy

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// TestBackupWhileServing performs the documented backup (deploy/backup.sh)
// of a grasp that keeps acknowledging events throughout, restores the copy
// into a fresh data dir, and finds there every event acknowledged before the
// pause and the pushed repository (issue 18 part 4).
func TestBackupWhileServing(t *testing.T) {
	needTool(t, "rsync", "rsync")
	needTool(t, "pgrep", "procps")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	port := freePort(t)
	public := fmt.Sprintf("http://127.0.0.1:%d", port)
	relayURL := fmt.Sprintf("ws://127.0.0.1:%d", port)
	data := filepath.Join(t.TempDir(), "data")
	g := startGrasp(t, fmt.Sprintf("127.0.0.1:%d", port), public, data, "")

	// A repository with git data, so that the backup holds both halves.
	k := newKey(t)
	dir, sha := smallRepo(t)
	pub, err := dialRelay(ctx, relayURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.close()
	for _, evt := range []*nostr.Event{k.announcement(t, public, relayURL, "kept"), k.state(t, "kept", sha)} {
		if ok, msg, err := pub.publish(ctx, evt); err != nil || !ok {
			t.Fatalf("publish kind %d: %v %q %v", evt.Kind, ok, msg, err)
		}
	}
	mustGit(t, dir, gitEnv(dir, ""), "push", cloneURL(public, k, "kept"), "main:refs/heads/main")

	// Issues on it are published one after another, each waiting for its
	// OK, before, during and after the backup.
	var (
		mu    sync.Mutex
		acked []string
	)
	stop := make(chan struct{})
	writerDone := make(chan error, 1)
	go func() {
		writerDone <- func() error {
			for i := 0; i < 5000; i++ {
				select {
				case <-stop:
					return nil
				default:
				}
				evt := &nostr.Event{Kind: 1621, CreatedAt: nostr.Now(), Content: "filed while a backup runs", Tags: nostr.Tags{
					{"a", "30617:" + k.pk + ":kept"}, {"p", k.pk}, {"subject", fmt.Sprintf("issue %d", i)},
				}}
				if err := evt.Sign(k.sk); err != nil {
					return err
				}
				ok, msg, err := pub.publish(ctx, evt)
				if err != nil || !ok {
					return fmt.Errorf("issue %d: ok=%v %q %v", i, ok, msg, err)
				}
				mu.Lock()
				acked = append(acked, evt.ID)
				mu.Unlock()
			}
			return nil
		}()
	}()
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	waitFor(t, "the first acknowledged issues", func() (bool, error) { return count() >= 20, nil })

	dest := filepath.Join(t.TempDir(), "backup")
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(repoRoot, "deploy/backup.sh"), "--pid", fmt.Sprint(g.cmd.Process.Pid), data, dest)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var beforePause []string
	var script []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		script = append(script, sc.Text())
		if sc.Text() == "backup: paused" {
			// Every OK read so far was sent before grasp stopped.
			mu.Lock()
			beforePause = append([]string(nil), acked...)
			mu.Unlock()
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("backup.sh: %v\n%s\n%s", err, strings.Join(script, "\n"), stderr.String())
	}
	if beforePause == nil || script[len(script)-1] != "backup: done, "+dest+" holds the data dir as of the pause" {
		t.Fatalf("backup.sh output:\n%s", strings.Join(script, "\n"))
	}
	// The server carries on after the pause.
	resumedAt := count()
	waitFor(t, "an issue acknowledged after the backup", func() (bool, error) {
		select {
		case err := <-writerDone:
			return false, fmt.Errorf("writer stopped: %v", err)
		default:
		}
		return count() > resumedAt, nil
	})
	close(stop)
	if err := <-writerDone; err != nil {
		t.Fatal(err)
	}
	g.stop(t)

	// Restore into a fresh data dir, as docs/operations.md says.
	restored := filepath.Join(t.TempDir(), "restored")
	if b, err := exec.Command("rsync", "-a", "--delete", dest+"/", restored+"/").CombinedOutput(); err != nil {
		t.Fatalf("restore: %v\n%s", err, b)
	}
	port2 := freePort(t)
	g2 := startGrasp(t, fmt.Sprintf("127.0.0.1:%d", port2), public, restored, "")
	r, err := dialRelay(ctx, "ws://"+g2.Addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	served := map[string]bool{}
	for i := 0; i < len(beforePause); i += 200 {
		batch := beforePause[i:min(len(beforePause), i+200)]
		_, evs, err := r.subscribe(ctx, nostr.Filter{IDs: batch, Limit: len(batch)})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			served[e.ID] = true
		}
	}
	missing := 0
	for _, id := range beforePause {
		if !served[id] {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of the %d issues acknowledged before the pause are missing from the restored server", missing, len(beforePause))
	}
	_, repo, err := r.subscribe(ctx, nostr.Filter{Authors: []string{k.pk}, Kinds: []int{30617, 30618}})
	if err != nil || len(repo) != 2 {
		t.Errorf("restored announcement and state: %d events, %v", len(repo), err)
	}
	url := fmt.Sprintf("http://%s/%s/kept.git", g2.Addr, k.npub)
	if got := mustGit(t, dir, gitEnv(dir, ""), "ls-remote", url, "refs/heads/main"); !strings.HasPrefix(got, sha) {
		t.Errorf("restored repository: main is %q, want %s", got, sha)
	}
	t.Logf("%d issues acknowledged before the pause, %d in all", len(beforePause), count())
}
