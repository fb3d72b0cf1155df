package admin

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testToken = "0123456789abcdef0123456789abcdef0123456789abcdef"

// TestAbuse_F24_GuardRefusesWhatIsNotTheOperator: the admin paths are
// refused to other hosts, to requests naming the listener by another name
// (a DNS-rebinding page), to requests with an Origin (any page in a
// browser) and to requests without the token; the CLI's request passes.
func TestAbuse_F24_GuardRefusesWhatIsNotTheOperator(t *testing.T) {
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7335}
	g := Guard{Token: testToken, Addr: addr, TokenFile: "/var/lib/grasp/admin.token"}
	h := g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("the backup")) }))
	good := func() *http.Request {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:7335"+BackupPath, nil)
		r.RemoteAddr = "127.0.0.1:40000"
		r.Header.Set("Authorization", "Bearer "+testToken)
		return r
	}
	cases := []struct {
		name   string
		change func(r *http.Request)
		want   int
		says   string
	}{
		{"the CLI", func(r *http.Request) {}, 200, "the backup"},
		{"localhost by name", func(r *http.Request) { r.Host = "localhost:7335" }, 200, "the backup"},
		{"IPv6 loopback", func(r *http.Request) { r.Host = "[::1]:7335"; r.RemoteAddr = "[::1]:40000" }, 200, "the backup"},
		{"another host", func(r *http.Request) { r.RemoteAddr = "192.0.2.7:40000" }, 403, "loopback clients only"},
		{"rebound name", func(r *http.Request) { r.Host = "attacker.example:7335" }, 403, "naming this listener"},
		{"another port", func(r *http.Request) { r.Host = "127.0.0.1:80" }, 403, "naming this listener"},
		{"no port", func(r *http.Request) { r.Host = "127.0.0.1" }, 403, "naming this listener"},
		{"a web page", func(r *http.Request) { r.Header.Set("Origin", "http://attacker.example:7335") }, 403, "Origin"},
		{"a null origin", func(r *http.Request) { r.Header.Set("Origin", "null") }, 403, "Origin"},
		{"no token", func(r *http.Request) { r.Header.Del("Authorization") }, 401, "/var/lib/grasp/admin.token"},
		{"wrong token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+strings.Repeat("0", 48)) }, 401, "admin token"},
		{"token without Bearer", func(r *http.Request) { r.Header.Set("Authorization", testToken) }, 401, "admin token"},
	}
	for _, c := range cases {
		r := good()
		c.change(r)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != c.want || !strings.Contains(w.Body.String(), c.says) {
			t.Errorf("%s: %d %q, want %d saying %q", c.name, w.Code, w.Body.String(), c.want, c.says)
		}
	}
	// An empty token (never configured) opens nothing.
	h = Guard{Addr: addr}.Wrap(http.NotFoundHandler())
	r := good()
	r.Header.Set("Authorization", "Bearer ")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 401 {
		t.Errorf("a guard without a token let a request through: %d", w.Code)
	}
}

// TestEnsureTokenMakesAPrivateFileOnce: the token is made once, 0600,
// and kept across starts; a file others may read is refused.
func TestEnsureTokenMakesAPrivateFileOnce(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sub", "admin.token")
	tok, err := EnsureToken(p)
	if err != nil || len(tok) != 64 {
		t.Fatalf("EnsureToken: %q %v", tok, err)
	}
	st, err := os.Stat(p)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v, want mode 0600", st.Mode(), err)
	}
	again, err := EnsureToken(p)
	if err != nil || again != tok {
		t.Fatalf("second start: %q %v, want the same token", again, err)
	}
	if got, err := ReadToken(p); err != nil || got != tok {
		t.Fatalf("ReadToken: %q %v", got, err)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureToken(p); err == nil || !strings.Contains(err.Error(), "may be read by others") {
		t.Fatalf("a world-readable token was accepted: %v", err)
	}
	short := filepath.Join(t.TempDir(), "short")
	os.WriteFile(short, []byte("abc\n"), 0o600)
	if _, err := ReadToken(short); err == nil {
		t.Fatal("a 3-character token was accepted")
	}
}

func TestDialAddress(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:7335": "127.0.0.1:7335", "0.0.0.0:7335": "127.0.0.1:7335", ":7335": "127.0.0.1:7335",
		"[::]:7335": "[::1]:7335", "localhost:7335": "localhost:7335", "192.0.2.1:7335": "192.0.2.1:7335",
	} {
		if got := Dial(in); got != want {
			t.Errorf("Dial(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestGuardOnOneInterface: listening on one non-loopback address, the
// machine's own connections to it (the CLI's) are local; others are not.
func TestGuardOnOneInterface(t *testing.T) {
	g := Guard{Token: testToken, Addr: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 7335}}
	h := g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for peer, want := range map[string]int{"192.0.2.1:40000": 200, "192.0.2.9:40000": 403, "127.0.0.1:40000": 200} {
		r := httptest.NewRequest(http.MethodGet, "http://192.0.2.1:7335"+StatusPath, nil)
		r.RemoteAddr = peer
		r.Header.Set("Authorization", "Bearer "+testToken)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("from %s: %d, want %d", peer, w.Code, want)
		}
	}
}

// TestIntegrityReportReadsOldAndNewServers: the CLI reads the report with
// its count, and the bare findings array of a server from before it.
func TestIntegrityReportReadsOldAndNewServers(t *testing.T) {
	var rep IntegrityReport
	if err := json.Unmarshal([]byte(`{"checked":3,"findings":[{"repo":"r","problem":"p"}]}`), &rep); err != nil || rep.Checked != 3 || len(rep.Findings) != 1 {
		t.Fatalf("new: %+v %v", rep, err)
	}
	var old IntegrityReport
	if err := json.Unmarshal([]byte(` [{"repo":"r","problem":"p"}]`), &old); err != nil || old.Checked != -1 || len(old.Findings) != 1 {
		t.Fatalf("old: %+v %v", old, err)
	}
	var b strings.Builder
	if WriteFindings(&b, rep) != 1 || !strings.Contains(b.String(), "3 repositories checked, 1 finding(s), 0 repaired, 1 open") {
		t.Fatalf("WriteFindings: %q", b.String())
	}
}
