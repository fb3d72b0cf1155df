package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/grasp-dev/grasp/internal/testkit"
	"github.com/grasp-dev/grasp/internal/testwait"
	"github.com/nbd-wtf/go-nostr"
)

// wsClient speaks NIP-01 on one websocket with go-nostr's envelopes. It is
// not go-nostr's Relay because Relay.Publish reports success when the
// connection drops before the OK arrives, and the crash test must count
// only ids that really got OK true.
type wsClient struct {
	c   *websocket.Conn
	sub int
}

func dialRelay(ctx context.Context, url string) (*wsClient, error) {
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", url, err)
	}
	c.SetReadLimit(4 << 20)
	return &wsClient{c: c}, nil
}

func (w *wsClient) close() { w.c.Close(websocket.StatusNormalClosure, "") }

func (w *wsClient) send(ctx context.Context, env nostr.Envelope) error {
	b, err := env.MarshalJSON()
	if err != nil {
		return fmt.Errorf("encode %s: %w", env.Label(), err)
	}
	return w.c.Write(ctx, websocket.MessageText, b)
}

func (w *wsClient) next(ctx context.Context) (nostr.Envelope, error) {
	for {
		_, b, err := w.c.Read(ctx)
		if err != nil {
			return nil, err
		}
		if env, err := nostr.NewMessageParser().ParseMessage(string(b)); err == nil && env != nil {
			return env, nil
		}
	}
}

// publish sends evt and waits for its OK.
func (w *wsClient) publish(ctx context.Context, evt *nostr.Event) (bool, string, error) {
	if err := w.send(ctx, &nostr.EventEnvelope{Event: *evt}); err != nil {
		return false, "", fmt.Errorf("send EVENT: %w", err)
	}
	for {
		env, err := w.next(ctx)
		if err != nil {
			return false, "", fmt.Errorf("wait for OK of %s: %w", evt.ID, err)
		}
		if ok, isOK := env.(*nostr.OKEnvelope); isOK && ok.EventID == evt.ID {
			return ok.OK, ok.Reason, nil
		}
	}
}

// query sends a REQ and returns the events before EOSE.
func (w *wsClient) query(ctx context.Context, f nostr.Filter) ([]*nostr.Event, error) {
	w.sub++
	id := fmt.Sprintf("q%d", w.sub)
	if err := w.send(ctx, &nostr.ReqEnvelope{SubscriptionID: id, Filters: nostr.Filters{f}}); err != nil {
		return nil, fmt.Errorf("send REQ: %w", err)
	}
	var out []*nostr.Event
	for {
		env, err := w.next(ctx)
		if err != nil {
			return nil, fmt.Errorf("read REQ %s: %w", id, err)
		}
		switch e := env.(type) {
		case *nostr.EventEnvelope:
			if e.SubscriptionID != nil && *e.SubscriptionID == id {
				evt := e.Event
				out = append(out, &evt)
			}
		case *nostr.EOSEEnvelope:
			if string(*e) == id {
				ce := nostr.CloseEnvelope(id)
				return out, w.send(ctx, &ce)
			}
		case *nostr.ClosedEnvelope:
			if e.SubscriptionID == id {
				return nil, fmt.Errorf("REQ %s closed: %s", id, e.Reason)
			}
		}
	}
}

// served reports which of ids a fresh REQ returns, in batches that stay
// under the relay's message and filter limits.
func served(ctx context.Context, url string, ids []string) (map[string]bool, error) {
	w, err := dialRelay(ctx, url)
	if err != nil {
		return nil, err
	}
	defer w.close()
	got := map[string]bool{}
	for i := 0; i < len(ids); i += 200 {
		batch := ids[i:min(len(ids), i+200)]
		evs, err := w.query(ctx, nostr.Filter{IDs: batch, Limit: len(batch)})
		if err != nil {
			return nil, err
		}
		for _, e := range evs {
			got[e.ID] = true
		}
	}
	return got, nil
}

func mustServed(t *testing.T, url string, ids ...string) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Limit(t))
	defer cancel()
	got, err := served(ctx, url, ids)
	if err != nil {
		t.Fatalf("query %s: %v", url, err)
	}
	return got
}

// ---- keys and events ---------------------------------------------------

type key struct{ testkit.Key }

func newKey(t *testing.T) key { return key{testkit.NewKey(t)} }

