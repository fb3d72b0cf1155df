package main

// Process-level tests: the test binary re-executes itself as the grasp
// command (TestMain hands os.Args to run), so the server under test is the
// real main package, built once with the same flags as the tests (under
// -race the server is race-checked too), driven over real sockets, signals
// and the git binary.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/internal/testkit"
	"github.com/grasp-dev/grasp/internal/testwait"
)

const (
	// childEnv turns the test binary into the grasp command.
	childEnv = "GRASP_CMDTEST_CHILD"
	// versionEnv and commitEnv stand in for -ldflags "-X main.version=..."
	// "-X main.commit=...", which a re-executed test binary cannot carry.
	versionEnv = "GRASP_CMDTEST_VERSION"
	commitEnv  = "GRASP_CMDTEST_COMMIT"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		if v := os.Getenv(versionEnv); v != "" {
			version = v
		}
		if c := os.Getenv(commitEnv); c != "" {
			commit = c
		}
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// graspCmd returns a command running `grasp args...` in dir.
func graspCmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), childEnv+"=1")
	return cmd
}

// runGrasp runs a short grasp command and returns its exit code and output.
func runGrasp(t *testing.T, dir string, stdin []byte, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := graspCmd(dir, args...)
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("start grasp %v: %v", args, err)
	}
	timer := time.AfterFunc(testwait.Limit(t), func() { cmd.Process.Kill() })
	defer timer.Stop()
	err := cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("grasp %v: %v", args, err)
	}
	return code, out.String(), errb.String()
}

// instance is one server's config: where it listens and keeps its data.
type instance struct {
	Port    int
	DataDir string
	Config  string // path of its grasp.toml
}

func (in instance) HTTP() string  { return fmt.Sprintf("http://127.0.0.1:%d", in.Port) }
func (in instance) Relay() string { return fmt.Sprintf("ws://127.0.0.1:%d", in.Port) }

// newInstance writes a grasp.toml for a server on a free port with JSON logs
// (the tests read them), metrics off unless extra enables them, and extra
// appended verbatim (it must not repeat [server] or [log]).
func newInstance(t *testing.T, extra string) instance {
	t.Helper()
	dir := t.TempDir()
	in := instance{Port: testkit.FreePort(t), DataDir: filepath.Join(dir, "data"), Config: filepath.Join(dir, "grasp.toml")}
	in.writeConfig(t, extra)
	return in
}

// writeConfig (re)writes the instance's grasp.toml; a restart picks it up.
func (in instance) writeConfig(t *testing.T, extra string) {
	t.Helper()
	body := fmt.Sprintf(`[server]
listen = "127.0.0.1:%d"
public_url = "http://127.0.0.1:%d"
data_dir = %q

[log]
level = "info"
format = "json"
`, in.Port, in.Port, in.DataDir)
	if !strings.Contains(extra, "[metrics]") {
		body += "\n[metrics]\nenabled = false\n"
	}
	body += "\n" + extra + "\n"
	if err := os.WriteFile(in.Config, []byte(body), 0o644); err != nil {
		t.Fatalf("write config: %v", err)
	}
}

// proc is a running `grasp serve`. Its stderr goes to a file, not a pipe, so
// that git processes it spawned cannot keep Wait from returning after a kill.
type proc struct {
	t       *testing.T
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	exitErr error

	mu    sync.Mutex
	off   int64
	part  string
	lines []string
}

var serveCount struct {
	sync.Mutex
	n int
}

// startServer starts `grasp serve --config in.Config` and waits until it logs that
// it listens.
func startServer(t *testing.T, in instance) *proc {
	t.Helper()
	p := startProc(t, filepath.Dir(in.Config), "serve", "--config", in.Config)
	p.waitLog(t, func(m logLine) bool { return m.Msg() == "grasp listening" })
	return p
}

