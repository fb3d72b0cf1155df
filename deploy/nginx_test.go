package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/internal/testkit"
)

const nginxSite = "deploy/nginx/grasp.conf"

// TestNginx runs deploy/nginx/grasp.conf, as shipped but for its host name,
// ports, certificate and upstream, in front of a probe and of grasp
// (issue 18 part 1).
func TestNginx(t *testing.T) { runProxySuite(t, startNginx) }

// renderNginx adapts the shipped site to loopback and throwaway files.
func renderNginx(t testing.TB, c certs, upstream string, port, httpPort int) string {
	return render(t, nginxSite, readShipped(t, nginxSite), [][2]string{
		{"listen 443 ssl http2;", fmt.Sprintf("listen 127.0.0.1:%d ssl http2;", port)},
		{"listen [::]:443 ssl http2;", ""},
		{"listen 80;", fmt.Sprintf("listen 127.0.0.1:%d;", httpPort)},
		{"listen [::]:80;", ""},
		{"/etc/letsencrypt/live/git.example.com/fullchain.pem", c.Cert},
		{"/etc/letsencrypt/live/git.example.com/privkey.pem", c.Key},
		{"server_name git.example.com;", "server_name 127.0.0.1 localhost;"},
		{"server 127.0.0.1:7334;", "server " + upstream + ";"},
	})
}

func startNginx(t *testing.T, c certs, upstream string, port int) *frontProxy {
	t.Helper()
	return runNginx(t, c, port, func(dir string) string { return renderNginx(t, c, upstream, port, testkit.FreePort(t)) })
}

// runNginx runs nginx on port with the site site(dir) returns, dir being
// nginx's own temporary directory.
func runNginx(t *testing.T, c certs, port int, site func(dir string) string) *frontProxy {
	t.Helper()
	bin := needTool(t, "nginx", "nginx")
	dir := t.TempDir()
	// nginx started as root runs its workers as nobody, who must reach the
	// temp paths if a body ever is spooled (the test then fails on the
	// buffering it sees, not on a permission error).
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	siteFile := filepath.Join(dir, "grasp.conf")
	writeFile(t, siteFile, site(dir))
	errLog := filepath.Join(dir, "error.log")
	// The http block mirrors Debian's /etc/nginx/nginx.conf (sendfile, gzip,
	// mime types), which includes sites-enabled/ the same way; the rest
	// keeps nginx in this directory and in the foreground.
	conf := filepath.Join(dir, "nginx.conf")
	writeFile(t, conf, fmt.Sprintf(`daemon off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[2]s info;
events { worker_connections 256; }
http {
    sendfile on;
    tcp_nopush on;
    types_hash_max_size 2048;
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    gzip on;
    access_log %[1]s/access.log;
    client_body_temp_path %[1]s/client_body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    include %[3]s;
}
`, dir, errLog, siteFile))
	args := []string{"-p", dir, "-e", errLog, "-c", conf}
	if out, err := exec.Command(bin, append([]string{"-t"}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("nginx -t rejects the shipped site: %v\n%s", err, out)
	}
	fp := runProxy(t, c, exec.Command(bin, args...), syscall.SIGQUIT, port, errLog)
	fp.checkLogs = func(t *testing.T) {
		// nginx says so when it spools a body to disk instead of
		// streaming it: the push and clone must never have caused that.
		b, err := os.ReadFile(errLog)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "buffered to a temporary file") {
				t.Errorf("nginx buffered a body: %s", l)
			}
		}
	}
	return fp
}

// ngxBlock is a block of an nginx config: its header ("server",
// "location / ") and its directives and sub-blocks in order.
type ngxBlock struct {
	head     string
	dirs     [][]string
	children []*ngxBlock
}

