package server_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/archive"
	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/server"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// Bounds of BenchmarkG05_ArchiveFollowsTheNetwork: the network of
// September 2026 had 2,530 announcements by 743 keys (field-2026-09.md
// §1); a subset has a state and git data on a local git server reached
// under two host names (two throttle domains).
const (
	archBenchKeys        = 500
	archBenchReposPerKey = 5  // 2,500 announcements
	archBenchWithData    = 80 // of them with a state and git data, half per domain
)

// fetchLog records the start of every git fetch (GET info/refs of
// upload-pack) a local git server sees, by the host name it was asked as.
type fetchLog struct {
	mu    sync.Mutex
	byDom map[string][]time.Time
}

func (f *fetchLog) add(host string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.byDom[host] = append(f.byDom[host], time.Now())
}

// byDomSnapshot counts the fetches of each domain so far.
func (f *fetchLog) byDomSnapshot() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for d, ts := range f.byDom {
		out[d] = len(ts)
	}
	return out
}

// maxPerWindow is the most fetches of one domain seen within any window.
func (f *fetchLog) maxPerWindow(window time.Duration) (map[string]int, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out, total := map[string]int{}, 0
	for dom, ts := range f.byDom {
		s := slices.Clone(ts)
		slices.SortFunc(s, func(a, b time.Time) int { return a.Compare(b) })
		best, j := 0, 0
		for i := range s {
			for s[i].Sub(s[j]) >= window {
				j++
			}
			best = max(best, i-j+1)
		}
		out[dom] = best
		total += len(s)
	}
	return out, total
}

// benchGitServer is git http-backend over root, logging fetches.
func benchGitServer(b *testing.B, root string, log *fetchLog) string {
	b.Helper()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		b.Fatal(err)
	}
	h := &cgi.Handler{Path: gitBin, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1"}, Stderr: io.Discard}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/info/refs") && r.URL.Query().Get("service") == "git-upload-pack" {
			host, _, _ := net.SplitHostPort(r.Host)
			log.add(host)
		}
		h.ServeHTTP(w, r)
	}))
	b.Cleanup(srv.Close)
	return srv.URL
}

