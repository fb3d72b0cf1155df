package deploy

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
	coreenv "github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/relaysync/catchup"
	"github.com/grasp-dev/grasp/internal/testkit"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// frontProxy is nginx or Caddy running a shipped config on loopback.
type frontProxy struct {
	URL   string // https://127.0.0.1:port
	Relay string // wss://127.0.0.1:port
	// checkLogs looks in the proxy's own logs for what the flow must not
	// have caused (nginx spooling bodies to disk); nil: nothing to check.
	checkLogs func(t *testing.T)
}

// startProxy starts a proxy on 127.0.0.1:port with TLS from c, in front of
// upstream (host:port).
type startProxy func(t *testing.T, c certs, upstream string, port int) *frontProxy

// runProxySuite is the whole test of one shipped proxy config: first against
// a probe upstream (forwarding headers, streaming both ways, websockets),
// then in front of a real grasp along ngit's path.
func runProxySuite(t *testing.T, start startProxy) {
	if testing.Short() {
		t.Skip("runs a reverse proxy and a 200 MB push; not in -short mode")
	}
	c := newCerts(t)
	t.Run("probe", func(t *testing.T) {
		p := newProbe(t)
		fp := start(t, c, p.Addr(), testkit.FreePort(t))
		checkProxying(t, c, fp.URL, p)
	})
	t.Run("grasp", func(t *testing.T) {
		port := testkit.FreePort(t)
		public := fmt.Sprintf("https://127.0.0.1:%d", port)
		g := startGrasp(t, "127.0.0.1:0", public, filepath.Join(t.TempDir(), "data"), "")
		fp := start(t, c, g.Addr, port)
		if fp.URL != public {
			t.Fatalf("proxy at %s, grasp's public_url %s", fp.URL, public)
		}
		t.Run("client addresses", func(t *testing.T) { checkClientAddresses(t, c, fp, g) })
		graspThrough(t, c, fp)
		if fp.checkLogs != nil {
			fp.checkLogs(t)
		}
		checkAlertMetrics(t, g.scrape(t))
	})
}