// parseNginx reads the subset of nginx syntax the shipped site uses:
// directives end with ';', blocks are '{' ... '}', '#' starts a comment.
func parseNginx(src string) *ngxBlock {
	root := &ngxBlock{}
	stack := []*ngxBlock{root}
	var tok strings.Builder
	for _, line := range strings.Split(src, "\n") {
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		for _, r := range line + " " {
			top := stack[len(stack)-1]
			switch r {
			case ';':
				top.dirs = append(top.dirs, strings.Fields(tok.String()))
				tok.Reset()
			case '{':
				b := &ngxBlock{head: strings.Join(strings.Fields(tok.String()), " ")}
				top.children = append(top.children, b)
				stack = append(stack, b)
				tok.Reset()
			case '}':
				stack = stack[:len(stack)-1]
				tok.Reset()
			default:
				tok.WriteRune(r)
			}
		}
	}
	return root
}

// get returns the arguments of the first directive named name, joined.
func (b *ngxBlock) get(name string, args ...string) (string, bool) {
	for _, d := range b.dirs {
		if len(d) > len(args) && d[0] == name && slices.Equal(d[1:1+len(args)], args) {
			return strings.Join(d[1+len(args):], " "), true
		}
	}
	return "", false
}

// ngxDuration parses an nginx time value ("60", "90s", "1h", "7d").
func ngxDuration(v string) (time.Duration, bool) {
	units := map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour, 'w': 7 * 24 * time.Hour}
	unit := time.Second
	if u, ok := units[v[len(v)-1]]; ok {
		unit, v = u, v[:len(v)-1]
	}
	var n int
	if _, err := fmt.Sscanf(v, "%d", &n); err != nil || fmt.Sprint(n) != v {
		return 0, false
	}
	return time.Duration(n) * unit, true
}

// TestNginxSiteSettings reads what a proxy run cannot show in a test's
// time, the timeouts, together with the settings the probes exercise, so
// that a change to them is caught even where nginx is not installed.
func TestNginxSiteSettings(t *testing.T) {
	root := parseNginx(readShipped(t, nginxSite))
	var tlsServer *ngxBlock
	for _, b := range root.children {
		if l, _ := b.get("listen"); b.head == "server" && strings.Contains(l, "ssl") {
			tlsServer = b
		}
	}
	if tlsServer == nil {
		t.Fatal("no TLS server block")
	}
	for _, want := range [][]string{
		{"client_max_body_size", "0"},
		{"proxy_request_buffering", "off"},
		{"proxy_buffering", "off"},
		{"proxy_http_version", "1.1"},
		{"proxy_set_header", "Upgrade", "$http_upgrade"},
		{"proxy_set_header", "Connection", "$connection_upgrade"},
		{"proxy_set_header", "X-Forwarded-For", "$remote_addr"},
		{"proxy_set_header", "X-Forwarded-Proto", "$scheme"},
	} {
		if got, ok := tlsServer.get(want[0], want[1:len(want)-1]...); !ok || got != want[len(want)-1] {
			t.Errorf("%s: %s = %q, want %q", nginxSite, strings.Join(want[:len(want)-1], " "), got, want[len(want)-1])
		}
	}
	// Websockets idle for long between events; git can be silent while it
	// packs. nginx's default for both is 60 s.
	minimum := map[string]time.Duration{
		`location /`: 7 * 24 * time.Hour,
		`location ~ \.git/(info/refs|git-upload-pack|git-receive-pack)$`: time.Hour,
	}
	seen := map[string]bool{}
	for _, loc := range tlsServer.children {
		want, ok := minimum[loc.head]
		if !ok {
			continue
		}
		seen[loc.head] = true
		if _, ok := loc.get("proxy_pass"); !ok {
			t.Errorf("%s does not proxy", loc.head)
		}
		for _, d := range []string{"proxy_read_timeout", "proxy_send_timeout"} {
			v, _ := loc.get(d)
			if got, ok := ngxDuration(v); !ok || got < want {
				t.Errorf("%s: %s %q, want at least %v", loc.head, d, v, want)
			}
		}
	}
	for head := range minimum {
		if !seen[head] {
			t.Errorf("%s: no %q block", nginxSite, head)
		}
	}
}
