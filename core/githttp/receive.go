package githttp

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
)

const receiveResultType = "application/x-git-receive-pack-result"

// serveReceivePack authorises a push from its command list, before git
// runs, then streams the already-read commands plus the rest of the body
// (the pack) into `git receive-pack`. No lock is held while the client
// sends: git's quarantine receives the pack, and the push gate
// (pushgate.go) authorises the push again under the repository's lock just
// before the refs move, all of them or none. A refused push never starts
// git and so writes nothing. Each step (push.go) answers the client itself
// when it refuses the push, and reports false.
func (h *handler) serveReceivePack(w http.ResponseWriter, r *http.Request, repo nip34.RepoRef, dir string) {
	p := &push{h: h, w: w, r: r, repo: repo, dir: dir, start: h.clk.Now(), ip: h.clientIP(r),
		ctx: context.WithoutCancel(r.Context()), placeholderBytes: func() int64 { return 0 }}
	// What the steps hold (the body, quota reservations, the process slot,
	// a new /prs/ repository) is given back only after the post-push hook
	// has recorded what the push brought.
	defer p.release()
	if !p.parse() {
		return
	}
	if len(p.cmds.Updates) == 0 {
		// A flush-only request: git's "nothing to push" probe.
		writeReceiveResult(w, []byte(pktFlush))
		h.finish("push", p.start, runResult{in: p.wire.n})
		return
	}
	// The order is by cost to the server: refusals that cost nothing, the
	// decision (without the lock, so a refused push costs no process and
	// no wait), then disk, quotas, a process, a /prs/ directory; each is
	// taken only once the ones before have admitted the push.
	if !p.writable() || !p.authorize() || !p.spaceLeft() || !p.reserve() || !p.takeSlot() || !p.openPRs() {
		return
	}
	gate := h.newPushGate(p.ctx, repo, dir, p.cmds.Updates)
	if res, applied := p.settle(gate, p.run(gate)); applied {
		p.notify(res)
	}
}

// authorize gathers the inputs of Authorize: current refs, and the states
// and PR tips only when the push needs them.
func (h *handler) authorize(ctx context.Context, repo nip34.RepoRef, dir string, updates []git.RefUpdate) (Result, error) {
	if repo.PRs {
		return h.authorizePRs(ctx, repo, dir, updates)
	}
	current, err := h.repos.RefsIn(ctx, dir)
	if err != nil {
		return Result{}, err
	}
	var states []StateCandidate
	prTips := map[string]string{}
	needStates := false
	for _, u := range updates {
		if git.IsStateRef(u.Ref) && !u.IsNoop() {
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
func (h *handler) applied(ctx context.Context, dir string, updates []git.RefUpdate) (bool, error) {
	refs, err := h.repos.RefsIn(ctx, dir)
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
		return pktLine("ERR " + git.OneLine(res.Reason) + "\n")
	}
	var report bytes.Buffer
	report.Write(pktLine("unpack ok\n"))
	for _, u := range cmds.Updates {
		reason := res.RefReasons[u.Ref]
		if reason == "" {
			reason = res.Reason
		}
		report.Write(pktLine("ng " + u.Ref + " " + git.OneLine(reason) + "\n"))
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
	out.Write(sideband(2, []byte(git.OneLine(res.Reason)+"\n"), band))
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
