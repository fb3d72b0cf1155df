package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// moduleRoot is the directory of the go.mod of the working directory's
// module; the servers are built from there.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Path}} {{.Dir}}").Output()
	path, dir, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	if err != nil || path != "github.com/grasp-dev/grasp" || dir == "" {
		return "", errors.New("not inside the grasp module: run from the repository, or pass -grasp-bin and -baseline-bin")
	}
	return dir, nil
}

// goBuild builds pkg (relative to the module root) into out.
func goBuild(ctx context.Context, root, pkg, out string, tags []string) error {
	args := []string{"build", "-o", out}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	cmd := exec.CommandContext(ctx, "go", append(args, pkg)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s %s: %v\n%s", strings.Join(tags, ","), pkg, err, out)
	}
	return nil
}

// proc is one server process under test.
type proc struct {
	name    string
	cmd     *exec.Cmd
	addr    string // host:port it serves on
	profile string // its CPU-profile switch, "" if none
	dataDir string
	logPath string
	done    chan struct{}
	waitErr error
}

func (p *proc) wsURL() string   { return "ws://" + p.addr }
func (p *proc) httpURL() string { return "http://" + p.addr }
func (p *proc) pid() int        { return p.cmd.Process.Pid }

// startProc runs bin and waits (at most two minutes) until a line of its
// output names the address it serves on. All output goes to logPath.
func startProc(ctx context.Context, name, bin string, args, env []string, dataDir, logPath string) (*proc, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, dataDir: dataDir, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		pw.Close()
		close(p.done)
	}()
	addrs := make(chan [2]string, 4)
	go func() {
		defer logf.Close()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logf, line)
			if kind, addr := listeningLine(line); addr != "" {
				select {
				case addrs <- [2]string{kind, addr}:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	wantProfile := slicesContains(env, "GRASP_PROFILE_LISTEN=") || slicesContains(args, "-profile")
	timer := time.NewTimer(2 * time.Minute)
	defer timer.Stop()
	for p.addr == "" || (wantProfile && p.profile == "") {
		select {
		case a := <-addrs:
			if a[0] == "profile" {
				p.profile = a[1]
			} else {
				p.addr = a[1]
			}
		case <-p.done:
			return nil, fmt.Errorf("%s exited before serving: %v (log: %s)\n%s", name, p.waitErr, logPath, tail(logPath, 20))
		case <-timer.C:
			p.stop()
			return nil, fmt.Errorf("%s did not say where it listens within 2 minutes (log: %s)", name, logPath)
		case <-ctx.Done():
			p.stop()
			return nil, ctx.Err()
		}
	}
	return p, nil
}

func slicesContains(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// listeningLine recognises the line that names a listening address: grasp's
// JSON log record "grasp listening" (addr field), the baseline's
// "listening ADDR", and "profiling listening ADDR" from either.
func listeningLine(line string) (kind, addr string) {
	if rest, ok := strings.CutPrefix(line, "profiling listening "); ok {
		return "profile", strings.TrimSpace(rest)
	}
	if rest, ok := strings.CutPrefix(line, "listening "); ok {
		return "serve", strings.TrimSpace(rest)
	}
	if strings.HasPrefix(line, "{") && strings.Contains(line, `"grasp listening"`) {
		var rec struct {
			Msg  string `json:"@message"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "grasp listening" {
			return "serve", rec.Addr
		}
	}
	return "", ""
}

// stop ends the process with SIGTERM (a graceful shutdown), and SIGKILL if
// it is still running a minute later.
func (p *proc) stop() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(time.Minute):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s ignored SIGTERM for a minute; killed", p.name)
	}
}

// alive reports an error if the process has exited.
func (p *proc) alive() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s exited: %v (log: %s)\n%s", p.name, p.waitErr, p.logPath, tail(p.logPath, 20))
	default:
		return nil
	}
}

func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// startProfile and stopProfile bracket one scenario's CPU profile.
func (p *proc) startProfile(file string) error {
	if p.profile == "" {
		return nil
	}
	return p.profileCall(http.MethodPost, "/start?file="+url.QueryEscape(file), nil)
}

func (p *proc) stopProfile() error {
	if p.profile == "" {
		return nil
	}
	return p.profileCall(http.MethodPost, "/stop", nil)
}

// profileCall asks the server's benchprofile switch (core/profiling) for
// path and, with out non-nil, decodes its JSON answer into out.
func (p *proc) profileCall(method, path string, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, "http://"+p.profile+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s profile %s: %w", p.name, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s profile %s: %s %s", p.name, path, resp.Status, body)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return fmt.Errorf("%s profile %s: %w", p.name, path, err)
		}
	}
	return nil
}

// procSample is what /proc says about a process at one moment.
type procSample struct {
	at         time.Time
	hwmKB      int64 // VmHWM: peak resident set since start
	rssKB      int64 // VmRSS
	anonKB     int64 // RssAnon: the process's own memory (Go heap and stacks, badger's caches)
	fileKB     int64 // RssFile: pages of mapped files (badger's tables and value log, the binary)
	writeBytes int64 // /proc/<pid>/io write_bytes: bytes sent (or due) to the storage layer
	cancelled  int64 // cancelled_write_bytes: dirtied, then truncated or deleted before writeback
	wchar      int64 // bytes handed to write(2) and the like, cached or not
	cpu        time.Duration
}

// userHZ is the unit of the times in /proc/<pid>/stat (USER_HZ, 100 on
// every Linux architecture Go supports).
const userHZ = 100

func sampleProc(pid int) (procSample, error) {
	s := procSample{at: time.Now()}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		field, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(val), "kB")), 10, 64)
		switch field {
		case "VmHWM":
			s.hwmKB = kb
		case "VmRSS":
			s.rssKB = kb
		case "RssAnon":
			s.anonKB = kb
		case "RssFile":
			s.fileKB = kb
		}
	}
	io, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(string(io), "\n") {
		field, v, _ := strings.Cut(line, ":")
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch field {
		case "write_bytes":
			s.writeBytes = n
		case "cancelled_write_bytes":
			s.cancelled = n
		case "wchar":
			s.wchar = n
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// Fields after the parenthesised command name; utime, stime, cutime
	// and cstime (children the process waited for: git) are 14–17.
	if i := strings.LastIndexByte(string(stat), ')'); i > 0 {
		f := strings.Fields(string(stat)[i+1:])
		var ticks int64
		for _, k := range []int{11, 12, 13, 14} {
			if k < len(f) {
				v, _ := strconv.ParseInt(f[k], 10, 64)
				ticks += v
			}
		}
		s.cpu = time.Duration(ticks) * time.Second / userHZ
	}
	return s, nil
}

// dirSizes is the allocated size of each top-level entry of dir (du).
func dirSizes(dir string) (map[string]int64, int64) {
	out := map[string]int64{}
	var total int64
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		size := info.Size()
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			size = st.Blocks * 512
		}
		rel, _ := filepath.Rel(dir, path)
		top, _, _ := strings.Cut(rel, string(filepath.Separator))
		out[top] += size
		total += size
		return nil
	})
	return out, total
}

// threadCPU is the CPU time of the process's current threads in
// nanoseconds (/proc/<pid>/task/*/schedstat), finer than the 10 ms ticks
// of /proc/<pid>/stat. It misses threads that exit in between (Go keeps
// its threads) and children; it times scenarios that run no git.
func threadCPU(pid int) (time.Duration, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, err
	}
	var total time.Duration
	for _, t := range tasks {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue // the thread ended meanwhile
		}
		if f := strings.Fields(string(data)); len(f) > 0 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			total += time.Duration(ns)
		}
	}
	return total, nil
}
