package deploy

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/internal/testkit"
)

const (
	nginxSubpathSite = "deploy/nginx/grasp-subpath.conf"
	caddySubpathSite = "deploy/caddy/Caddyfile.subpath"
)

// TestNginxSubpath runs deploy/nginx/grasp-subpath.conf: grasp under
// https://host/git next to another site at the root (issue 18 part 1,
// issue 10 part 5).
func TestNginxSubpath(t *testing.T) {
	runSubpathSuite(t, func(t *testing.T, c certs, upstream string, port int, webroot string) *frontProxy {
		return runNginx(t, c, port, func(string) string {
			return render(t, nginxSubpathSite, readShipped(t, nginxSubpathSite), [][2]string{
				{"listen 443 ssl http2;", fmt.Sprintf("listen 127.0.0.1:%d ssl http2;", port)},
				{"listen [::]:443 ssl http2;", ""},
				{"listen 80;", fmt.Sprintf("listen 127.0.0.1:%d;", testkit.FreePort(t))},
				{"listen [::]:80;", ""},
				{"/etc/letsencrypt/live/example.org/fullchain.pem", c.Cert},
				{"/etc/letsencrypt/live/example.org/privkey.pem", c.Key},
				{"server_name example.org;", "server_name 127.0.0.1 localhost;"},
				{"server 127.0.0.1:7334;", "server " + upstream + ";"},
				{"root  /var/www/html;", "root  " + webroot + ";"},
			})
		})
	})
}

// TestCaddySubpath runs deploy/caddy/Caddyfile.subpath the same way.
func TestCaddySubpath(t *testing.T) {
	runSubpathSuite(t, func(t *testing.T, c certs, upstream string, port int, webroot string) *frontProxy {
		return runCaddy(t, c, port, func(dir string) string {
			return caddyGlobal(t, dir, port) + render(t, caddySubpathSite, readShipped(t, caddySubpathSite), [][2]string{
				{"example.org {", fmt.Sprintf("127.0.0.1:%d {", port)},
				{"# tls /etc/ssl/grasp/fullchain.pem /etc/ssl/grasp/privkey.pem", fmt.Sprintf("tls %s %s", c.Cert, c.Key)},
				{"reverse_proxy 127.0.0.1:7334", "reverse_proxy " + upstream},
				{"root * /var/www/html", "root * " + webroot},
			})
		})
	})
}

type startSubpath func(t *testing.T, c certs, upstream string, port int, webroot string) *frontProxy

// runSubpathSuite starts grasp with public_url https://127.0.0.1:port/git
// behind the proxy, checks that the root is the other site's and /git
// grasp's, then drives ngit's whole path through /git.
func runSubpathSuite(t *testing.T, start startSubpath) {
	if testing.Short() {
		t.Skip("runs a reverse proxy and a 200 MB push; not in -short mode")
	}
	c := newCerts(t)
	webroot := t.TempDir()
	// nginx's workers run as nobody and must read the other site
	for _, d := range []string{filepath.Dir(webroot), webroot} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(webroot, "index.html"), "<!doctype html><h1>The other site</h1>\n")
	port := testkit.FreePort(t)
	public := fmt.Sprintf("https://127.0.0.1:%d/git", port)
	g := startGrasp(t, "127.0.0.1:0", public, filepath.Join(t.TempDir(), "data"), "")
	fp := start(t, c, g.Addr, port, webroot)
	root := fp.URL
	h := c.client(true)
	fetch := func(t *testing.T, url string) (int, string) {
		t.Helper()
		resp, err := h.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	t.Run("other site at the root, grasp under /git", func(t *testing.T) {
		if code, body := fetch(t, root+"/"); code != 200 || !strings.Contains(body, "The other site") {
			t.Errorf("GET / = %d %.100q, want the other site", code, body)
		}
		for _, p := range []string{"/git", "/git/"} {
			code, body := fetch(t, root+p)
			if code != 200 || !strings.Contains(body, "wss://127.0.0.1:"+fmt.Sprint(port)+"/git") || !strings.Contains(body, "Hosted repositories") {
				t.Errorf("GET %s = %d, want grasp's landing page naming its relay under /git:\n%.300s", p, code, body)
			}
		}
		if code, body := fetch(t, root+"/gitx"); code != 404 || strings.Contains(body, "grasp") {
			t.Errorf("GET /gitx = %d %.100q, want the other site's 404, not grasp", code, body)
		}
		// The proxy closes /git/metrics itself (issue 26: the Caddy line
		// once stood where it never ran and grasp answered instead).
		if code, body := fetch(t, root+"/git/metrics"); code != 404 || strings.Contains(body, "grasp_") || strings.Contains(body, "hosted repositories") {
			t.Errorf("GET /git/metrics = %d %.100q, want the proxy's own 404", code, body)
		}
	})
	fp.URL, fp.Relay = fp.URL+"/git", fp.Relay+"/git"
	graspThrough(t, c, fp)
	if fp.checkLogs != nil {
		fp.checkLogs(t)
	}
}
