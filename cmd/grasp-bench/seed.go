package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/nbd-wtf/go-nostr"
)

// seedResult describes making a segment's repositories exist on a server.
type seedResult struct {
	Repos   int           `json:"repositories"`
	Pushes  int           `json:"pushes"`
	Elapsed time.Duration `json:"elapsed_ns"`
}

// seedPushers is how many pushes run at once while seeding.
const seedPushers = 4

// seedRepos makes the repositories introduced by anns and states exist on
// the server before their activity is published: the announcements, then
// the states, each answered OK; on grasp, which holds both in purgatory
// until the git data arrives, the commit every state names is pushed and
// the announcements are waited for until they are served. pushRepo is a
// local bare repository the commits are written into.
func seedRepos(ctx context.Context, p *proc, isGrasp bool, c *corpus, anns, states []int, done *doneSet, pushRepo string) (seedResult, error) {
	start := time.Now()
	res := seedResult{Repos: len(anns)}
	for _, idx := range [][]int{anns, states} {
		r, err := ingest(ctx, p.wsURL(), c, idx, done, 1, 64, nil)
		if err != nil {
			return res, err
		}
		if r.Rejected > 0 {
			return res, fmt.Errorf("%d of %d refused: %v", r.Rejected, len(idx), r.Reasons)
		}
	}
	if !isGrasp {
		res.Elapsed = time.Since(start)
		return res, nil
	}
	type push struct{ url, oid string }
	var pushes []push
	for _, i := range states {
		evt, err := c.event(i)
		if err != nil {
			return res, err
		}
		d := evt.Tags.GetD()
		oid, body := seedCommit(evt.PubKey, d)
		if ref := evt.Tags.Find("refs/heads/main"); ref == nil || ref[1] != oid {
			return res, fmt.Errorf("state %s does not name the seed commit %s", evt.ID, oid)
		}
		cmd := exec.CommandContext(ctx, "git", "--git-dir="+pushRepo, "hash-object", "-t", "commit", "-w", "--stdin")
		cmd.Env = gitEnv
		cmd.Stdin = strings.NewReader(string(body))
		out, err := cmd.Output()
		if err != nil || strings.TrimSpace(string(out)) != oid {
			return res, fmt.Errorf("write seed commit %s: got %q, %v", oid, strings.TrimSpace(string(out)), err)
		}
		pushes = append(pushes, push{p.httpURL() + git.RepoURLPath(nip34.Npub(evt.PubKey), d), oid})
	}
	work := make(chan push)
	errs := make(chan error, seedPushers)
	var wg sync.WaitGroup
	for range seedPushers {
		wg.Go(func() {
			for ps := range work {
				if _, err := gitRun(ctx, pushRepo, "push", "-q", ps.url, ps.oid+":refs/heads/main"); err != nil {
					errs <- err
					return
				}
			}
		})
	}
feed:
	for _, ps := range pushes {
		select {
		case work <- ps:
		case err := <-errs:
			close(work)
			wg.Wait()
			return res, err
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return res, err
	default:
	}
	res.Pushes = len(pushes)
	ids := make([]string, len(anns))
	for k, i := range anns {
		ids[k] = c.items[i].idHex()
	}
	if err := waitServed(ctx, p.wsURL(), ids, 2*time.Minute); err != nil {
		return res, err
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// waitServed polls until a REQ by id returns every one of ids.
func waitServed(ctx context.Context, url string, ids []string, within time.Duration) error {
	ws, err := dial(ctx, url)
	if err != nil {
		return err
	}
	defer ws.CloseNow()
	deadline := time.Now().Add(within)
	for round := 0; ; round++ {
		served := 0
		for k := 0; k < len(ids); k += 100 {
			chunk := ids[k:min(len(ids), k+100)]
			sub := fmt.Sprintf("w%d-%d", round, k)
			req, _ := (nostr.ReqEnvelope{SubscriptionID: sub, Filters: nostr.Filters{{IDs: chunk}}}).MarshalJSON()
			qctx, cancel := context.WithTimeout(ctx, time.Minute)
			n, err := reqUntilEOSE(qctx, ws, sub, req)
			cancel()
			if err != nil {
				return err
			}
			closeMsg, _ := nostr.CloseEnvelope(sub).MarshalJSON()
			if err := ws.Write(ctx, websocket.MessageText, closeMsg); err != nil {
				return err
			}
			served += n
		}
		if served == len(ids) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d announcements served %s after their push", served, len(ids), within)
		}
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
