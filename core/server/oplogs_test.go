package server_test

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/server"
	"github.com/grasp-dev/grasp/internal/testlog"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// TestOperatorLogsTellTheStory (issue 26 part 6): driven through a real
// server, the info log has the lines an operator greps for — a refused
// announcement with its reason, a push and a refused push with the client's
// address and the refs, a PR with its repository (its d is empty: the
// repository is in its a tag), each repository named by the path a reverse
// proxy logs for it — and a thousand refusals of one client in a minute are
// one line with the counts by reason, not a thousand.
func TestOperatorLogsTellTheStory(t *testing.T) {
	var logs testlog.Buffer
	log := hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: &logs})
	e := startEnvLog(t, testConfig(t, func(c *config.Config) {
		c.Relay.Limits.MaxConnectionsPerIP = 6
	}), nil, server.Extensions{}, log)
	cl := e.dial()
	a, k := newKey(t), newKey(t)
	const client = "remote=127.0.0.1"
	has := func(what string, parts ...string) {
		t.Helper()
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "[INFO]") && containsAll(l, parts...) {
				return
			}
		}
		t.Fatalf("%s: no info line has all of %q:\n%s", what, parts, logs.String())
	}

	// A refused announcement, with its reason; the identifier is
	// percent-encoded as in the repository's URL.
	elsewhere := e.sign(a, nip34.KindAnnouncement, nostr.Tags{{"d", "my repo"}, {"clone", "https://git.example.org/x.git"}, {"relays", "wss://relay.example.org"}}, "")
	ok, msg := cl.publish(elsewhere)
	if ok {
		t.Fatal("an announcement listing another server was accepted")
	}
	has("refused announcement", "relay: announcement refused:", `repo="/`+a.Npub+`/my%20repo.git"`, "id="+elsewhere.ID, client, "reason="+strconv.Quote(msg))

	// A push: the client's address and the refs moved, old→new.
	w := newWork(t)
	tip := w.commit("first")
	e.release(a, "demo", w, tip)
	repo := "repo=/" + a.Npub + "/demo.git"
	has("push", "hosting: push accepted:", repo, client, `refs="refs/heads/main 0000000000→`+tip[:10]+`"`)

	// A refused push names them too.
	other := w.commit("not in the state")
	if out, err := w.push(e.cloneURL(a, "demo"), other+":refs/heads/main"); err == nil {
		t.Fatalf("a push against the state was accepted:\n%s", out)
	}
	has("refused push", "git: push refused:", repo, client, `refs="refs/heads/main `+tip[:10]+`→`+other[:10]+`"`, "reason=")

	// A PR: its d is empty, its line names the repository of its a tag.
	p := w.commit("proposal")
	pr := e.sign(k, nip34.KindPR, nostr.Tags{{"a", "30617:" + a.PK + ":demo"}, {"c", p}, {"clone", e.cloneURL(a, "demo")}, {"subject", "s"}}, "")
	if out, err := w.push(e.cloneURL(a, "demo"), p+":refs/nostr/"+pr.ID); err != nil {
		t.Fatalf("git-first PR push: %v\n%s", err, out)
	}
	cl.mustAccept(pr, "")
	has("PR", "hosting: PR accepted:", "id="+pr.ID, repo)

	// A flood: this client's connections up to the cap, then refusals
	// (429) until a thousand; every line about a refusal of the minute is
	// the one line written when the minute ends.
	refused := 0
	for refused == 0 {
		if _, code, _ := e.dialHeader(nil); code == http.StatusTooManyRequests {
			refused++
		}
	}
	hc := &http.Client{Timeout: testwait.Limit(t)}
	for ; refused < 1000; refused++ {
		req, _ := http.NewRequest(http.MethodGet, e.base+"/", nil)
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("upgrade %d over the cap answered %d", refused, resp.StatusCode)
		}
	}
	const summary = "refused in the last minute:"
	if strings.Contains(logs.String(), summary) {
		t.Fatalf("the minute's line was written before the minute ended:\n%s", logs.String())
	}
	e.clk.Advance(time.Minute)
	testwait.For(t, "the minute's refusals logged", func() bool { return strings.Contains(logs.String(), summary) })
	got := logs.String()
	if n := strings.Count(got, summary); n != 1 {
		t.Fatalf("%d lines for one client's minute of refusals, want 1:\n%s", n, got)
	}
	// Two own lines (the refused announcement and push), and every other
	// refusal only counted.
	has("the minute's line", "refusals: "+summary, client, "announcement_refused=1", "connections_ip=1000", "push_refused=1", "own_lines=2", "total=1002")
	if n := singleRefusalLines(got); n != 0 {
		t.Fatalf("%d lines about single refusals in the log:\n%s", n, got)
	}
}

// status429 is the status 429 as a word: not inside a hex id, and (the
// caller drops each line's timestamp first) not a timestamp's milliseconds,
// which are 429 once a second.
var status429 = regexp.MustCompile(`(^|[^0-9a-f])429([^0-9a-f]|$)`)

// singleRefusalLines counts the log lines that speak of one refused
// connection (its 429 or its message) instead of leaving it to the
// minute's summary.
func singleRefusalLines(logText string) int {
	n := 0
	for _, line := range strings.Split(logText, "\n") {
		if _, rest, ok := strings.Cut(line, " "); ok {
			line = rest // the timestamp
		}
		if status429.MatchString(line) || strings.Contains(line, "connections from your address") {
			n++
		}
	}
	return n
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// The CI run of 0531042 failed because a log line was written at
// hh:mm:ss.429: the check must see a 429 status, not a timestamp or an id.
func TestSingleRefusalLinesIgnoresTimestampsAndIDs(t *testing.T) {
	quiet := "2026-11-28T01:17:01.429Z [INFO]  hosting: state held: id=c6b8a7753247f429d9b6 repo=/npub1x/demo.git\n" +
		"2026-11-28T01:17:02.001Z [INFO]  relay: accepted id=429abc\n"
	if n := singleRefusalLines(quiet); n != 0 {
		t.Errorf("%d single-refusal lines in a log with none", n)
	}
	loud := quiet + "2026-11-28T01:17:03.000Z [INFO]  gate: connection refused: status=429 remote=127.0.0.1\n" +
		"2026-11-28T01:17:03.001Z [WARN]  gate: too many connections from your address\n"
	if n := singleRefusalLines(loud); n != 2 {
		t.Errorf("%d single-refusal lines, want 2", n)
	}
}
