package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/refusals"
)

const receiveResultType = "application/x-git-receive-pack-result"

// serveReceivePack authorises a push from its command list, before git
// runs, then streams the already-read commands plus the rest of the body
// (the pack) into `git receive-pack`. No lock is held while the client
// sends: git's quarantine receives the pack, and the push gate
// (pushgate.go) authorises the push again under the repository's lock just
// before the refs move, all of them or none. A refused push never starts
// git and so writes nothing.
func (h *handler) serveReceivePack(w http.ResponseWriter, r *http.Request, repo nip34.RepoRef, dir string) {
	start := h.clk.Now()
	ip := h.clientIP(r)
	// prsRefused counts a refused GRASP-06 push by reason; a refused push
	// of a hosted repository is remembered for its page instead.
	nRefs := 0
	prsRefused := func(reason string) {
		if repo.PRs {
			h.m.prsPushes.WithLabelValues("refused").Inc()
			h.m.prsRefused.WithLabelValues(reason).Inc()
			return
		}
		h.opts.Refusals.note(repo, reason, nRefs)
	}
	body, wire, lim, closeBody, err := h.requestBody(w, r, h.opts.MaxPushBytes, "a push may hold "+sizeText(h.opts.MaxPushBytes))
	if err != nil {
		prsRefused(ClassMalformed)
		http.Error(w, err.Error(), http.StatusBadRequest)
		h.finish("push", start, runResult{err: err})
		return
	}
	defer closeBody()

	cmds, raw, err := ReadPushCommands(body, h.opts.MaxCommandBytes, h.opts.MaxCommands)
	if err != nil {
		msg := err.Error()
		if errors.Is(err, errSlowBody) {
			msg = slowBodyMsg(err)
			h.m.refused.WithLabelValues("slow_body").Inc()
			prsRefused("slow_body")
		} else {
			h.m.auth.WithLabelValues("rejected", ClassMalformed).Inc()
			prsRefused(ClassMalformed)
		}
		writeReceiveResult(w, pktLine("ERR "+oneLine(msg)+"\n"))
		h.finish("push", start, runResult{rejected: true, in: wire.n})
		return
	}
	nRefs = len(cmds.Updates)
	if len(cmds.Updates) == 0 {
		// A flush-only request: git's "nothing to push" probe.
		writeReceiveResult(w, []byte(pktFlush))
		h.finish("push", start, runResult{in: wire.n})
		return
	}
	placeholderBytes := func() int64 { return 0 }
	refuseAll := func(reason string) {
		res := Result{Reason: reason, RefReasons: map[string]string{}}
		// Read what the client is still sending so that it reads our answer
		// instead of failing on a reset connection (bounded like the push).
		_, _ = io.Copy(io.Discard, body)
		writeReceiveResult(w, rejection(cmds, res))
		h.finish("push", start, runResult{rejected: true, in: wire.n})
	}

	// Past this point the request may end at any moment (client gone), but
	// the push must be finished or refused consistently.
	ctx := context.WithoutCancel(r.Context())
	if h.opts.ReadOnly != nil {
		if why := h.opts.ReadOnly(ctx, repo); why != "" {
			h.m.refused.WithLabelValues("read_only").Inc()
			h.opts.Refusals.note(repo, "read_only", nRefs)
			if h.opts.RefusalLog.Detail(ip, refusals.PushRefused) {
				h.log.Info("push refused: read-only archive", "repo", repo.URLPath(), "remote", ip)
			}
			refuseAll(why)
			return
		}
	}
	// A first decision without the lock, so a refused push costs no
	// process and no wait; the gate decides again under the lock.
	res, err := h.authorize(ctx, repo, dir, cmds.Updates)
	if err != nil {
		h.log.Error("push authorisation could not be decided", "repo", repo.URLPath(), "remote", ip, "error", err)
		res = Result{Class: ClassError, Reason: "error: " + oneLine(err.Error()), RefReasons: map[string]string{}}
		for _, u := range cmds.Updates {
			res.RefReasons[u.Ref] = res.Reason
		}
	}
	if !res.Allowed {
		h.m.auth.WithLabelValues("rejected", res.Class).Inc()
		prsRefused(res.Class)
		if h.opts.RefusalLog.Detail(ip, refusals.PushRefused) {
			h.log.Info("push refused", "repo", repo.URLPath(), "remote", ip, "refs", RefsMoved(cmds.Updates), "class", res.Class, "reason", res.Reason)
		}
		_, _ = io.Copy(io.Discard, body)
		writeReceiveResult(w, rejection(cmds, res))
		h.finish("push", start, runResult{rejected: true, in: wire.n})
		return
	}
	if h.opts.CheckSpace != nil {
		if err := h.opts.CheckSpace(); err != nil {
			h.m.refused.WithLabelValues("disk").Inc()
			prsRefused("disk")
			if h.opts.RefusalLog.Detail(ip, refusals.PushRefused) {
				h.log.Warn("push refused: low on disk space", "repo", repo.URLPath(), "remote", ip, "error", err)
			}
			refuseAll(err.Error())
			return
		}
	}
	var charges []func(int64) error
	// GRASP-06 /prs/ data is anonymous storage: counted before git runs,
	// and its bytes as they arrive, event known or not (audit F20).
	prsRsv, err := h.reservePRs(r, repo, ip)
	if err != nil {
		h.m.refused.WithLabelValues("quota").Inc()
		prsRefused("quota")
		if h.opts.RefusalLog.Detail(ip, refusals.PushRateLimited) {
			h.log.Info("/prs/ push refused: quota", "repo", repo.URLPath(), "remote", ip, "reason", err)
		}
		refuseAll(err.Error())
		return
	}
	if prsRsv != nil {
		defer prsRsv.Release()
		if err := prsRsv.Charge(int64(len(raw))); err != nil {
			h.m.refused.WithLabelValues("quota").Inc()
			prsRefused("quota")
			refuseAll(err.Error())
			return
		}
		charges = append(charges, prsRsv.Charge)
	}
	if len(res.Placeholders) > 0 && h.opts.Placeholders != nil {
		// Placeholders are anonymous writes: counted before git runs, and
		// their bytes as they arrive (audit F02).
		ids := make([]string, len(res.Placeholders))
		for i, ph := range res.Placeholders {
			ids[i] = ph.EventID
		}
		rsv, err := h.opts.Placeholders.ReservePlaceholders(repo, ip, ids)
		if err != nil {
			h.m.refused.WithLabelValues("quota").Inc()
			prsRefused("quota")
			if h.opts.RefusalLog.Detail(ip, refusals.PushRateLimited) {
				h.log.Info("placeholder push refused", "repo", repo.URLPath(), "remote", ip, "reason", err)
			}
			refuseAll(err.Error())
			return
		}
		defer rsv.Release()
		if err := rsv.Charge(int64(len(raw))); err != nil {
			h.m.refused.WithLabelValues("quota").Inc()
			prsRefused("quota")
			h.opts.RefusalLog.Count(ip, refusals.PushRateLimited)
			refuseAll(err.Error())
			return
		}
		charges = append(charges, rsv.Charge)
		placeholderBytes = rsv.Bytes
	}
	lim.charge = chargeAll(charges)
	release, refused := h.slots.acquire(r.Context(), ip)
	if refused != nil {
		h.m.refused.WithLabelValues(refused.reason).Inc()
		prsRefused(refused.reason)
		refuseAll(refused.msg)
		return
	}
	defer release()
	if repo.PRs {
		// The /prs/ repository exists from here, for pushes authorised and
		// admitted only (G06-1: nothing before creates a directory), and is
		// removed again if the push leaves it without a ref (G06-8).
		done, err := h.repos.OpenPRs(ctx, repo)
		if err != nil {
			h.log.Error("create a /prs/ repository", "repo", repo.URLPath(), "error", err)
			prsRefused(ClassError)
			refuseAll("error: could not create the repository here; try again later")
			return
		}
		defer done()
	}

	gate := h.newPushGate(ctx, repo, dir, cmds.Updates)
	env, _ := protocolEnv(r)
	rr := h.runService(w, r, runSpec{
		kind: "push", svc: svcReceive, dir: dir, env: env,
		// atomic: the refs move in one transaction the gate sees commit
		body:        io.MultiReader(bytes.NewReader(withCapability(raw, "atomic")), body),
		contentType: receiveResultType,
		maxDuration: h.opts.MaxDuration,
		gate:        gate,
		refuse: func(w http.ResponseWriter, _ int, msg string) {
			writeReceiveResult(w, rejection(cmds, Result{Reason: msg}))
		},
	})
	rr.in = wire.n
	gres, applied, asked, refusal := gate.done()
	switch {
	case applied:
		h.m.auth.WithLabelValues("accepted", gres.Class).Inc()
		if prsRsv != nil {
			if err := prsRsv.Commit(ctx); err != nil {
				h.log.Error("record what a /prs/ push brought", "repo", repo.URLPath(), "error", err)
			}
		}
		if repo.PRs {
			h.m.prsPushes.WithLabelValues("accepted").Inc()
			h.m.prsBytes.Add(float64(wire.n))
			h.log.Info("/prs/ push accepted", "repo", repo.URLPath(), "remote", ip, "refs", RefsMoved(cmds.Updates), "bytes", wire.n)
		}
		if rr.err != nil {
			// Refs moved even though the response could not be delivered.
			h.log.Warn("push applied but the client did not get the whole answer", "repo", repo.URLPath(), "remote", ip, "error", rr.err)
			rr.err = nil
		}
	case refusal != "":
		h.m.auth.WithLabelValues("rejected", ClassStale).Inc()
		prsRefused("gate")
		if h.opts.RefusalLog.Detail(ip, refusals.PushRefused) {
			h.log.Info("push refused by the push gate", "repo", repo.URLPath(), "remote", ip, "refs", RefsMoved(cmds.Updates), "reason", refusal)
		}
		rr.rejected, rr.err = true, nil
	case !asked && rr.err == nil:
		// git refused the push itself (fsck, missing objects) before its
		// hooks ran: nothing moved.
		rr.rejected = true
		prsRefused("git")
	case rr.err == nil:
		rr.err = errors.New("receive-pack did not apply every ref update")
	}
	if !applied && errors.As(rr.err, new(*quotaError)) {
		h.opts.RefusalLog.Count(ip, refusals.PushRateLimited)
	}
	if !applied && rr.err != nil {
		switch {
		case errors.As(rr.err, new(*quotaError)):
			prsRefused("quota")
		case errors.Is(rr.err, errBodyTooLarge):
			prsRefused("too_large")
		case errors.Is(rr.err, errSlowBody):
			prsRefused("slow_body")
		case repo.PRs:
			h.m.prsPushes.WithLabelValues("failed").Inc()
		}
	}
	h.finish("push", start, rr)
	if applied && h.hooks != nil {
		pr := PushResult{Repo: repo, Updates: cmds.Updates, State: gres.State, Placeholders: gres.Placeholders,
			Remote: ip, PlaceholderBytes: placeholderBytes()}
		if gres.State != nil {
			pr.StateEventID = gres.State.EventID
		}
		h.hooks.OnPush(ctx, pr)
	}
}

