package examples_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/metrics"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/server"
	"github.com/grasp-dev/grasp/internal/testkit"
	"github.com/grasp-dev/grasp/internal/testwait"
	"github.com/nbd-wtf/go-nostr"
)

// Every example configuration loads under the strict config rules.
func TestEveryExampleConfigLoads(t *testing.T) {
	var files []string
	filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".toml") && !strings.Contains(p, "throttle.d") {
			files = append(files, p)
		}
		return nil
	})
	if len(files) < 4 {
		t.Fatalf("found only %v", files)
	}
	for _, f := range files {
		if _, err := config.Load(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// The two-servers example end to end: a repo announced on both and pushed
// to A reaches B by itself — its events by GRASP-02 sync from the
// bootstrap relay, its git data by the hunter fetching from A.
func TestTwoServersExampleSyncsEventsAndGitData(t *testing.T) {
	a := startExample(t, "two-servers/a.toml")
	b := startExample(t, "two-servers/b.toml", a.relay)
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	npub := nip34.Npub(pk)

	work := t.TempDir()
	git(t, work, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(work, "f"), []byte("hello\n"), 0o644)
	git(t, work, "add", "f")
	git(t, work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
	tip := git(t, work, "rev-parse", "HEAD")

	now := nostr.Now()
	ann := sign(t, sk, &nostr.Event{Kind: 30617, CreatedAt: now, Tags: nostr.Tags{{"d", "demo"},
		{"clone", a.base + "/" + npub + "/demo.git", b.base + "/" + npub + "/demo.git"},
		{"relays", a.relay, b.relay}}})
	st := sign(t, sk, &nostr.Event{Kind: 30618, CreatedAt: now, Tags: nostr.Tags{{"d", "demo"},
		{"refs/heads/main", tip}, {"HEAD", "ref: refs/heads/main"}}})
	for _, evt := range []*nostr.Event{ann, st} {
		if ok, msg := publish(t, a.relay, evt); !ok {
			t.Fatalf("A refused kind %d: %s", evt.Kind, msg)
		}
	}
	git(t, work, "push", "-q", a.base+"/"+npub+"/demo.git", "main")

	testwait.For(t, "B caught up (announcement and state served, main at the pushed tip)", func() bool {
		served := countIDs(t, b.relay, ann.ID, st.ID) == 2
		return served && strings.Contains(lsRemote(t, b.base+"/"+npub+"/demo.git"), tip+"\trefs/heads/main")
	})
}

type instance struct{ base, relay string }

// startExample runs an example config on free ports in a temp data dir;
// peers replace the example's bootstrap relays (their ports moved too).
func startExample(t *testing.T, file string, peers ...string) instance {
	t.Helper()
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return startConfig(t, file, cfg, peers...)
}

// startConfig runs cfg (named name in failures) on a free port in a temp
// data dir.
func startConfig(t *testing.T, name string, cfg config.Config, peers ...string) instance {
	t.Helper()
	port := testkit.FreePort(t)
	cfg.Server.Listen = fmt.Sprintf("127.0.0.1:%d", port)
	cfg.Server.PublicURL = ""
	cfg.Server.DataDir = t.TempDir()
	cfg.Metrics.Enabled = false
	cfg.Sync.BootstrapRelays = peers
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	reg := metrics.New("example", "")
	e := env.Env{Metrics: reg.Registerer()}
	st, err := server.OpenStore(cfg, e)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Config: cfg, Build: server.Build{Version: "example"}, Metrics: reg, Store: st}, e)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := srv.Start(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := srv.Wait(); err != nil {
			t.Errorf("%s stopped with %v", name, err)
		}
	})
	return instance{base: cfg.Server.PublicURL, relay: cfg.RelayURL()}
}

func sign(t *testing.T, sk string, evt *nostr.Event) *nostr.Event {
	if err := evt.Sign(sk); err != nil {
		t.Fatal(err)
	}
	return evt
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func lsRemote(t *testing.T, url string) string {
	cmd := exec.Command("git", "ls-remote", url)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// publish sends one EVENT and returns its OK.
func publish(t *testing.T, relay string, evt *nostr.Event) (bool, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Limit(t))
	defer cancel()
	c, _, err := websocket.Dial(ctx, relay, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	b, _ := json.Marshal([]any{"EVENT", evt})
	if err := c.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
	for {
		_, msg, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var v []any
		if json.Unmarshal(msg, &v) == nil && len(v) == 4 && v[0] == "OK" && v[1] == evt.ID {
			ok, _ := v[2].(bool)
			m, _ := v[3].(string)
			return ok, m
		}
	}
}

// countIDs asks relay for ids and counts what it serves before EOSE.
func countIDs(t *testing.T, relay string, ids ...string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Limit(t))
	defer cancel()
	c, _, err := websocket.Dial(ctx, relay, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	b, _ := json.Marshal([]any{"REQ", "q", nostr.Filter{IDs: ids}})
	c.Write(ctx, websocket.MessageText, b)
	n := 0
	for {
		_, msg, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var v []any
		if json.Unmarshal(msg, &v) != nil || len(v) < 2 {
			continue
		}
		switch v[0] {
		case "EVENT":
			n++
		case "EOSE", "CLOSED":
			return n
		}
	}
}
