package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// The page attacks of the second audit (../shared/reference/
// security-audit-2026-11b.md): F30, views of a Markdown file whose shape
// makes the parser's cost grow with the square of its size, by clients that
// leave after a moment; F29, many parallel views of a pushed directory of
// tens of thousands of entries. Both repositories are hosted once, while
// seeding, the way a user hosts one (announcement, state, push).

// pageOpts size the page attacks.
type pageOpts struct {
	mdKB        int           // F30: size of the Markdown file of `>`
	mdViews     int           // F30: views, all at once
	mdLeave     time.Duration // F30: each client leaves after this
	treeEntries int           // F29: entries of the pushed directory
	treeViews   int           // F29: parallel views
	viewTimeout time.Duration // F29: a view not answered by then counts as failed
	targets     *pageTargets  // set once the repositories are hosted
}

func (o *pageOpts) register(fs *flag.FlagSet) {
	fs.IntVar(&o.mdKB, "md-kb", 128, "F30: KiB of `>` in the Markdown file viewed (the audit's 128)")
	fs.IntVar(&o.mdViews, "md-views", 6, "F30: views of the Markdown file, all at once")
	fs.DurationVar(&o.mdLeave, "md-leave", 2*time.Second, "F30: each viewing client leaves after this")
	fs.IntVar(&o.treeEntries, "tree-entries", 45000, "F29: entries of the pushed directory (the audit's 45,000)")
	fs.IntVar(&o.treeViews, "tree-views", 48, "F29: parallel views of the directory")
	fs.DurationVar(&o.viewTimeout, "view-timeout", time.Minute, "F29: a view not answered within this counts as failed")
}

func (o *pageOpts) wanted(attacks []string) bool {
	return slices.Contains(attacks, "F29") || slices.Contains(attacks, "F30")
}

// pageTargets are the URL paths the page attacks view.
type pageTargets struct {
	markdown string // the file view of the Markdown file
	tree     string // the tree view of the wide directory
}

// seedPages hosts the two repositories on the running server p: one whose
// quotes.md is o.mdKB KiB of `>`, one whose wide/ holds o.treeEntries
// names of one blob (a push of about 121 KB at 45,000).
func seedPages(ctx context.Context, p *proc, dir string, o pageOpts) (*pageTargets, error) {
	md, err := treeRepo(ctx, filepath.Join(dir, "pages-md.git"), map[string]string{
		"README.md": "# Markdown\n", "quotes.md": strings.Repeat(">", o.mdKB<<10)}, "", 0)
	if err != nil {
		return nil, err
	}
	mdURL, err := hostOnGraspAs(ctx, p, md, "bench-markdown")
	if err != nil {
		return nil, fmt.Errorf("host the Markdown repository: %w", err)
	}
	wide, err := treeRepo(ctx, filepath.Join(dir, "pages-wide.git"), map[string]string{"README.md": "# Wide\n"}, "wide", o.treeEntries)
	if err != nil {
		return nil, err
	}
	wideURL, err := hostOnGraspAs(ctx, p, wide, "bench-wide")
	if err != nil {
		return nil, fmt.Errorf("host the wide repository: %w", err)
	}
	path := func(u string) string { return strings.TrimPrefix(u, p.httpURL()) }
	return &pageTargets{markdown: path(mdURL) + "/blob/main/quotes.md", tree: path(wideURL) + "/tree/main/wide"}, nil
}

// treeRepo writes a bare repository at dir whose one commit on main holds
// files and, if n > 0, a directory wideDir of n names of one blob.
func treeRepo(ctx context.Context, dir string, files map[string]string, wideDir string, n int) (*cloneRepo, error) {
	if _, err := gitRun(ctx, "", "init", "-q", "--bare", "-b", "main", dir); err != nil {
		return nil, err
	}
	in := func(stdin string, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", append([]string{"--git-dir=" + dir}, args...)...)
		cmd.Env = append(gitEnv, "GIT_AUTHOR_NAME=Bench", "GIT_AUTHOR_EMAIL=bench@example.com",
			"GIT_COMMITTER_NAME=Bench", "GIT_COMMITTER_EMAIL=bench@example.com")
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("git %s: %w", args[0], err)
		}
		return strings.TrimSpace(string(out)), nil
	}
	var root strings.Builder
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		oid, err := in(files[name], "hash-object", "-w", "--stdin")
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&root, "100644 blob %s\t%s\n", oid, name)
	}
	if n > 0 {
		blob, err := in("one blob under many names\n", "hash-object", "-w", "--stdin")
		if err != nil {
			return nil, err
		}
		var list strings.Builder
		for i := range n {
			fmt.Fprintf(&list, "100644 blob %s\tentry%06d.txt\n", blob, i)
		}
		sub, err := in(list.String(), "mktree")
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&root, "040000 tree %s\t%s\n", sub, wideDir)
	}
	tree, err := in(root.String(), "mktree")
	if err != nil {
		return nil, err
	}
	tip, err := in("pages benchmark\n", "commit-tree", tree)
	if err != nil {
		return nil, err
	}
	if _, err := in("", "update-ref", "refs/heads/main", tip); err != nil {
		return nil, err
	}
	return &cloneRepo{dir: dir, tip: tip, commits: 1}, nil
}