// authorize gathers the inputs of Authorize: current refs, and the states
// and PR tips only when the push needs them.
func (h *handler) authorize(ctx context.Context, repo nip34.RepoRef, dir string, updates []RefUpdate) (Result, error) {
	if repo.PRs {
		return h.authorizePRs(ctx, repo, dir, updates)
	}
	current, err := h.repos.refsAt(ctx, dir)
	if err != nil {
		return Result{}, err
	}
	var states []StateCandidate
	prTips := map[string]string{}
	needStates := false
	for _, u := range updates {
		if isStateRef(u.Ref) && !u.IsNoop() {
			needStates = true
		}
		if evID, ok := strings.CutPrefix(u.Ref, "refs/nostr/"); ok && nip34.IsHex64(evID) && !u.IsNoop() && !u.IsDelete() {
			tip, known, err := h.auth.PRTip(ctx, evID)
			if err != nil {
				return Result{}, fmt.Errorf("look up PR event %s: %w", evID, err)
			}
			if known {
				prTips[evID] = tip
			}
		}
	}
	if needStates {
		if states, err = h.auth.States(ctx, repo); err != nil {
			return Result{}, fmt.Errorf("load state events for %s/%s: %w", repo.Npub(), repo.Identifier, err)
		}
	}
	return Authorize(current, updates, states, prTips), nil
}