// runProxy starts a proxy process whose output goes to logs[0] (the proxy
// may write more logs), waits until it serves TLS on port, and stops it with
// stop when the test ends, showing the ends of its logs if the test failed.
func runProxy(t *testing.T, c certs, cmd *exec.Cmd, stop os.Signal, port int, logs ...string) *frontProxy {
	t.Helper()
	name := filepath.Base(cmd.Path)
	out, err := os.OpenFile(logs[0], os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tails := func(n int) string {
		var b strings.Builder
		for _, l := range logs {
			text, _ := os.ReadFile(l)
			fmt.Fprintf(&b, "%s:\n%s\n", l, tailLines(string(text), n))
		}
		return b.String()
	}
	t.Cleanup(func() {
		cmd.Process.Signal(stop)
		select {
		case <-done:
		case <-testwait.After(t):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s logs:\n%s", name, tails(40))
		}
	})
	waitTLS(t, c, fmt.Sprintf("127.0.0.1:%d", port), func() error {
		select {
		case err := <-done:
			return fmt.Errorf("%s exited (%v):\n%s", name, err, tails(20))
		default:
			return nil
		}
	})
	return &frontProxy{
		URL:   fmt.Sprintf("https://127.0.0.1:%d", port),
		Relay: fmt.Sprintf("wss://127.0.0.1:%d", port),
	}
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitTLS waits until addr completes a TLS handshake with a certificate the
// throwaway CA signed, or the proxy process has exited.
func waitTLS(t *testing.T, c certs, addr string, exited func() error) {
	t.Helper()
	testwait.ForErr(t, "the proxy to serve TLS on "+addr, func() (bool, error) {
		if err := exited(); err != nil {
			return false, err
		}
		d := &net.Dialer{Timeout: 5 * time.Second}
		conn, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{RootCAs: c.Pool})
		if err != nil {
			return false, nil
		}
		conn.Close()
		return true, nil
	})
}

// graspThrough drives grasp through the proxy the way ngit and its users
// do: NIP-11, a live subscription over wss, announce -> state -> push for a
// small and a 200 MiB repository, a clone, a REQ and a NIP-77 sync.
func graspThrough(t *testing.T, c certs, fp *frontProxy) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	h1, h2 := c.client(false), c.client(true)

	t.Run("NIP-11", func(t *testing.T) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fp.URL+"/", nil)
		req.Header.Set("Accept", "application/nostr+json")
		resp, err := h2.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var doc struct {
			Name            string   `json:"name"`
			SupportedNIPs   []int    `json:"supported_nips"`
			SupportedGrasps []string `json:"supported_grasps"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("NIP-11 through the proxy: %d %v", resp.StatusCode, err)
		}
		if doc.Name == "" || !slices.Contains(doc.SupportedNIPs, 77) || !slices.Contains(doc.SupportedGrasps, "GRASP-01") {
			t.Errorf("NIP-11 document %+v lacks a name, NIP-77 or GRASP-01", doc)
		}
	})
	t.Run("metrics not public", func(t *testing.T) {
		resp, err := h2.Get(fp.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || strings.Contains(string(b), "grasp_") {
			t.Errorf("GET /metrics through the proxy = %d %.80q, want 404 without metrics", resp.StatusCode, b)
		}
	})

	k := newKey(t)
	mine := nostr.Filter{Authors: []string{k.PK}, Kinds: []int{30617, 30618}}
	live, err := dialRelay(ctx, fp.Relay, h1)
	if err != nil {
		t.Fatalf("wss through the proxy: %v", err)
	}
	defer live.close()
	subID, stored, err := live.subscribe(ctx, mine)
	if err != nil || len(stored) != 0 {
		t.Fatalf("REQ over wss: %d stored events, %v; want none yet", len(stored), err)
	}
	pub, err := dialRelay(ctx, fp.Relay, h1)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.close()

	home := t.TempDir()
	env := gitEnv(home, c.CA)
	var want []string // ids every reader must end up seeing
	// push follows ngit: the announcement, a poll of the new repository's
	// info/refs until it answers, the state, then git push.
	push := func(t *testing.T, d, dir, sha string) {
		ann := k.announcement(t, fp.URL, fp.Relay, d)
		if ok, msg, err := pub.publish(ctx, ann); err != nil || !ok {
			t.Fatalf("announcement over wss: ok=%v %q %v", ok, msg, err)
		}
		url := cloneURL(fp.URL, k, d)
		testwait.ForErr(t, "the announced repository to answer info/refs", func() (bool, error) {
			resp, err := h2.Get(url + "/info/refs?service=git-upload-pack")
			if err != nil {
				return false, nil
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK, nil
		})
		st := k.state(t, d, sha)
		if ok, msg, err := pub.publish(ctx, st); err != nil || !ok {
			t.Fatalf("state over wss: ok=%v %q %v", ok, msg, err)
		}
		mustGit(t, dir, env, "push", url, "main:refs/heads/main")
		if out := mustGit(t, home, env, "ls-remote", url, "refs/heads/main"); !strings.HasPrefix(out, sha) {
			t.Fatalf("ls-remote after the push: %q, want %s", out, sha)
		}
		want = append(want, ann.ID, st.ID)
	}
	smallDir, smallSHA := smallRepo(t)
	t.Run("announce, state, push", func(t *testing.T) { push(t, "small", smallDir, smallSHA) })
	t.Run("200 MiB push", func(t *testing.T) {
		dir, sha := bigRepo(t)
		push(t, "big", dir, sha)
	})
	if t.Failed() {
		return
	}
	t.Run("clone", func(t *testing.T) {
		mustGit(t, home, env, "clone", "-q", cloneURL(fp.URL, k, "small"), "clone")
		if got := mustGit(t, filepath.Join(home, "clone"), env, "rev-parse", "HEAD"); got != smallSHA {
			t.Fatalf("cloned HEAD %s, want %s", got, smallSHA)
		}
	})
	t.Run("live events over wss", func(t *testing.T) {
		// Released from purgatory by the pushes, broadcast to the
		// subscription opened before anything existed.
		seen := map[string]bool{}
		for !containsAll(seen, want) {
			env, err := live.next(ctx)
			if err != nil {
				t.Fatalf("live subscription: saw %d of %d events: %v", len(seen), len(want), err)
			}
			if e, ok := env.(*nostr.EventEnvelope); ok && e.SubscriptionID != nil && *e.SubscriptionID == subID {
				seen[e.Event.ID] = true
			}
		}
	})
	t.Run("REQ over wss", func(t *testing.T) {
		_, evs, err := pub.subscribe(ctx, mine)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, e := range evs {
			got[e.ID] = true
		}
		if !containsAll(got, want) || len(got) != len(want) {
			t.Fatalf("REQ returned %d events, want the %d announcements and states", len(got), len(want))
		}
	})
	t.Run("NIP-77 sync", func(t *testing.T) {
		cl, err := catchup.New(catchup.Config{Dial: catchup.HTTPDialer(h1, config.Limits{})}, coreenv.Env{})
		if err != nil {
			t.Fatal(err)
		}
		sink := &collect{got: map[string]bool{}}
		res, err := cl.CatchUp(ctx, fp.Relay, mine, noEvents{}, sink, catchup.Options{Negentropy: true, RoundTimeout: testwait.Limit(t)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Method != catchup.MethodNegentropy || res.FallbackReason != "" {
			t.Errorf("sync used %s (fallback %q), want negentropy through the proxy", res.Method, res.FallbackReason)
		}
		if res.Needed != len(want) || !containsAll(sink.got, want) {
			t.Errorf("negentropy needed %d and delivered %d events, want the %d announcements and states", res.Needed, len(sink.got), len(want))
		}
	})
}

func containsAll(set map[string]bool, ids []string) bool {
	for _, id := range ids {
		if !set[id] {
			return false
		}
	}
	return true
}

// noEvents is an empty local store: the sync must bring everything.
type noEvents struct{}

func (noEvents) Items(context.Context, nostr.Filter) ([]catchup.Item, error) { return nil, nil }

type collect struct{ got map[string]bool }

func (c *collect) Deliver(_ context.Context, evt *nostr.Event) bool {
	c.got[evt.ID] = true
	return true
}
