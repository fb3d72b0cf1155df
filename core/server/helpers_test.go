package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/metrics"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/server"
	"github.com/grasp-dev/grasp/internal/testkit"
	"github.com/grasp-dev/grasp/internal/testwait"
	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"
)

// testServer is one grasp server on 127.0.0.1 with its own data dir.
type testServer struct {
	t    *testing.T
	srv  *server.Server
	cfg  config.Config     // what the server was started on (paths absolute)
	reg  *metrics.Registry // the registry handed to it, as cmd/grasp's /metrics serves it
	base string            // http://127.0.0.1:port
	ws   string            // ws://127.0.0.1:port
	clk  *clock.Fake
	stop context.CancelFunc
}

// newEnv starts a server with a fake clock (set to now) so purgatory
// expiry can be driven without sleeping.
func newEnv(t *testing.T, mutate func(c *config.Config)) *testServer {
	t.Helper()
	return newEnvOn(t, mutate, nil)
}

// newEnvOn is newEnv measuring free disk space with free (nil: statfs).
func newEnvOn(t *testing.T, mutate func(c *config.Config), free func(dir string) (uint64, error)) *testServer {
	t.Helper()
	return newEnvWith(t, mutate, free, server.Extensions{})
}

// newEnvWith is newEnvOn with the plugin extensions ext.
func newEnvWith(t *testing.T, mutate func(c *config.Config), free func(dir string) (uint64, error), ext server.Extensions) *testServer {
	t.Helper()
	return startEnv(t, testConfig(t, mutate), free, ext)
}

// testConfig is the config of a test server on a free loopback port, with
// mutate applied.
func testConfig(t *testing.T, mutate func(c *config.Config)) config.Config {
	t.Helper()
	port := testkit.FreePort(t)
	cfg := config.Default()
	cfg.Server.Listen = fmt.Sprintf("127.0.0.1:%d", port)
	cfg.Server.PublicURL = fmt.Sprintf("http://127.0.0.1:%d", port)
	cfg.Server.DataDir = t.TempDir()
	cfg.Metrics.Enabled = false
	// every git host and relay in these tests is on 127.0.0.1
	cfg.Purgatory.FetchPrivateAddresses = true
	cfg.Sync.ConnectPrivateAddresses = true
	if mutate != nil {
		mutate(&cfg)
	}
	return cfg
}

// startEnv starts a server on cfg (with the plugin extensions ext) with a
// fake clock set to now.
func startEnv(t *testing.T, cfg config.Config, free func(dir string) (uint64, error), ext server.Extensions) *testServer {
	t.Helper()
	var log hclog.Logger
	if os.Getenv("GRASP_TEST_LOG") != "" {
		log = hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: os.Stderr})
	}
	return startEnvLog(t, cfg, free, ext, log)
}

// startEnvLog is startEnv writing the server's log to log (nil: nowhere).
func startEnvLog(t *testing.T, cfg config.Config, free func(dir string) (uint64, error), ext server.Extensions, log hclog.Logger) *testServer {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	// New makes every path absolute; the test reads the same config
	if err := cfg.Absolute(); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Now())
	reg := metrics.New("test", "")
	st, err := server.OpenStore(cfg, env.Env{Clock: clk, Log: log, Metrics: reg.Registerer()})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Config: cfg, Build: server.Build{Version: "test"}, Metrics: reg, Store: st, FreeSpace: free, Extensions: ext}, env.Env{Clock: clk, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := srv.Start(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	e := &testServer{t: t, srv: srv, cfg: cfg, reg: reg, base: cfg.Server.PublicURL, ws: cfg.RelayURL(), clk: clk, stop: cancel}
	t.Cleanup(func() {
		cancel()
		if err := srv.Wait(); err != nil {
			t.Errorf("server stopped with %v", err)
		}
	})
	return e
}

// newServer builds a server the way cmd/grasp does: the registry and the
// store first, then the server on them. It returns the registry too, for
// what /metrics would show.
func newServer(cfg config.Config, b server.Build, ext server.Extensions, e env.Env) (*server.Server, *metrics.Registry, error) {
	reg := metrics.New(b.Version, b.Commit)
	e.Metrics = reg.Registerer()
	st, err := server.OpenStore(cfg, e)
	if err != nil {
		return nil, nil, err
	}
	srv, err := server.New(server.Options{Config: cfg, Build: b, Metrics: reg, Store: st, Extensions: ext}, e)
	return srv, reg, err
}

// serveUntilCleanup starts srv and stops it (waiting for it) when the test
// or benchmark ends.
func serveUntilCleanup(tb testing.TB, srv *server.Server) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	if err := srv.Start(ctx); err != nil {
		cancel()
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		cancel()
		srv.Wait()
	})
}

