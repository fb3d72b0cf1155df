package deploy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/grasp-dev/grasp/internal/testwait"
)

// graspProc is a running `grasp serve` built from this tree.
type graspProc struct {
	cmd     *exec.Cmd
	done    chan struct{}
	logPath string
	Addr    string // where it listens, host:port
	Metrics string // its metrics listener, host:port
	DataDir string
}

// startGrasp runs grasp listening on listen (a loopback address, port 0 for
// any) with the given public URL and data dir, metrics on, plus extra TOML
// appended. Like deploy/grasp.toml it trusts the proxy on this machine
// (server.trusted_proxies), and it caps connections per client address at
// perIPCap so checkClientAddresses can reach the cap.
func startGrasp(t testing.TB, listen, publicURL, dataDir, extra string) *graspProc {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "grasp.toml")
	writeFile(t, cfg, fmt.Sprintf(`[server]
listen = %q
public_url = %q
data_dir = %q
trusted_proxies = ["127.0.0.1", "::1"]

[relay.limits]
max_connections_per_ip = %d

[metrics]
enabled = true
listen = "127.0.0.1:0"

[log]
level = "info"
format = "json"
%s
`, listen, publicURL, dataDir, perIPCap, extra))
	p := &graspProc{done: make(chan struct{}), logPath: filepath.Join(dir, "grasp.log"), DataDir: dataDir}
	logf, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	p.cmd = exec.Command(graspBinary(t), "serve", "--config", cfg)
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	// Its own process group, as systemd's cgroup would hold grasp and the
	// git processes it runs.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start grasp: %v", err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			p.dumpLog(t)
		}
	})
	testwait.ForErr(t, "grasp to listen", func() (bool, error) {
		if p.exited() {
			return false, fmt.Errorf("grasp exited: %s", p.tail())
		}
		rec := p.find("grasp listening")
		if rec == nil {
			return false, nil
		}
		p.Addr, _ = rec["addr"].(string)
		p.Metrics, _ = rec["metrics"].(string)
		return true, nil
	})
	return p
}

func (p *graspProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop asks grasp to shut down gracefully and kills it if it does not.
func (p *graspProc) stop(t testing.TB) {
	if p.exited() {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-testwait.After(t):
		t.Errorf("grasp did not stop within %v of SIGTERM; killing it", testwait.Limit(t))
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// find returns the first JSON log record with the message msg.
func (p *graspProc) find(msg string) map[string]any {
	f, err := os.Open(p.logPath)
	if err != nil {
		return nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec map[string]any
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec["@message"] == msg {
			return rec
		}
	}
	return nil
}

func (p *graspProc) tail() string {
	b, _ := os.ReadFile(p.logPath)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}

func (p *graspProc) dumpLog(t testing.TB) {
	t.Logf("grasp log (last lines):\n%s", p.tail())
}

// scrape returns the text of grasp's /metrics.
func (p *graspProc) scrape(t testing.TB) string {
	t.Helper()
	c := &http.Client{Timeout: testwait.Limit(t)}
	resp, err := c.Get("http://" + p.Metrics + "/metrics")
	if err != nil {
		t.Fatalf("scrape metrics: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape metrics: %d %v", resp.StatusCode, err)
	}
	return string(b)
}