func benchGit(b *testing.B, dir string, args ...string) string {
	b.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@example.com",
		"GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// BenchmarkG05_ArchiveFollowsTheNetwork: an archive_all server following
// 2,500 generated announcements on a local upstream relay (its bootstrap
// relay), archWithData of them with a state whose git data the hunter
// fetches from a local git server under two host names. Reports the time
// until every announcement is archived and the data-bearing ones mirrored,
// the server's live heap then (after GC, over the heap before it started:
// sync index, hunter queue, purgatory, caches), and the most fetches one
// domain saw within a minute, which must not exceed the throttle
// (per_minute; the window is 58 s so that the start-up jitter of a git
// process cannot make a respected limit look broken). One run whatever
// b.N; bounded by testwait's limit.
func BenchmarkG05_ArchiveFollowsTheNetwork(b *testing.B) {
	runArchiveFollows(b) // once: the run is minutes long, b.N stays 1
}

func runArchiveFollows(b *testing.B) {
	b.StopTimer()
	// the foreign git server, with one commit in every data-bearing repo
	root := b.TempDir()
	work := filepath.Join(root, "work")
	benchGit(b, root, "init", "-q", "-b", "main", work)
	benchGit(b, work, "commit", "-q", "--allow-empty", "-m", "archived")
	tip := benchGit(b, work, "rev-parse", "HEAD")
	flog := &fetchLog{byDom: map[string][]time.Time{}}
	gitURL := benchGitServer(b, root, flog)
	gu, _ := url.Parse(gitURL)
	domains := []string{"http://127.0.0.1:" + gu.Port(), "http://localhost:" + gu.Port()}

	upstream := newKhatruPeer(b, khatruOpts{negentropy: true})
	var evs []*nostr.Event
	n := 0
	for k := 0; k < archBenchKeys; k++ {
		sk := nostr.GeneratePrivateKey()
		for r := 0; r < archBenchReposPerKey; r++ {
			d := fmt.Sprintf("repo-%d-%d", k, r) // purgatory holds at most 20 per identifier
			clone := fmt.Sprintf("https://git%d.example.invalid/%d/%s.git", k%50, k, d)
			withData := n < archBenchWithData
			if withData {
				name := fmt.Sprintf("r%d", n)
				bare := filepath.Join(root, name+".git")
				benchGit(b, root, "init", "-q", "--bare", bare)
				benchGit(b, work, "push", "-q", bare, "main:refs/heads/main")
				clone = domains[n%2] + "/" + name + ".git"
			}
			ann := &nostr.Event{Kind: 30617, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"d", d}, {"clone", clone}, {"relays", upstream.url}}}
			if err := ann.Sign(sk); err != nil {
				b.Fatal(err)
			}
			evs = append(evs, ann)
			if withData {
				st := &nostr.Event{Kind: 30618, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"d", d}, {"refs/heads/main", tip}, {"HEAD", "ref: refs/heads/main"}}}
				if err := st.Sign(sk); err != nil {
					b.Fatal(err)
				}
				evs = append(evs, st)
			}
			n++
		}
	}
	upstream.put(evs...)
	total := n

	cfg := config.Default()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cfg.Server.Listen = fmt.Sprintf("127.0.0.1:%d", port)
	cfg.Server.PublicURL = fmt.Sprintf("http://127.0.0.1:%d", port)
	cfg.Server.DataDir = b.TempDir()
	cfg.Metrics.Enabled = false
	cfg.Grasp.ArchiveAll = true
	cfg.Sync.BootstrapRelays = []string{upstream.url}
	cfg.Sync.ConnectPrivateAddresses = true
	cfg.Purgatory.FetchPrivateAddresses = true
	if err := cfg.Validate(); err != nil {
		b.Fatal(err)
	}
	perMinute := cfg.Throttle.PerMinute

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	srv, reg, err := newServer(cfg, server.Build{Version: "bench"}, server.Extensions{}, env.Env{})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		cancel()
		srv.Wait()
	}()
	start := time.Now()
	b.StartTimer()
	if err := srv.Start(ctx); err != nil {
		b.Fatal(err)
	}
	var awaiting, mirrored float64
	polls := 0
	testwait.For(b, "every announcement archived and the data-bearing ones mirrored", func() bool {
		time.Sleep(time.Second)
		if err := srv.Hosting().CountArchived(ctx); err != nil {
			return false
		}
		awaiting = metricIn(b, reg, "grasp_archive_repos", archive.StateAwaiting)
		mirrored = metricIn(b, reg, "grasp_archive_repos", archive.StateMirrored)
		if polls++; polls%10 == 0 {
			fetchesSoFar := 0
			for _, ts := range flog.byDomSnapshot() {
				fetchesSoFar += ts
			}
			b.Logf("%s: %v awaiting, %v mirrored, %d fetches %v, %v held in purgatory, hunt queue %v, attempts %v ok %v, throttled %v, naughty %v", time.Since(start).Round(time.Second), awaiting, mirrored, fetchesSoFar, flog.byDomSnapshot(),
				metricIn(b, reg, "grasp_purgatory_entries", ""), metricIn(b, reg, "grasp_hunt_queue_repos", ""), metricIn(b, reg, "grasp_hunt_fetch_attempts_total", ""),
				metricIn(b, reg, "grasp_hunt_fetch_attempts_total", "ok"), metricIn(b, reg, "grasp_hunt_throttled_waits_total", ""), metricIn(b, reg, "grasp_hunt_naughty_hosts", ""))
		}
		return int(mirrored) == archBenchWithData && int(awaiting+mirrored) == total
	})
	converged := time.Since(start)
	b.StopTimer()

	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	perDom, fetches := flog.maxPerWindow(58 * time.Second)
	worst := 0
	for dom, m := range perDom {
		if m > perMinute {
			b.Fatalf("domain %s saw %d fetches within a minute; the throttle allows %d", dom, m, perMinute)
		}
		worst = max(worst, m)
	}
	if len(perDom) != 2 {
		b.Fatalf("fetches by domain %v: want both host names used", perDom)
	}
	b.ReportMetric(converged.Seconds(), "converge_s")
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)), "heap_bytes")
	b.ReportMetric(float64(worst), "max_fetches_per_domain_minute")
	b.ReportMetric(float64(perMinute), "throttle_per_minute")
	b.ReportMetric(float64(fetches), "fetches")
	b.ReportMetric(float64(total), "announcements")
	b.ReportMetric(mirrored, "mirrored")
}