// key is testkit's throwaway identity, with the repository it names.
type key struct{ testkit.Key }

func newKey(t *testing.T) key { return key{testkit.NewKey(t)} }

// repo names k's repository d.
func (k key) repo(d string) nip34.RepoRef { return nip34.RepoRef{Pubkey: k.PK, Identifier: d} }

func (e *testServer) sign(k key, kind int, tags nostr.Tags, content string) *nostr.Event {
	e.t.Helper()
	return k.Sign(e.t, &nostr.Event{Kind: kind, Tags: tags, Content: content, CreatedAt: nostr.Timestamp(e.clk.Now().Unix())})
}

func (e *testServer) cloneURL(k key, d string) string {
	return e.base + "/" + k.Npub + "/" + nip34.EscapeIdentifier(d) + ".git"
}

// announcement lists this server in clone and relays, plus extra tags.
func (e *testServer) announcement(k key, d string, extra ...nostr.Tag) *nostr.Event {
	tags := nostr.Tags{{"d", d}, {"clone", e.cloneURL(k, d)}, {"relays", e.ws}}
	tags = append(tags, extra...)
	return e.sign(k, 30617, tags, "")
}

// state builds a 30618 with refs (name -> oid) and HEAD.
func (e *testServer) state(k key, d string, refs map[string]string, head string) *nostr.Event {
	tags := nostr.Tags{{"d", d}}
	for name, oid := range refs {
		tags = append(tags, nostr.Tag{name, oid})
	}
	if head != "" {
		tags = append(tags, nostr.Tag{"HEAD", "ref: " + head})
	}
	return e.sign(k, 30618, tags, "")
}

// release makes repo d of k accepted (stored) on e: announcement (with
// extra tags), state, push.
func (e *testServer) release(k key, d string, w *work, tip string, extra ...nostr.Tag) *nostr.Event {
	e.t.Helper()
	cl := e.dial()
	ann := e.announcement(k, d, extra...)
	st := e.state(k, d, map[string]string{"refs/heads/main": tip}, "refs/heads/main")
	cl.mustAccept(ann, purg)
	cl.mustAccept(st, purg)
	if out, err := w.push(e.cloneURL(k, d), "main:refs/heads/main"); err != nil {
		e.t.Fatalf("push: %v\n%s", err, out)
	}
	e.eventually("announcement released", 0, func() bool { return cl.served(ann.ID) })
	return ann
}

// client is a raw websocket connection so tests see the exact OK message.
type client struct {
	t    *testing.T
	c    *websocket.Conn
	msgs chan []json.RawMessage
}

func (e *testServer) dial() *client {
	e.t.Helper()
	cl, code, body := e.dialHeader(nil)
	if cl == nil {
		e.t.Fatalf("websocket refused: %d %s", code, body)
	}
	return cl
}

// dialHeader connects with the request headers h; a refused handshake
// gives no client, its HTTP status and body.
func (e *testServer) dialHeader(h http.Header) (cl *client, code int, body string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Limit(e.t))
	defer cancel()
	c, resp, err := websocket.Dial(ctx, e.ws, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		if resp == nil {
			e.t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		return nil, resp.StatusCode, string(b)
	}
	c.SetReadLimit(16 << 20)
	cl = &client{t: e.t, c: c, msgs: make(chan []json.RawMessage, 1024)}
	go func() {
		defer close(cl.msgs)
		for {
			_, b, err := c.Read(context.Background())
			if err != nil {
				return
			}
			var arr []json.RawMessage
			if json.Unmarshal(b, &arr) == nil {
				cl.msgs <- arr
			}
		}
	}()
	e.t.Cleanup(func() { c.Close(websocket.StatusNormalClosure, "") })
	return cl, resp.StatusCode, ""
}

