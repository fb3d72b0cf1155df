package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/grasp-dev/grasp/internal/testkit"
)

const caddySite = "deploy/caddy/Caddyfile"

// TestCaddy runs deploy/caddy/Caddyfile, as shipped but for its host name,
// port, certificate and upstream, in front of a probe and of grasp (issue 18
// part 1).
func TestCaddy(t *testing.T) { runProxySuite(t, startCaddy) }

// renderCaddy adapts the shipped Caddyfile to loopback and throwaway files.
// The global options block comes first and only keeps Caddy off the
// machine's fixed ports (admin API, port 80) and out of its real storage.
func renderCaddy(t testing.TB, c certs, dir, upstream string, port int) string {
	return caddyGlobal(t, dir, port) + render(t, caddySite, readShipped(t, caddySite), [][2]string{
		{"git.example.com {", fmt.Sprintf("127.0.0.1:%d {", port)},
		{"# tls /etc/ssl/grasp/fullchain.pem /etc/ssl/grasp/privkey.pem", fmt.Sprintf("tls %s %s", c.Cert, c.Key)},
		{"reverse_proxy 127.0.0.1:7334", "reverse_proxy " + upstream},
	})
}

// caddyGlobal is the global options block of a test Caddy in dir.
func caddyGlobal(t testing.TB, dir string, port int) string {
	return fmt.Sprintf(`{
	admin off
	default_bind 127.0.0.1
	http_port %d
	https_port %d
	auto_https disable_redirects
	skip_install_trust
	storage file_system %s
	log {
		output file %s
	}
}
`, testkit.FreePort(t), port, filepath.Join(dir, "storage"), filepath.Join(dir, "caddy.log"))
}

func startCaddy(t *testing.T, c certs, upstream string, port int) *frontProxy {
	t.Helper()
	return runCaddy(t, c, port, func(dir string) string { return renderCaddy(t, c, dir, upstream, port) })
}

// runCaddy runs Caddy on port with the Caddyfile site(dir) returns, dir
// being Caddy's own temporary directory.
func runCaddy(t *testing.T, c certs, port int, site func(dir string) string) *frontProxy {
	t.Helper()
	bin := needTool(t, "caddy", "caddy")
	dir := t.TempDir()
	conf := filepath.Join(dir, "Caddyfile")
	writeFile(t, conf, site(dir))
	env := append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+filepath.Join(dir, "data"), "XDG_CONFIG_HOME="+filepath.Join(dir, "config"))
	cmd := exec.Command(bin, "run", "--config", conf, "--adapter", "caddyfile")
	cmd.Env, cmd.Dir = env, dir
	return runProxy(t, c, cmd, syscall.SIGTERM, port, filepath.Join(dir, "output.log"), filepath.Join(dir, "caddy.log"))
}

// TestCaddySiteSettings reads Caddy's own adaptation of the shipped file
// for what a proxy run cannot show in a test's time: that nothing adds a
// timeout, a body cap or buffering to Caddy's defaults, which the probes
// showed to suit grasp.
func TestCaddySiteSettings(t *testing.T) {
	bin := needTool(t, "caddy", "caddy")
	cmd := exec.Command(bin, "adapt", "--config", filepath.Join(repoRoot, caddySite), "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("caddy adapt %s: %v", caddySite, err)
	}
	var doc any
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("caddy adapt output: %v", err)
	}
	forbidden := map[string]string{
		"request_buffers":  "buffers request bodies (pushes)",
		"response_buffers": "buffers responses (clones)",
		"max_size":         "caps request bodies (pushes)",
		"read_timeout":     "cuts long pushes or idle websockets",
		"write_timeout":    "cuts long clones or idle websockets",
		"stream_timeout":   "cuts websockets",
		"read_body":        "cuts long pushes",
	}
	var proxies []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, sub := range x {
				if why, bad := forbidden[k]; bad {
					t.Errorf("%s sets %s, which %s", caddySite, k, why)
				}
				walk(sub)
			}
			if x["handler"] == "reverse_proxy" {
				b, _ := json.Marshal(x["upstreams"])
				proxies = append(proxies, string(b))
			}
		case []any:
			for _, sub := range x {
				walk(sub)
			}
		}
	}
	walk(doc)
	if len(proxies) != 1 || !strings.Contains(proxies[0], `"127.0.0.1:7334"`) {
		t.Errorf("%s: reverse proxies %v, want one to grasp's default listen 127.0.0.1:7334", caddySite, proxies)
	}
}