func startProc(t *testing.T, dir string, args ...string) *proc {
	t.Helper()
	serveCount.Lock()
	serveCount.n++
	n := serveCount.n
	serveCount.Unlock()
	logPath := filepath.Join(t.TempDir(), fmt.Sprintf("grasp-%d.log", n))
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("create log file: %v", err)
	}
	defer f.Close()
	cmd := graspCmd(dir, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatalf("start grasp %v: %v", args, err)
	}
	p := &proc{t: t, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.exitErr = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
		p.checkRaces(t)
		if t.Failed() {
			p.dumpTail(t, 60)
		}
	})
	return p
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill9 is the crash: SIGKILL, no chance to flush or close anything.
func (p *proc) kill9(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !p.exited() {
		t.Fatalf("kill -9: %v", err)
	}
	select {
	case <-p.done:
	case <-testwait.After(t):
		t.Fatalf("server still running %v after SIGKILL", testwait.Limit(t))
	}
}

// stop sends sig and returns the exit code once the process has ended.
func (p *proc) stop(t *testing.T, sig syscall.Signal) int {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("send %v: %v", sig, err)
	}
	select {
	case <-p.done:
	case <-testwait.After(t):
		t.Fatalf("server did not exit within %v of %v", testwait.Limit(t), sig)
	}
	var ee *exec.ExitError
	if errors.As(p.exitErr, &ee) {
		return ee.ExitCode()
	}
	if p.exitErr != nil {
		t.Fatalf("wait for server: %v", p.exitErr)
	}
	return 0
}

// logLine is one JSON log record of hclog.
type logLine map[string]any

func (m logLine) Msg() string { s, _ := m["@message"].(string); return s }

func (m logLine) Str(k string) string { s, _ := m[k].(string); return s }

// readLog returns every complete log line written so far.
func (p *proc) readLog() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, err := os.Open(p.logPath)
	if err != nil {
		return p.lines
	}
	defer f.Close()
	if _, err := f.Seek(p.off, 0); err != nil {
		return p.lines
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			p.off += int64(n)
			chunk := p.part + string(buf[:n])
			parts := strings.Split(chunk, "\n")
			p.part = parts[len(parts)-1]
			p.lines = append(p.lines, parts[:len(parts)-1]...)
		}
		if err != nil || n == 0 {
			break
		}
	}
	return append([]string(nil), p.lines...)
}

// records returns the JSON log records written so far.
func (p *proc) records() []logLine {
	var out []logLine
	for _, l := range p.readLog() {
		var m logLine
		if json.Unmarshal([]byte(l), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// waitLog waits until a JSON log record matches or the process exits
// (which fails the test).
func (p *proc) waitLog(t *testing.T, match func(logLine) bool) logLine {
	t.Helper()
	var found logLine
	testwait.For(t, "a log line", func() bool {
		for _, m := range p.records() {
			if match(m) {
				found = m
				return true
			}
		}
		if p.exited() {
			p.readLog()
			t.Fatalf("server exited (%v) before the awaited log line", p.exitErr)
		}
		return false
	})
	return found
}

// waitText is waitLog for text-format logs.
func (p *proc) waitText(t *testing.T, match func(string) bool) string {
	t.Helper()
	var found string
	testwait.For(t, "a log line", func() bool {
		for _, l := range p.readLog() {
			if match(l) {
				found = l
				return true
			}
		}
		if p.exited() {
			t.Fatalf("server exited (%v) before the awaited log line", p.exitErr)
		}
		return false
	})
	return found
}

// checkRaces fails the test when the race-enabled child reported a race:
// the whole process runs under the detector, so this is the one place
// races between packages show up.
func (p *proc) checkRaces(t *testing.T) {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return
	}
	if i := bytes.Index(b, []byte("WARNING: DATA RACE")); i >= 0 {
		end := min(len(b), i+6000)
		t.Errorf("the server reported a data race:\n%s", b[i:end])
	}
}

func (p *proc) dumpTail(t *testing.T, n int) {
	lines := p.readLog()
	p.mu.Lock()
	if p.part != "" {
		lines = append(lines, p.part)
	}
	p.mu.Unlock()
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	t.Logf("last lines of %s:\n%s", p.logPath, strings.Join(lines, "\n"))
}
