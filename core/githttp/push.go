package githttp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/refusals"
)

// push is one receive-pack request on its way through the steps of
// serveReceivePack.
type push struct {
	h     *handler
	w     http.ResponseWriter
	r     *http.Request
	repo  nip34.RepoRef
	dir   string
	ip    string
	start time.Time
	// ctx outlives the request: once the push is under way it must be
	// finished or refused consistently, client gone or not.
	ctx context.Context

	body io.Reader    // the rest of the body after the command list: the pack
	wire *countReader // the request bytes as they arrived
	lim  *limitReader // the body's bounds; its charge counts the quotas
	cmds PushCommands
	raw  []byte // the command list as read, replayed into git
	res  Result // the decision made without the lock

	prsRsv           PRsReservation
	placeholderBytes func() int64
	// held is what the steps took, given back in reverse order by release.
	held []func()
}

func (p *push) hold(f func()) { p.held = append(p.held, f) }

// release gives back what the steps took, last taken first.
func (p *push) release() {
	for i := len(p.held) - 1; i >= 0; i-- {
		p.held[i]()
	}
}

// refused counts a refused push by reason: a GRASP-06 one in the /prs/
// metrics, a hosted repository's in the refusals its page shows.
func (p *push) refused(reason string) {
	if p.repo.PRs {
		p.h.m.prsPushes.WithLabelValues("refused").Inc()
		p.h.m.prsRefused.WithLabelValues(reason).Inc()
		return
	}
	p.h.opts.Refusals.note(p.repo, reason, len(p.cmds.Updates))
}

// refuseAll refuses every ref of the push for reason.
func (p *push) refuseAll(reason string) {
	p.answerRefused(Result{Reason: reason, RefReasons: map[string]string{}})
}

// answerRefused answers a push refused before git ran. It first reads what
// the client is still sending (bounded like the push) so that the client
// reads the answer instead of failing on a reset connection.
func (p *push) answerRefused(res Result) {
	_, _ = io.Copy(io.Discard, p.body)
	writeReceiveResult(p.w, rejection(p.cmds, res))
	p.h.finish("push", p.start, runResult{rejected: true, in: p.wire.n})
}

// parse reads the command list at the start of the body, bounded, before
// anything is decided; a body that cannot be read or parsed is answered.
func (p *push) parse() bool {
	h := p.h
	body, wire, lim, closeBody, err := h.requestBody(p.w, p.r, h.opts.MaxPushBytes, "a push may hold "+sizeText(h.opts.MaxPushBytes))
	if err != nil {
		p.refused(ClassMalformed)
		http.Error(p.w, err.Error(), http.StatusBadRequest)
		h.finish("push", p.start, runResult{err: err})
		return false
	}
	p.body, p.wire, p.lim = body, wire, lim
	p.hold(closeBody)
	cmds, raw, err := ReadPushCommands(body, h.opts.MaxCommandBytes, h.opts.MaxCommands)
	if err != nil {
		msg := err.Error()
		if errors.Is(err, errSlowBody) {
			msg = slowBodyMsg(err)
			h.m.refused.WithLabelValues("slow_body").Inc()
			p.refused("slow_body")
		} else {
			h.m.auth.WithLabelValues("rejected", ClassMalformed).Inc()
			p.refused(ClassMalformed)
		}
		writeReceiveResult(p.w, pktLine("ERR "+git.OneLine(msg)+"\n"))
		h.finish("push", p.start, runResult{rejected: true, in: wire.n})
		return false
	}
	p.cmds, p.raw = cmds, raw
	return true
}

// writable refuses a push to a read-only GRASP-05 archive.
func (p *push) writable() bool {
	h := p.h
	if h.opts.ReadOnly == nil {
		return true
	}
	why := h.opts.ReadOnly(p.ctx, p.repo)
	if why == "" {
		return true
	}
	h.m.refused.WithLabelValues("read_only").Inc()
	h.opts.Refusals.note(p.repo, "read_only", len(p.cmds.Updates))
	if h.opts.RefusalLog.Detail(p.ip, refusals.PushRefused) {
		h.log.Info("push refused: read-only archive", "repo", p.repo.URLPath(), "remote", p.ip)
	}
	p.refuseAll(why)
	return false
}