// viewFrom GETs path from the local address, giving up when ctx ends, and
// returns the status and the size of the page (0 and the error on none).
func viewFrom(ctx context.Context, base, path, local string) (int, int64, error) {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	hc := &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, n, err
}

// attackMarkdown (F30) views the Markdown file mdViews times at once, each
// client leaving after mdLeave, then waits for the server's CPU to go
// quiet (at most hold) and reports the CPU it spent per view.
func attackMarkdown(ctx context.Context, p *proc, o abuseOpts) (string, error) {
	before, err := sampleProc(p.pid())
	if err != nil {
		return "", err
	}
	var mu sync.Mutex
	answered, left := 0, 0
	var plain bool
	var wg sync.WaitGroup
	for range o.page.mdViews {
		wg.Go(func() {
			vctx, cancel := context.WithTimeout(ctx, o.page.mdLeave)
			defer cancel()
			d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(o.attackerAddr)}}
			hc := &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
			req, _ := http.NewRequestWithContext(vctx, http.MethodGet, p.httpURL()+o.page.targets.markdown, nil)
			resp, err := hc.Do(req)
			var body []byte
			if err == nil {
				body, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				left++
				return
			}
			answered++
			plain = plain || strings.Contains(string(body), "Shown as plain text")
		})
	}
	wg.Wait()
	after := quietCPU(ctx, p.pid(), o.hold)
	spent := (after - before.cpu).Seconds()
	shown := "rendered"
	if plain {
		shown = "plain text"
	}
	return fmt.Sprintf("%d views: %d answered (%s), %d left after %s; server CPU %.2f s, %.3f s per view",
		o.page.mdViews, answered, shown, left, o.page.mdLeave, spent, spent/float64(o.page.mdViews)), nil
}

// quietCPU waits until the process's CPU (children included) grows by less
// than 20 ms in a second, or for at most within, and returns it.
func quietCPU(ctx context.Context, pid int, within time.Duration) time.Duration {
	deadline := time.Now().Add(within)
	last, _ := sampleProc(pid)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return last.cpu
		case <-time.After(time.Second):
		}
		s, err := sampleProc(pid)
		if err != nil {
			return last.cpu
		}
		quiet := s.cpu-last.cpu < 20*time.Millisecond
		last = s
		if quiet {
			break
		}
	}
	return last.cpu
}

// attackBigTree (F29) views the wide directory treeViews times at once and
// reports what was answered, how large a page was and the slowest answer.
func attackBigTree(ctx context.Context, p *proc, o abuseOpts) (string, error) {
	type view struct {
		status int
		bytes  int64
		took   time.Duration
	}
	views := make([]view, o.page.treeViews)
	var wg sync.WaitGroup
	for i := range views {
		wg.Go(func() {
			vctx, cancel := context.WithTimeout(ctx, o.page.viewTimeout)
			defer cancel()
			start := time.Now()
			status, n, err := viewFrom(vctx, p.httpURL(), o.page.targets.tree, o.attackerAddr)
			if err != nil {
				status = 0
			}
			views[i] = view{status, n, time.Since(start)}
		})
	}
	wg.Wait()
	ok, failed := 0, 0
	var page int64
	var slowest time.Duration
	for _, v := range views {
		if v.status != http.StatusOK {
			failed++
			continue
		}
		ok++
		page = max(page, v.bytes)
		slowest = max(slowest, v.took)
	}
	return fmt.Sprintf("%d parallel views of %d entries: %d answered 200 (a page of %.0f KB), slowest %.1f s; %d failed or not answered in %s",
		len(views), o.page.treeEntries, ok, float64(page)/1000, slowest.Seconds(), failed, o.page.viewTimeout), nil
}
