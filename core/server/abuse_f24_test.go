package server_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/internal/testkit"
)

// F24: the admin paths of the metrics listener trusted any loopback peer
// whatever Host and Origin it sent, so a DNS-rebinding page in a browser
// on the server's host (its requests come from 127.0.0.1, naming the
// attacker's host, with an Origin) could download /admin/backup: every
// event and repository. Now such requests, and any without the admin
// token, are refused before the backup starts; the token the server made
// at start (readable by its user only) opens them. /metrics stays open to
// Prometheus.
func TestAbuse_F24_AdminRefusesRebindingAndNoToken(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))
	e := newEnv(t, func(c *config.Config) {
		c.Metrics.Enabled = true
		c.Metrics.Listen = addr
		// The status report asks sync, which answers once this instance
		// leads; nothing here is about sync.
		c.Sync.Enabled = false
	})
	do := func(method, path, host string, h http.Header) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		for k, v := range h {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp.StatusCode, string(b)
	}
	port := addr[strings.LastIndex(addr, ":")+1:]
	rebind := http.Header{"Origin": {"http://attacker.example:" + port}}
	for _, c := range []struct {
		name, method, path, host string
		h                        http.Header
	}{
		{"rebinding page: foreign Host and Origin", http.MethodPost, "/admin/backup", "attacker.example:" + port, rebind},
		{"foreign Host", http.MethodPost, "/admin/backup", "attacker.example:" + port, nil},
		{"Origin set", http.MethodPost, "/admin/backup", "", rebind},
		{"no token", http.MethodPost, "/admin/backup", "", nil},
		{"no token, status", http.MethodGet, "/admin/status", "", nil},
		{"no token, integrity", http.MethodGet, "/admin/integrity", "", nil},
		{"no token, unknown admin path", http.MethodGet, "/admin/anything", "", nil},
	} {
		code, body := do(c.method, c.path, c.host, c.h)
		if code != http.StatusForbidden && code != http.StatusUnauthorized {
			t.Errorf("%s: %s %s answered %d (%d bytes), want 403 or 401", c.name, c.method, c.path, code, len(body))
		}
	}
	// The operator's path: the token the server made, mode 0600.
	tokFile := filepath.Join(e.cfg.Server.DataDir, "admin.token")
	st, err := os.Stat(tokFile)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("admin token file %s: %v %v, want mode 0600", tokFile, st, err)
	}
	tok, _ := os.ReadFile(tokFile)
	auth := http.Header{"Authorization": {"Bearer " + strings.TrimSpace(string(tok))}}
	if code, body := do(http.MethodGet, "/admin/status", "", auth); code != 200 || !strings.Contains(body, `"repos"`) {
		t.Fatalf("status with the token: %d %q", code, body)
	}
	if code, _ := do(http.MethodGet, "/admin/status", "", http.Header{"Authorization": auth["Authorization"], "Origin": {"http://127.0.0.1:" + port}}); code != 403 {
		t.Fatalf("the token with an Origin: %d, want 403", code)
	}
	if code, body := do(http.MethodGet, "/metrics", "attacker.example:"+port, nil); code != 200 || !strings.Contains(body, "grasp_") {
		t.Fatalf("/metrics: %d", code)
	}
}
