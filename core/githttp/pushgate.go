package githttp

import (
	"context"
	"sync"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
)

// pushGate is the server's side of one push's hooks (core/git/hooks.go, a
// git.Gate). receive-pack
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
	updates []git.RefUpdate

	mu       sync.Mutex
	unlock   func()
	asked    bool   // pre-receive ran
	res      Result // the authorisation under the lock
	applied  bool
	refusal  string // why pre-receive was answered "no"
	finished bool
}

func (h *handler) newPushGate(ctx context.Context, repo nip34.RepoRef, dir string, updates []git.RefUpdate) *pushGate {
	return &pushGate{h: h, ctx: ctx, repo: repo, dir: dir, updates: updates}
}

// PreReceive (git.Gate) decides whether the push goes on; "" means yes, with the lock
// held until RefsMoved or done.
func (g *pushGate) PreReceive(quarantine string) string {
	g.mu.Lock()
	g.asked = true
	g.mu.Unlock()
	qdir, err := git.QuarantineDir(g.dir, quarantine)
	if err != nil {
		return g.refuse(err.Error())
	}
	if why := g.complete(qdir); why != "" {
		return g.refuse(why)
	}
	unlock, err := g.h.repos.Lock(g.ctx, g.dir)
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
	g.mu.Unlock()
	return ""
}

func (g *pushGate) refuse(why string) string {
	g.mu.Lock()
	g.refusal = why
	g.mu.Unlock()
	return why
}

// complete reports why the repository plus the quarantine lack objects of
// a new ref tip, "" when every tip is complete (git.Repos.Complete).
func (g *pushGate) complete(qdir string) string {
	var tips []string
	for _, u := range g.updates {
		if !u.IsDelete() && !u.IsNoop() {
			tips = append(tips, u.New)
		}
	}
	if err := g.h.repos.Complete(g.ctx, g.dir, qdir, tips); err != nil {
		return "push refused as a whole: the pushed data lacks objects of a new ref (see the refs marked 'missing necessary objects'); push again"
	}
	return ""
}

// RefsMoved (git.Gate) runs when a ref transaction of receive-pack has committed or
// aborted: once every update is in place the gate aligns HEAD and gives the
// lock back. An abort is not final: git runs a transaction of its own on
// packed-refs for a deletion, which aborts when nothing is packed, before
// the push's; if the push's aborts, receive-pack exits and done gives the
// lock back.
func (g *pushGate) RefsMoved(committed bool) {
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
			if err := g.h.repos.SetHeadIn(g.ctx, g.dir, head); err != nil {
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