func (cl *client) send(v ...any) {
	cl.t.Helper()
	b, _ := json.Marshal(v)
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Limit(cl.t))
	defer cancel()
	if err := cl.c.Write(ctx, websocket.MessageText, b); err != nil {
		cl.t.Fatal(err)
	}
}

func label(m []json.RawMessage) string {
	var s string
	json.Unmarshal(m[0], &s)
	return s
}

func str(m json.RawMessage) string {
	var s string
	json.Unmarshal(m, &s)
	return s
}

// next waits for the next message satisfying keep.
func (cl *client) next(keep func([]json.RawMessage) bool) []json.RawMessage {
	cl.t.Helper()
	deadline := testwait.After(cl.t)
	for {
		select {
		case m, ok := <-cl.msgs:
			if !ok {
				cl.t.Fatal("connection closed")
			}
			if keep(m) {
				return m
			}
		case <-deadline:
			cl.t.Fatal("timed out waiting for a message")
		}
	}
}

// publish sends evt and returns the OK flag and message.
func (cl *client) publish(evt *nostr.Event) (bool, string) {
	cl.t.Helper()
	cl.send("EVENT", evt)
	m := cl.next(func(m []json.RawMessage) bool { return label(m) == "OK" && str(m[1]) == evt.ID })
	var ok bool
	json.Unmarshal(m[2], &ok)
	return ok, str(m[3])
}

func (cl *client) mustAccept(evt *nostr.Event, msgPrefix string) {
	cl.t.Helper()
	ok, msg := cl.publish(evt)
	if !ok || !strings.HasPrefix(msg, msgPrefix) {
		cl.t.Fatalf("kind %d: OK %v %q, want true with prefix %q", evt.Kind, ok, msg, msgPrefix)
	}
}

func (cl *client) mustReject(evt *nostr.Event, msgPart string) {
	cl.t.Helper()
	ok, msg := cl.publish(evt)
	if ok || !strings.Contains(msg, msgPart) {
		cl.t.Fatalf("kind %d: OK %v %q, want false containing %q", evt.Kind, ok, msg, msgPart)
	}
}

var subSeq int

// query runs a REQ to EOSE and returns the events.
func (cl *client) query(f nostr.Filter) []*nostr.Event {
	cl.t.Helper()
	subSeq++
	id := fmt.Sprintf("q%d", subSeq)
	cl.send("REQ", id, f)
	var out []*nostr.Event
	for {
		m := cl.next(func(m []json.RawMessage) bool {
			return (label(m) == "EVENT" || label(m) == "EOSE" || label(m) == "CLOSED") && str(m[1]) == id
		})
		if label(m) != "EVENT" {
			cl.send("CLOSE", id)
			return out
		}
		var evt nostr.Event
		json.Unmarshal(m[2], &evt)
		out = append(out, &evt)
	}
}

func (cl *client) served(id string) bool {
	return len(cl.query(nostr.Filter{IDs: []string{id}})) == 1
}

// ---- git ----------------------------------------------------------------

func gitRun(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func mustGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gitRun(t, dir, args...)
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return out
}

// work is a local working repository with helpers to commit.
type work struct {
	t   *testing.T
	dir string
}

func newWork(t *testing.T) *work {
	dir := t.TempDir()
	mustGit(t, dir, "init", "-q", "-b", "main")
	return &work{t: t, dir: dir}
}

func (w *work) commit(msg string) string {
	w.t.Helper()
	os.WriteFile(filepath.Join(w.dir, "f.txt"), []byte(msg+"\n"), 0o644)
	mustGit(w.t, w.dir, "add", "-A")
	mustGit(w.t, w.dir, "commit", "-q", "-m", msg)
	return mustGit(w.t, w.dir, "rev-parse", "HEAD")
}

func (w *work) push(url string, refspecs ...string) (string, error) {
	return gitRun(w.t, w.dir, append([]string{"push", "--porcelain", url}, refspecs...)...)
}

func lsRemote(t *testing.T, url string) map[string]string {
	t.Helper()
	out := mustGit(t, t.TempDir(), "ls-remote", url)
	refs := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			refs[f[1]] = f[0]
		}
	}
	return refs
}

func infoRefsStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url + "/info/refs?service=git-upload-pack")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

type jsonMsg = json.RawMessage

func unmarshal(b json.RawMessage, v any) { json.Unmarshal(b, v) }
