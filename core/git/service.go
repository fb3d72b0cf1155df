package git

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/grasp-dev/grasp/core/clock"
)

// ServiceSpec is one smart-HTTP git service process: `git upload-pack` or
// `git receive-pack` with --stateless-rpc in a repository. core/githttp
// streams the request into it and its answer out; the process, its command
// line, its environment and its hooks are this package's.
type ServiceSpec struct {
	// Service is "git-upload-pack" or "git-receive-pack".
	Service string
	// Dir is the repository.
	Dir string
	// Advertise runs the service with --advertise-refs (info/refs).
	Advertise bool
	// Env is added to git's environment (the client's GIT_PROTOCOL).
	Env []string
	// Body: git reads a request body on stdin (Process.Stdin).
	Body bool
	// PackWindowMemory and PackThreads bound pack-objects' memory and CPU
	// per upload-pack.
	PackWindowMemory string
	PackThreads      int
	// Gate, for a push, answers the push gate's hooks (hooks.go); nil runs
	// no hook at all.
	Gate Gate
	// Clock bounds how long the gate is read after git exited (nil: the
	// real clock).
	Clock clock.Clock
}

// Gate is the server's side of one push's hooks (hooks.go), which
// receive-pack runs with the gate's two pipes as fds 3 and 4.
type Gate interface {
	// PreReceive is asked once the pack is in git's quarantine (quarantine
	// is its directory's base name, "" when the push brought no pack) and
	// before any ref moves: "" lets the push go on, anything else refuses
	// it and is what the client reads.
	PreReceive(quarantine string) string
	// RefsMoved is told each time a ref transaction of receive-pack
	// committed or aborted.
	RefsMoved(committed bool)
}

// gateDrain bounds how long the gate is read after git exited, should a
// stray child keep the pipe open.
const gateDrain = 30 * time.Second

// Process is a started service process.
type Process struct {
	// Stdin takes the request body (nil without ServiceSpec.Body); closing
	// it ends git's input.
	Stdin io.WriteCloser
	// Stdout is git's answer.
	Stdout io.ReadCloser

	cmd      *exec.Cmd
	stderr   *tailBuffer
	clk      clock.Clock
	gateReq  *os.File // nil without a gate
	gateDone chan struct{}
}

// serviceArgs builds the git command line. Settings are passed with -c so
// that every repository behaves alike whatever its own config says.
func (r *Repos) serviceArgs(spec ServiceSpec) []string {
	args := []string{
		// G01-G6: serve any reachable oid and partial clones.
		"-c", "uploadpack.allowTipSHA1InWant=true",
		"-c", "uploadpack.allowReachableSHA1InWant=true",
		"-c", "uploadpack.allowFilter=true",
		// Bound pack-objects memory and CPU per clone (relays.md §4).
		"-c", "pack.windowMemory=" + spec.PackWindowMemory,
		"-c", "pack.threads=" + strconv.Itoa(spec.PackThreads),
		// No gc inside a request: maintenance is a separate loop
		// (Repos.Maintain).
		"-c", "receive.autogc=false",
		// Keep small pushes as packs too: unpacking into thousands of loose
		// objects is slower and leaves more files to clean.
		"-c", "receive.unpackLimit=1",
	}
	// No hooks from templates or operators' leftovers; a push runs the push
	// gate's own (hooks.go).
	hooks := "/dev/null"
	if spec.Gate != nil {
		hooks = r.hooks
	}
	args = append(args, "-c", "core.hooksPath="+hooks)
	args = append(args, fsckArgs("receive")...)
	args = append(args, strings.TrimPrefix(spec.Service, "git-"), "--stateless-rpc")
	if spec.Advertise {
		args = append(args, "--advertise-refs")
	}
	return append(args, spec.Dir)
}