// authorize makes the first decision, without the lock; the push gate
// decides again under it, against the refs and states of that moment.
// Before it, this instance catches up with the others sharing its store:
// the state a client published through another instance just before its
// push (OK true there) is then in this instance's purgatory too. Only
// here, never under the lock: what the catch-up waits behind may itself
// wait for the repository's lock.
func (p *push) authorize() bool {
	h := p.h
	if h.opts.CaughtUp != nil {
		if err := h.opts.CaughtUp(p.ctx); err != nil {
			h.log.Warn("push decided on what this instance knows: it could not catch up with the other instances", "repo", p.repo.URLPath(), "error", err)
		}
	}
	res, err := h.authorize(p.ctx, p.repo, p.dir, p.cmds.Updates)
	if err != nil {
		h.log.Error("push authorisation could not be decided", "repo", p.repo.URLPath(), "remote", p.ip, "error", err)
		res = Result{Class: ClassError, Reason: "error: " + git.OneLine(err.Error()), RefReasons: map[string]string{}}
		for _, u := range p.cmds.Updates {
			res.RefReasons[u.Ref] = res.Reason
		}
	}
	p.res = res
	if res.Allowed {
		return true
	}
	h.m.auth.WithLabelValues("rejected", res.Class).Inc()
	p.refused(res.Class)
	if h.opts.RefusalLog.Detail(p.ip, refusals.PushRefused) {
		h.log.Info("push refused", "repo", p.repo.URLPath(), "remote", p.ip, "refs", git.RefsMoved(p.cmds.Updates), "class", res.Class, "reason", res.Reason)
	}
	p.answerRefused(res)
	return false
}

// spaceLeft refuses a push when the data directory is below its free-space
// watermark.
func (p *push) spaceLeft() bool {
	h := p.h
	if h.opts.CheckSpace == nil {
		return true
	}
	err := h.opts.CheckSpace()
	if err == nil {
		return true
	}
	h.m.refused.WithLabelValues("disk").Inc()
	p.refused("disk")
	if h.opts.RefusalLog.Detail(p.ip, refusals.PushRefused) {
		h.log.Warn("push refused: low on disk space", "repo", p.repo.URLPath(), "remote", p.ip, "error", err)
	}
	p.refuseAll(err.Error())
	return false
}

// reserve admits the push's anonymous storage before git runs, then counts
// its bytes as they arrive (the command list already read first): GRASP-06
// /prs/ data, event known or not (audit F20), and refs/nostr placeholders
// (audit F02).
func (p *push) reserve() bool {
	prs, ok := p.reservePRs()
	if !ok {
		return false
	}
	placeholders, ok := p.reservePlaceholders()
	if !ok {
		return false
	}
	var charges []func(int64) error
	for _, c := range []func(int64) error{prs, placeholders} {
		if c != nil {
			charges = append(charges, c)
		}
	}
	p.lim.charge = chargeAll(charges)
	return true
}

// refuseQuota refuses a push over a quota.
func (p *push) refuseQuota(err error) {
	p.h.m.refused.WithLabelValues("quota").Inc()
	p.refused("quota")
	p.refuseAll(err.Error())
}

// reservePRs reserves a /prs/ push with the PRsQuota and charges the
// command list; it returns the charge of what follows (nil: no quota).
func (p *push) reservePRs() (func(int64) error, bool) {
	h := p.h
	rsv, err := h.reservePRs(p.r, p.repo, p.ip)
	if err != nil {
		if h.opts.RefusalLog.Detail(p.ip, refusals.PushRateLimited) {
			h.log.Info("/prs/ push refused: quota", "repo", p.repo.URLPath(), "remote", p.ip, "reason", err)
		}
		p.refuseQuota(err)
		return nil, false
	}
	if rsv == nil {
		return nil, true
	}
	p.prsRsv = rsv
	p.hold(rsv.Release)
	if err := rsv.Charge(int64(len(p.raw))); err != nil {
		p.refuseQuota(err)
		return nil, false
	}
	return rsv.Charge, true
}

// reservePlaceholders reserves the placeholders the push creates with the
// PlaceholderQuota and charges the command list; it returns the charge of
// what follows (nil: none created, or no quota).
func (p *push) reservePlaceholders() (func(int64) error, bool) {
	h := p.h
	if len(p.res.Placeholders) == 0 || h.opts.Placeholders == nil {
		return nil, true
	}
	ids := make([]string, len(p.res.Placeholders))
	for i, ph := range p.res.Placeholders {
		ids[i] = ph.EventID
	}
	rsv, err := h.opts.Placeholders.ReservePlaceholders(p.repo, p.ip, ids)
	if err != nil {
		if h.opts.RefusalLog.Detail(p.ip, refusals.PushRateLimited) {
			h.log.Info("placeholder push refused", "repo", p.repo.URLPath(), "remote", p.ip, "reason", err)
		}
		p.refuseQuota(err)
		return nil, false
	}
	p.hold(rsv.Release)
	if err := rsv.Charge(int64(len(p.raw))); err != nil {
		h.opts.RefusalLog.Count(p.ip, refusals.PushRateLimited)
		p.refuseQuota(err)
		return nil, false
	}
	p.placeholderBytes = rsv.Bytes
	return rsv.Charge, true
}

// takeSlot takes a git process slot, or refuses the push.
func (p *push) takeSlot() bool {
	release, refused := p.h.slots.acquire(p.r.Context(), p.ip)
	if refused != nil {
		p.h.m.refused.WithLabelValues(refused.reason).Inc()
		p.refused(refused.reason)
		p.refuseAll(refused.Error())
		return false
	}
	p.hold(release)
	return true
}