// applied reports whether every update is now reflected in the refs; git
// applies refs one by one, so this is what tells a complete push.
func (h *handler) applied(ctx context.Context, dir string, updates []RefUpdate) (bool, error) {
	refs, err := h.repos.refsAt(ctx, dir)
	if err != nil {
		return false, err
	}
	for _, u := range updates {
		oid, ok := refs[u.Ref]
		if u.IsDelete() && ok || !u.IsDelete() && oid != u.New {
			return false, nil
		}
	}
	return true, nil
}

func writeReceiveResult(w http.ResponseWriter, body []byte) {
	noCache(w)
	w.Header().Set("Content-Type", receiveResultType)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// rejection builds receive-pack's answer to a refused push: a report-status
// with "unpack ok" and one "ng <ref> <reason>" per ref (inside side-band
// when the client asked for it, plus the summary on the progress band so it
// shows as "remote: …"), or an ERR packet for clients without report-status.
func rejection(cmds PushCommands, res Result) []byte {
	if !cmds.Has("report-status") && !cmds.Has("report-status-v2") {
		return pktLine("ERR " + oneLine(res.Reason) + "\n")
	}
	var report bytes.Buffer
	report.Write(pktLine("unpack ok\n"))
	for _, u := range cmds.Updates {
		reason := res.RefReasons[u.Ref]
		if reason == "" {
			reason = res.Reason
		}
		report.Write(pktLine("ng " + u.Ref + " " + oneLine(reason) + "\n"))
	}
	report.WriteString(pktFlush)

	band := 0
	switch {
	case cmds.Has("side-band-64k"):
		band = maxPktLen - 5
	case cmds.Has("side-band"):
		band = 1000 - 5
	default:
		return report.Bytes()
	}
	var out bytes.Buffer
	out.Write(sideband(2, []byte(oneLine(res.Reason)+"\n"), band))
	out.Write(sideband(1, report.Bytes(), band))
	out.WriteString(pktFlush)
	return out.Bytes()
}

func sideband(ch byte, data []byte, max int) []byte {
	var out bytes.Buffer
	for len(data) > 0 {
		n := min(len(data), max)
		fmt.Fprintf(&out, "%04x", n+5)
		out.WriteByte(ch)
		out.Write(data[:n])
		data = data[n:]
	}
	return out.Bytes()
}

// oneLine keeps a reason on one pkt-line.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == 0 {
			return ' '
		}
		return r
	}, s)
	return truncate(s, 1000)
}
