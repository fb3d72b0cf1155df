package git

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/grasp-dev/grasp/core/nip34"
)

// pushGate is the server's side of one push's hooks (hooks.go). receive-pack
// reads the pack into its quarantine without any lock, however slowly the
// client sends it; only when its pre-receive hook asks does the gate:
//
//  1. check that the quarantine plus the repository hold every object of
//     every new ref tip (git 2.39 rejects a ref whose objects are missing
//     on its own and still moves the others, even with `atomic`: audit
//     2026-11, F11 addendum), so a push moves all its refs or none;
//  2. take the repository lock (audit F04: it was held from before the
//     body was read, so one trickling push blocked every write to the
//     repository for up to an hour);
//  3. authorise the push again against the refs and states as they are
//     now, under the lock.
//
// The refs then move in one transaction (the push is made atomic), and the
// reference-transaction hook reports "committed" or "aborted": the gate
// checks the refs, points HEAD as the state says and gives the lock back.
type pushGate struct {
	h       *handler
	ctx     context.Context
	repo    nip34.RepoRef
	dir     string
	updates []RefUpdate

	mu       sync.Mutex
	unlock   func()
	asked    bool   // pre-receive ran
	res      Result // the authorisation under the lock
	packs    []string
	applied  bool
	refusal  string // why pre-receive was answered "no"
	finished bool
}

func (h *handler) newPushGate(ctx context.Context, repo nip34.RepoRef, dir string, updates []RefUpdate) *pushGate {
	return &pushGate{h: h, ctx: ctx, repo: repo, dir: dir, updates: updates}
}

// serve answers the hooks' requests read from req until it ends, writing
// answers to resp.
func (g *pushGate) serve(req *os.File, resp *os.File) {
	defer resp.Close()
	sc := bufio.NewScanner(req)
	for sc.Scan() {
		verb, arg, _ := strings.Cut(sc.Text(), " ")
		switch verb {
		case "pre-receive":
			answer := "ok"
			if why := g.preReceive(arg); why != "" {
				answer = "no " + oneLine(why)
			}
			if _, err := fmt.Fprintln(resp, answer); err != nil {
				g.h.log.Warn("push gate: answer the pre-receive hook", "error", err)
			}
		case "committed", "aborted":
			g.refsMoved(verb == "committed")
		}
	}
}

// preReceive decides whether the push goes on; "" means yes, with the lock
// held until refsMoved or done.
func (g *pushGate) preReceive(quarantine string) string {
	g.mu.Lock()
	g.asked = true
	g.mu.Unlock()
	qdir, err := g.quarantineDir(quarantine)
	if err != nil {
		return g.refuse(err.Error())
	}
	if why := g.complete(qdir); why != "" {
		return g.refuse(why)
	}
	unlock, err := g.h.repos.lock(g.ctx, g.dir)
	if err != nil {
		return g.refuse("error: " + err.Error())
	}
	res, err := g.h.authorize(g.ctx, g.repo, g.dir, g.updates)
	if err != nil {
		unlock()
		return g.refuse("error: " + err.Error())
	}
	if !res.Allowed {
		unlock()
		return g.refuse(res.Reason)
	}
	g.mu.Lock()
	g.unlock, g.res = unlock, res
	g.packs = packsIn(qdir)
	g.mu.Unlock()
	return ""
}

func (g *pushGate) refuse(why string) string {
	g.mu.Lock()
	g.refusal = why
	g.mu.Unlock()
	return why
}

// quarantineDir resolves the basename the hook sent to the quarantine
// directory inside this repository ("" when the push brought no pack).
func (g *pushGate) quarantineDir(base string) (string, error) {
	if base == "" {
		return "", nil
	}
	if strings.ContainsAny(base, `/\`) || base == "." || base == ".." {
		return "", fmt.Errorf("error: unexpected quarantine %q", truncate(base, 80))
	}
	dir := filepath.Join(g.dir, "objects", base)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("error: quarantine %q not found", truncate(base, 80))
	}
	return dir, nil
}

// complete reports why the repository plus the quarantine lack objects of
// a new ref tip, "" when every tip is complete: the connectivity check git
// makes per ref, made for the push as a whole.
func (g *pushGate) complete(qdir string) string {
	var tips strings.Builder
	for _, u := range g.updates {
		if !u.IsDelete() && !u.IsNoop() {
			tips.WriteString(u.New + "\n")
		}
	}
	if tips.Len() == 0 {
		return ""
	}
	var env []string
	if qdir != "" {
		env = []string{"GIT_OBJECT_DIRECTORY=" + qdir, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(g.dir, "objects"), "GIT_QUARANTINE_PATH=" + qdir}
	}
	if _, err := g.h.repos.runEnv(g.ctx, g.dir, env, strings.NewReader(tips.String()),
		"rev-list", "--objects", "--stdin", "--not", "--all", "--quiet"); err != nil {
		return "push refused as a whole: the pushed data lacks objects of a new ref (see the refs marked 'missing necessary objects'); push again"
	}
	return ""
}

// packsIn lists the packs (their names without extension) in a quarantine.
func packsIn(qdir string) []string {
	if qdir == "" {
		return nil
	}
	names, _ := filepath.Glob(filepath.Join(qdir, "pack", "pack-*.pack"))
	var out []string
	for _, n := range names {
		out = append(out, strings.TrimSuffix(filepath.Base(n), ".pack"))
	}
	return out
}

// refsMoved runs when a ref transaction of receive-pack has committed or
// aborted: once every update is in place the gate aligns HEAD and gives the
// lock back. An abort is not final: git runs a transaction of its own on
// packed-refs for a deletion, which aborts when nothing is packed, before
// the push's; if the push's aborts, receive-pack exits and done gives the
// lock back.
func (g *pushGate) refsMoved(committed bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.unlock == nil || g.finished || !committed {
		return
	}
	applied, err := g.h.applied(g.ctx, g.dir, g.updates)
	if err != nil {
		g.h.log.Error("push gate: read refs after the push", "repo", g.repo.URLPath(), "error", err)
	}
	if !applied && err == nil {
		// the packed-refs transaction of a deletion committed first
		return
	}
	g.applied = applied
	if applied && g.res.State != nil {
		if head := g.res.State.HeadRef(); head != "" {
			if err := g.h.repos.setHeadAt(g.ctx, g.dir, head); err != nil {
				g.h.log.Error("align HEAD after push", "repo", g.repo.URLPath(), "error", err)
			}
		}
	}
	g.finished = true
	g.unlock()
}

// done is called once receive-pack has exited: a lock still held (the
// process died between its hooks) is given back.
func (g *pushGate) done() (res Result, applied, asked bool, refusal string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.unlock != nil && !g.finished {
		g.finished = true
		g.unlock()
	}
	return g.res, g.applied, g.asked, g.refusal
}