// genKey is newKey for the goroutines a test starts.
func genKey() (key, error) {
	k, err := testkit.GenerateKey()
	return key{k}, err
}

// build builds and signs an event; at 0 means now.
func (k key) build(kind int, tags nostr.Tags, content string, at nostr.Timestamp) (*nostr.Event, error) {
	if at == 0 {
		at = nostr.Now()
	}
	evt := &nostr.Event{Kind: kind, Tags: tags, Content: content, CreatedAt: at}
	if err := evt.Sign(k.SK); err != nil {
		return nil, fmt.Errorf("sign kind %d: %w", kind, err)
	}
	return evt, nil
}

func (k key) sign(t *testing.T, kind int, tags nostr.Tags, content string, at nostr.Timestamp) *nostr.Event {
	t.Helper()
	evt, err := k.build(kind, tags, content, at)
	if err != nil {
		t.Fatal(err)
	}
	return evt
}

// announcement lists in in both clone and relays (G01-R2).
func announcement(t *testing.T, k key, in instance, d, root string) *nostr.Event {
	return k.sign(t, 30617, nostr.Tags{
		{"d", d},
		{"name", d},
		{"clone", cloneURL(in, k, d)},
		{"relays", in.Relay()},
		{"r", root, "euc"},
	}, "", 0)
}

// state says main is at sha, HEAD -> main.
func state(t *testing.T, k key, d, sha string, at nostr.Timestamp) *nostr.Event {
	return k.sign(t, 30618, nostr.Tags{
		{"d", d},
		{"refs/heads/main", sha},
		{"HEAD", "ref: refs/heads/main"},
	}, "", at)
}

func graspList(t *testing.T, k key, in instance, content string) *nostr.Event {
	return k.sign(t, 10317, graspListTags(in), content, 0)
}

func graspListTags(in instance) nostr.Tags { return nostr.Tags{{"g", in.Relay()}} }

func issueTags(owner key, d, subject string) nostr.Tags {
	return nostr.Tags{
		{"a", "30617:" + owner.PK + ":" + d},
		{"p", owner.PK},
		{"subject", subject},
	}
}

func cloneURL(in instance, k key, d string) string {
	return fmt.Sprintf("%s/%s/%s.git", in.HTTP(), k.Npub, d)
}

// publishOK publishes on a fresh connection and returns the OK.
func publishOK(t *testing.T, url string, evt *nostr.Event) (bool, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Limit(t))
	defer cancel()
	w, err := dialRelay(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	ok, msg, err := w.publish(ctx, evt)
	if err != nil {
		t.Fatalf("publish kind %d: %v", evt.Kind, err)
	}
	return ok, msg
}

// ---- http and git --------------------------------------------------------

func httpGet(t *testing.T, url string, header map[string]string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	c := &http.Client{Timeout: testwait.Limit(t)}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatalf("read GET %s: %v", url, err)
	}
	return resp.StatusCode, resp.Header, body
}

// gitRepo is a local working repository with an isolated git config.
type gitRepo struct {
	t   testing.TB // bounds each git command (testwait)
	dir string
	env []string
}

func newGitRepo(t *testing.T) *gitRepo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("the git binary is required: %v", err)
	}
	home := t.TempDir()
	r := &gitRepo{t: t, dir: filepath.Join(home, "work"), env: append(os.Environ(),
		"HOME="+home,
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=grasp test", "GIT_AUTHOR_EMAIL=test@example.invalid",
		"GIT_COMMITTER_NAME=grasp test", "GIT_COMMITTER_EMAIL=test@example.invalid",
	)}
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r.must(t, "init", "-q", "-b", "main")
	return r
}

func (r *gitRepo) git(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Limit(r.t))
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir, cmd.Env = r.dir, r.env
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func (r *gitRepo) must(t *testing.T, args ...string) string {
	t.Helper()
	out, err := r.git(args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// commit adds a commit on main and returns its id.
func (r *gitRepo) commit(t *testing.T, msg string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(r.dir, "file.txt"), []byte(msg+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.must(t, "add", "file.txt")
	r.must(t, "commit", "-q", "-m", msg)
	return r.must(t, "rev-parse", "HEAD")
}

// push pushes sha to main of url (a force push, as ngit does to GRASP
// servers) and returns git's output.
func (r *gitRepo) push(url, sha string) (string, error) {
	return r.git("push", "--force", url, sha+":refs/heads/main")
}