// StartService starts the service spec describes, in its own process
// group (so that Terminate reaches pack-objects and index-pack too), with a
// clean environment, and, for a push, the gate answering its hooks.
func (r *Repos) StartService(spec ServiceSpec) (*Process, error) {
	if spec.Service != "git-upload-pack" && spec.Service != "git-receive-pack" {
		return nil, fmt.Errorf("%q is not a git service", spec.Service)
	}
	cmd := exec.Command(r.git, r.serviceArgs(spec)...)
	cmd.Env = gitEnv(spec.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &Process{cmd: cmd, stderr: &tailBuffer{max: 4096}, clk: spec.Clock, gateDone: make(chan struct{})}
	if p.clk == nil {
		p.clk = clock.New()
	}
	cmd.Stderr = p.stderr
	var err error
	if p.Stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, fmt.Errorf("%s: stdout pipe: %w", spec.Service, err)
	}
	if spec.Body {
		if p.Stdin, err = cmd.StdinPipe(); err != nil {
			return nil, fmt.Errorf("%s: stdin pipe: %w", spec.Service, err)
		}
	}
	var gateResp *os.File
	if spec.Gate != nil {
		// fd 3: the hooks' requests; fd 4: the gate's answers.
		var childReq, childResp *os.File
		if p.gateReq, childReq, err = os.Pipe(); err == nil {
			if childResp, gateResp, err = os.Pipe(); err != nil {
				p.gateReq.Close()
				childReq.Close()
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s: push gate pipes: %w", spec.Service, err)
		}
		cmd.ExtraFiles = []*os.File{childReq, childResp}
	}
	err = cmd.Start()
	// Only git and its hooks may hold the child ends, so that the requests
	// end when they exit.
	for _, f := range cmd.ExtraFiles {
		f.Close()
	}
	if err != nil {
		if p.gateReq != nil {
			p.gateReq.Close()
			gateResp.Close()
		}
		return nil, fmt.Errorf("start %s: %w", spec.Service, err)
	}
	if spec.Gate == nil {
		close(p.gateDone)
		return p, nil
	}
	go func() {
		defer close(p.gateDone)
		r.serveGate(spec.Gate, p.gateReq, gateResp)
	}()
	return p, nil
}

// Terminate sends the process group SIGTERM (never SIGKILL: receive-pack's
// quarantine must be cleaned by git itself).
func (p *Process) Terminate() { _ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM) }

// Wait waits for git to exit and, for a push, for the gate to read to the
// end of what its hooks said. Its error is git's exit status.
func (p *Process) Wait() error {
	err := p.cmd.Wait()
	if p.gateReq != nil {
		select {
		case <-p.gateDone:
		case <-p.clk.After(gateDrain):
			p.gateReq.Close()
			<-p.gateDone
		}
		p.gateReq.Close()
	}
	return err
}

// Stderr is the start of what git wrote to stderr (4 KiB at most), once
// Wait has returned.
func (p *Process) Stderr() string { return p.stderr.String() }

// serveGate answers the hooks' requests read from req until it ends,
// writing gate's answers to resp (the protocol of gateHooks).
func (r *Repos) serveGate(gate Gate, req, resp *os.File) {
	defer resp.Close()
	sc := bufio.NewScanner(req)
	for sc.Scan() {
		verb, arg, _ := strings.Cut(sc.Text(), " ")
		switch verb {
		case "pre-receive":
			answer := "ok"
			if why := gate.PreReceive(arg); why != "" {
				answer = "no " + OneLine(why)
			}
			if _, err := fmt.Fprintln(resp, answer); err != nil {
				r.log.Warn("push gate: answer the pre-receive hook", "error", err)
			}
		case "committed", "aborted":
			gate.RefsMoved(verb == "committed")
		}
	}
}

// OneLine keeps a message on one line of at most 1000 bytes: a hook's
// answer, a pkt-line of git's protocol.
func OneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == 0 {
			return ' '
		}
		return r
	}, s)
	return Clip(s, 1000)
}

// tailBuffer keeps the first max bytes written (git's stderr, for logs and
// error messages) and drops the rest.
type tailBuffer struct {
	bytes.Buffer
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	if room := t.max - t.Len(); room > 0 {
		if len(p) > room {
			t.Buffer.Write(p[:room])
		} else {
			t.Buffer.Write(p)
		}
	}
	return len(p), nil
}
