package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
)

// The GRASP-06 /prs/ flood of the second audit (../shared/reference/
// security-audit-2026-11b.md, F20): from one address, each round is a PR
// event by a fresh key naming /prs/<its npub>/<d>.git, for a repository
// hosted nowhere, then a push of fresh random data to refs/nostr/<its id>.
// Before the fix a served PR's data counted toward nothing, so every round
// was kept; the report says how many rounds were kept and refused and what
// /prs/ holds on disk afterwards, all of it this one client's.

// prsOpts size the /prs/ flood.
type prsOpts struct {
	rounds  int // PR event + push rounds
	roundMB int // MiB of random data per push
	// ipMB is written as grasp.prs_max_mb_per_ip when > 0 (a bound the
	// flood reaches in a few rounds); 0 writes no such key, which a build
	// from before the fix needs (its config is strict).
	ipMB int
}

func (o *prsOpts) register(fs *flag.FlagSet) {
	fs.IntVar(&o.rounds, "prs-rounds", 12, "F20: rounds of a PR event from a fresh key and a /prs/ push")
	fs.IntVar(&o.roundMB, "prs-round-mb", 8, "F20: MiB of random data pushed per round (the audit's 8)")
	fs.IntVar(&o.ipMB, "prs-ip-mb", 64, "F20: grasp.prs_max_mb_per_ip for the run; 0 leaves the key out (for -grasp-bin builds from before it)")
}

// serverTOML is what the F20 server's configuration adds: GRASP-06 on, and
// the per-address bound when asked for.
func (o *prsOpts) serverTOML() string {
	s := "\n[grasp]\ngrasp06 = true\n"
	if o.ipMB > 0 {
		s += "prs_max_mb_per_ip = " + strconv.Itoa(o.ipMB) + "\n"
	}
	return s
}

// attackPRs (F20) runs the rounds from attackerAddr and reports what was
// kept and what /prs/ holds on disk.
func attackPRs(ctx context.Context, p *proc, dir string, o abuseOpts) (string, error) {
	svc, err := nip34.ParseService(benchPublicURL)
	if err != nil {
		return "", err
	}
	ws, _, err := dialFrom(ctx, p.wsURL(), o.attackerAddr)
	if err != nil {
		return "", err
	}
	defer ws.CloseNow()
	work, err := os.MkdirTemp(dir, "prs-flood-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	kept, refused := 0, 0
	var why string
	for i := range o.prs.rounds {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		d := fmt.Sprintf("flood%d", i)
		w := filepath.Join(work, d)
		tip, err := randomCommit(ctx, w, o.prs.roundMB<<20)
		if err != nil {
			return "", err
		}
		sk := nostr.GeneratePrivateKey()
		pk, _ := nostr.GetPublicKey(sk)
		owner, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey())
		pr := &nostr.Event{Kind: nip34.KindPR, CreatedAt: nostr.Now(), Tags: nostr.Tags{
			{"a", "30617:" + owner + ":" + d}, {"c", tip}, {"clone", svc.PRsURL(pk, d)}, {"subject", d},
		}}
		if err := pr.Sign(sk); err != nil {
			return "", err
		}
		if err := publishOne(ctx, ws, pr); err != nil {
			return "", fmt.Errorf("round %d: publish the PR: %w", i, err)
		}
		url := p.httpURL() + nip34.PRsRepo(pk, d).URLPath()
		out, err := gitRun(ctx, w, "push", "-q", url, tip+":refs/nostr/"+pr.ID)
		switch {
		case err == nil:
			kept++
		case strings.Contains(out, "rate-limited:"):
			refused++
			if why == "" {
				why = firstLine(out, "rate-limited:")
			}
		default:
			return "", fmt.Errorf("round %d: push: %w", i, err)
		}
		_ = os.RemoveAll(w)
	}
	onDisk := treeBytes(filepath.Join(dir, "data", "git", "prs"))
	s := fmt.Sprintf("%d rounds of a PR and a %d MiB /prs/ push from one address: %d kept, %d refused; /prs/ holds %.1f MiB on disk for this one client",
		o.prs.rounds, o.prs.roundMB, kept, refused, float64(onDisk)/(1<<20))
	if why != "" {
		s += "; refused with " + strconv.Quote(why)
	}
	return s, nil
}

// randomCommit makes a repository at dir whose one commit holds n random
// bytes, and returns the commit.
func randomCommit(ctx context.Context, dir string, n int) (string, error) {
	if _, err := gitRun(ctx, "", "init", "-q", dir); err != nil {
		return "", err
	}
	data := make([]byte, n)
	_, _ = rand.Read(data)
	if err := os.WriteFile(filepath.Join(dir, "data.bin"), data, 0o644); err != nil {
		return "", err
	}
	if _, err := gitRun(ctx, dir, "add", "data.bin"); err != nil {
		return "", err
	}
	if _, err := gitRun(ctx, dir, "-c", "user.name=Bench", "-c", "user.email=bench@example.com", "commit", "-q", "-m", "flood"); err != nil {
		return "", err
	}
	out, err := gitRun(ctx, dir, "rev-parse", "HEAD")
	return strings.TrimSpace(out), err
}

// treeBytes is what the files under dir take (0 when it does not exist).
func treeBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if info, err := d.Info(); err == nil {
			n += info.Size()
		}
		return nil
	})
	return n
}

// firstLine is the first line of out that contains sub, from sub on.
func firstLine(out, sub string) string {
	for _, l := range strings.Split(out, "\n") {
		if i := strings.Index(l, sub); i >= 0 {
			return strings.TrimSpace(l[i:])
		}
	}
	return ""
}
