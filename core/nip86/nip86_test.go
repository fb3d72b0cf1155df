package nip86

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/internal/memkv"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/internal/testkit"
)

type rig struct {
	kv    *memkv.KV
	state *State
	srv   *httptest.Server
	url   string
	opSK  string
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{kv: &memkv.KV{}, opSK: nostr.GeneratePrivateKey()}
	var err error
	if r.state, err = New(Options{KV: r.kv}, envNone()); err != nil {
		t.Fatal(err)
	}
	op, _ := nostr.GetPublicKey(r.opSK)
	var h *Handler
	mux := http.NewServeMux()
	r.srv = httptest.NewServer(mux)
	t.Cleanup(r.srv.Close)
	svc, err := nip34.ParseService(r.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if h, err = NewHandler(HandlerOptions{State: r.state, Admins: []string{op}, Service: svc, Members: true}, envNone()); err != nil {
		t.Fatal(err)
	}
	mux.Handle("/", h)
	r.url = "ws" + strings.TrimPrefix(r.srv.URL, "http")
	return r
}

func (r *rig) call(t *testing.T, method string, params ...any) json.RawMessage {
	t.Helper()
	res, err := Call(context.Background(), nil, r.url, r.opSK, method, params...)
	if err != nil {
		t.Fatalf("%s %v: %v", method, params, err)
	}
	return res
}

func accept(s *State, evt *nostr.Event, remote string) policy.Verdict {
	return s.Accept(context.Background(), evt, policy.Meta{Source: policy.SourceClient, Remote: remote})
}

// Issue 25 part 3: the lists NIP-86 edits refuse at acceptance, list back
// what was set, swap between ban and allow as NIP-86 says, and survive a
// restart (a new State on the same side table).
func TestNIP86_ListsRefuseAndPersist(t *testing.T) {
	r := newRig(t)
	a := testkit.NewKey(t).Event(t, 1621, nostr.Now(), nil, "")
	b := testkit.NewKey(t).Event(t, 1621, nostr.Now(), nil, "")
	r.call(t, "banpubkey", a.PubKey, "spam")
	if v := accept(r.state, a, ""); v.Action != policy.Reject || !strings.HasPrefix(v.Msg, "blocked:") || !strings.Contains(v.Msg, "spam") {
		t.Fatalf("a banned key's event: %+v", v)
	}
	if v := accept(r.state, b, ""); v.Action != policy.Accept {
		t.Fatalf("another key's event: %+v", v)
	}
	var banned []map[string]string
	json.Unmarshal(r.call(t, "listbannedpubkeys"), &banned)
	if len(banned) != 1 || banned[0]["pubkey"] != a.PubKey || banned[0]["reason"] != "spam" {
		t.Fatalf("listbannedpubkeys = %v", banned)
	}
	// allowpubkey takes it off the ban list, and an allow list admits
	// only its keys.
	r.call(t, "allowpubkey", nip34.Npub(a.PubKey))
	if v := accept(r.state, a, ""); v.Action != policy.Accept {
		t.Fatalf("allowed key: %+v", v)
	}
	if v := accept(r.state, b, ""); v.Action != policy.Reject || !strings.HasPrefix(v.Msg, "restricted:") {
		t.Fatalf("a key off the allow list: %+v", v)
	}
	r.call(t, "unallowpubkey", a.PubKey)
	r.call(t, "banevent", b.ID, "off-topic")
	if v := accept(r.state, b, ""); v.Action != policy.Reject || !strings.Contains(v.Msg, "event is banned") {
		t.Fatalf("banned event: %+v", v)
	}
	r.call(t, "disallowkind", 1621)
	if v := accept(r.state, a, ""); v.Action != policy.Reject || !strings.Contains(v.Msg, "kind 1621") {
		t.Fatalf("disallowed kind: %+v", v)
	}
	r.call(t, "allowkind", "1621") // a number as a string, as some clients send
	r.call(t, "blockip", "203.0.113.0/24", "abuse")
	if v := accept(r.state, a, "203.0.113.9"); v.Action != policy.Reject || !strings.Contains(v.Msg, "address is blocked") {
		t.Fatalf("blocked network: %+v", v)
	}
	r.call(t, "changerelayname", "Forge")
	r.call(t, "addmember", a.PubKey)
	r.call(t, "createclaim", "friends-2026")

	// A restart: the same side table, a new State.
	again, err := New(Options{KV: r.kv}, envNone())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := again.BannedEvent(b.ID); !ok || !again.Has(ListAllowedKinds, "1621") || again.Has(ListDisallowedKinds, "1621") ||
		!again.BlockedAddr("203.0.113.200") || again.Members()[0] != a.PubKey || !again.Has(ListClaims, "friends-2026") {
		t.Fatalf("lists after a restart: %+v", again.lists)
	}
	if name, _, _ := again.RelayInfo(); name != "Forge" {
		t.Fatalf("relay name after a restart: %q", name)
	}
	var methods []string
	json.Unmarshal(r.call(t, "supportedmethods"), &methods)
	for _, m := range []string{"banpubkey", "createclaim", "listclaims", "deleteclaim", "addmember", "blockip", "changerelayicon"} {
		if !contains(methods, m) {
			t.Errorf("supportedmethods lacks %s", m)
		}
	}
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// Authorisation: no token, a token for another URL, method or body, a
// stale one, and a key that is not the operator's are all refused; bad
// parameters are invalid:.
func TestNIP86_AuthorisationAndBadInput(t *testing.T) {
	r := newRig(t)
	post := func(auth string, body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, r.srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", ContentType)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out response
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out.Error
	}
	if code, msg := post("", `{"method":"listbannedpubkeys","params":[]}`); code != 401 || !strings.HasPrefix(msg, "auth-required:") {
		t.Fatalf("no token: %d %q", code, msg)
	}
	stranger := nostr.GeneratePrivateKey()
	if _, err := Call(context.Background(), nil, r.url, stranger, "banpubkey", strings.Repeat("a", 64)); err == nil || !strings.HasPrefix(err.Error(), "restricted:") {
		t.Fatalf("a stranger's call: %v", err)
	}
	if _, err := Call(context.Background(), nil, "ws://elsewhere.example", r.opSK, "listbannedpubkeys"); err == nil {
		t.Fatal("a token for another relay URL was taken")
	}
	for params, want := range map[string]string{
		`["nothex"]`: "invalid: \"nothex\" is not a pubkey",
		`[]`:         "invalid: parameter 1 is missing",
	} {
		var ps []any
		json.Unmarshal([]byte(params), &ps)
		if _, err := Call(context.Background(), nil, r.url, r.opSK, "banpubkey", ps...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("banpubkey %s: %v, want %q", params, err, want)
		}
	}
	for method, param := range map[string]any{"blockip": "not-an-ip", "allowkind": 70000, "createclaim": "x", "changerelayicon": "javascript:alert(1)"} {
		if _, err := Call(context.Background(), nil, r.url, r.opSK, method, param); err == nil || !strings.HasPrefix(err.Error(), "invalid:") {
			t.Errorf("%s %v: %v, want invalid:", method, param, err)
		}
	}
	if _, err := Call(context.Background(), nil, r.url, r.opSK, "deleteeverything"); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("unknown method: %v", err)
	}
}

// Another instance's change reaches this one through Reload (the postgres
// store's side-table notification) and is told to the hooks.
func TestNIP86_ReloadFollowsAnotherInstance(t *testing.T) {
	kv := &memkv.KV{}
	one, _ := New(Options{KV: kv}, envNone())
	two, _ := New(Options{KV: kv}, envNone())
	var heard []Change
	two.OnChange(func(c Change) { heard = append(heard, c) })
	pk := strings.Repeat("b", 64)
	if err := one.Put(ListBannedPubkeys, pk, "", ""); err != nil {
		t.Fatal(err)
	}
	if _, ok := two.BannedPubkey(pk); ok {
		t.Fatal("control: the other instance knew before the notification")
	}
	if err := two.Reload(ListBannedPubkeys + ":" + pk); err != nil {
		t.Fatal(err)
	}
	if _, ok := two.BannedPubkey(pk); !ok || len(heard) != 1 || !heard[0].Present {
		t.Fatalf("after Reload: banned %v, heard %+v", ok, heard)
	}
	one.Remove(ListBannedPubkeys, pk)
	two.Reload(ListBannedPubkeys + ":" + pk)
	if _, ok := two.BannedPubkey(pk); ok || len(heard) != 2 || heard[1].Present {
		t.Fatalf("after the unban: banned %v, heard %+v", ok, heard)
	}
}

func envNone() env.Env { return env.Env{} }