// openPRs creates the /prs/ repository the push goes to: it exists from
// here, for pushes authorised and admitted only (G06-1: nothing before
// creates a directory), and is removed again if the push leaves it
// without a ref (G06-8).
func (p *push) openPRs() bool {
	if !p.repo.PRs {
		return true
	}
	done, err := p.h.repos.OpenPRs(p.ctx, p.repo)
	if err != nil {
		p.h.log.Error("create a /prs/ repository", "repo", p.repo.URLPath(), "error", err)
		p.refused(ClassError)
		p.refuseAll("error: could not create the repository here; try again later")
		return false
	}
	p.hold(done)
	return true
}

// run streams the command list, made atomic, and the pack into `git
// receive-pack`, whose hooks ask gate.
func (p *push) run(gate *pushGate) runResult {
	env, _ := protocolEnv(p.r)
	rr := p.h.runService(p.w, p.r, runSpec{
		kind: "push", svc: svcReceive, dir: p.dir, env: env,
		// atomic: the refs move in one transaction the gate sees commit
		body:        io.MultiReader(bytes.NewReader(withCapability(p.raw, "atomic")), p.body),
		contentType: receiveResultType,
		maxDuration: p.h.opts.MaxDuration,
		gate:        gate,
		refuse: func(w http.ResponseWriter, _ int, msg string) {
			writeReceiveResult(w, rejection(p.cmds, Result{Reason: msg}))
		},
	})
	rr.in = p.wire.n
	return rr
}

// settle reads what became of the push from its gate and from git, counts
// it and ends the request's accounting. It returns the decision made under
// the lock and whether every ref moved.
func (p *push) settle(gate *pushGate, rr runResult) (Result, bool) {
	h := p.h
	res, applied, asked, refusal := gate.done()
	switch {
	case applied:
		p.accepted(res, &rr)
	case refusal != "":
		h.m.auth.WithLabelValues("rejected", ClassStale).Inc()
		p.refused("gate")
		if h.opts.RefusalLog.Detail(p.ip, refusals.PushRefused) {
			h.log.Info("push refused by the push gate", "repo", p.repo.URLPath(), "remote", p.ip, "refs", git.RefsMoved(p.cmds.Updates), "reason", refusal)
		}
		rr.rejected, rr.err = true, nil
	case !asked && rr.err == nil:
		// git refused the push itself (fsck, missing objects) before its
		// hooks ran: nothing moved.
		rr.rejected = true
		p.refused("git")
	case rr.err == nil:
		rr.err = errors.New("receive-pack did not apply every ref update")
	}
	if !applied && rr.err != nil {
		p.failed(rr.err)
	}
	h.finish("push", p.start, rr)
	return res, applied
}

// accepted counts an applied push and keeps what a /prs/ push brought
// counted against its quota.
func (p *push) accepted(res Result, rr *runResult) {
	h := p.h
	h.m.auth.WithLabelValues("accepted", res.Class).Inc()
	if p.prsRsv != nil {
		if err := p.prsRsv.Commit(p.ctx); err != nil {
			h.log.Error("record what a /prs/ push brought", "repo", p.repo.URLPath(), "error", err)
		}
	}
	if p.repo.PRs {
		h.m.prsPushes.WithLabelValues("accepted").Inc()
		h.m.prsBytes.Add(float64(p.wire.n))
		h.log.Info("/prs/ push accepted", "repo", p.repo.URLPath(), "remote", p.ip, "refs", git.RefsMoved(p.cmds.Updates), "bytes", p.wire.n)
	}
	if rr.err != nil {
		// Refs moved even though the response could not be delivered.
		h.log.Warn("push applied but the client did not get the whole answer", "repo", p.repo.URLPath(), "remote", p.ip, "error", rr.err)
		rr.err = nil
	}
}

// failed counts a push that did not apply, by what stopped it.
func (p *push) failed(err error) {
	switch {
	case errors.As(err, new(*quotaError)):
		p.h.opts.RefusalLog.Count(p.ip, refusals.PushRateLimited)
		p.refused("quota")
	case errors.Is(err, errBodyTooLarge):
		p.refused("too_large")
	case errors.Is(err, errSlowBody):
		p.refused("slow_body")
	case p.repo.PRs:
		p.h.m.prsPushes.WithLabelValues("failed").Inc()
	}
}

// notify hands an applied push to the post-push hook (release from
// purgatory, propagation, placeholders), while its reservations are still
// held.
func (p *push) notify(res Result) {
	if p.h.hooks == nil {
		return
	}
	pr := PushResult{Repo: p.repo, Updates: p.cmds.Updates, State: res.State, Placeholders: res.Placeholders,
		Remote: p.ip, PlaceholderBytes: p.placeholderBytes()}
	if res.State != nil {
		pr.StateEventID = res.State.EventID
	}
	p.h.hooks.OnPush(p.ctx, pr)
}
