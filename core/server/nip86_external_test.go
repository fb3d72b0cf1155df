package server_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/internal/jsinterop"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// Issue 25 part 3 ("a NIP-86 session with an external client in a test"):
// nostr-tools' NIP-98 (nip98.getToken with the body as payload, pinned in
// internal/jsinterop) administers the relay as a JavaScript panel would.
// nak, which the issue names, is not on the Go module proxy; nostr-tools
// is the client WatchTower-style panels are built on.

// nip86JS runs one call with nostr-tools as key k; it returns the HTTP
// status and the decoded answer.
func (e *testServer) nip86JS(k key, method string, params ...any) (int, map[string]json.RawMessage) {
	e.t.Helper()
	dir := jsinterop.Dir(e.t)
	ps, _ := json.Marshal(params)
	cmd := exec.CommandContext(testwait.Context(e.t), "node", filepath.Join(dir, "nip86.mjs"), e.base, k.SK, method, string(ps))
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		e.t.Fatalf("node nip86.mjs %s: %v\n%s", method, err, errb.String())
	}
	var res struct {
		Status int    `json:"status"`
		Body   string `json:"body"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		e.t.Fatalf("nip86.mjs printed %q: %v", out.String(), err)
	}
	var body map[string]json.RawMessage
	json.Unmarshal([]byte(res.Body), &body)
	return res.Status, body
}

func TestNIP86_ExternalClientNostrTools(t *testing.T) {
	op := newKey(t)
	e := newEnv(t, func(c *config.Config) { c.Relay.Pubkey = op.PK })
	x := newKey(t)
	status, body := e.nip86JS(op, "supportedmethods")
	if status != 200 || !strings.Contains(string(body["result"]), `"banpubkey"`) {
		t.Fatalf("supportedmethods: %d %s", status, body)
	}
	cl := e.authedAs(x)
	cl.subscribe("x", nostr.Filter{Kinds: []int{1621}})
	if status, body := e.nip86JS(op, "banpubkey", x.PK, "from a panel"); status != 200 || string(body["result"]) != "true" {
		t.Fatalf("banpubkey: %d %s", status, body)
	}
	if why := cl.closedWith("x"); !strings.HasPrefix(why, "blocked:") {
		t.Fatalf("the banned key's subscription closed with %q", why)
	}
	_, body = e.nip86JS(op, "listbannedpubkeys")
	if !strings.Contains(string(body["result"]), x.PK) || !strings.Contains(string(body["result"]), "from a panel") {
		t.Fatalf("listbannedpubkeys: %s", body["result"])
	}
	// nostr-tools' token from a key that is not the operator's
	if status, body := e.nip86JS(x, "unbanpubkey", x.PK); status != 403 || !strings.HasPrefix(strings.Trim(string(body["error"]), `"`), "restricted:") {
		t.Fatalf("a non-operator's call: %d %s", status, body)
	}
}
