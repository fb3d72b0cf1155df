package main

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/nbd-wtf/go-nostr"
)

// gitEnv keeps the user's and the system's git configuration (credential
// helpers, URL rewrites) out of the measurement.
var gitEnv = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)

// gitTimeout bounds every git command the benchmark runs.
const gitTimeout = 10 * time.Minute

func gitRun(ctx context.Context, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// cloneRepo is the generated repository every clone fetches.
type cloneRepo struct {
	dir       string // bare repository
	tip       string // refs/heads/main
	commits   int
	packBytes int64
}

// makeCloneRepo writes a bare repository of commits commits over 200 source
// files of about 3 KB (each commit rewrites a few lines of one file, so the
// pack is mostly deltas, as a real project's is) with git fast-import, and
// repacks it with bitmaps as a served repository would be.
func makeCloneRepo(ctx context.Context, dir string, commits int) (*cloneRepo, error) {
	if _, err := gitRun(ctx, "", "init", "-q", "--bare", "-b", "main", dir); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "--git-dir="+dir, "fast-import", "--quiet")
	cmd.Env = gitEnv
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(7, uint64(commits)))
	files := make([][]string, 200)
	for f := range files {
		for range 60 {
			files[f] = append(files[f], codeLine(rng))
		}
	}
	w := bufio.NewWriterSize(stdin, 1<<20)
	for i := range commits {
		f := rng.IntN(len(files))
		for range 1 + rng.IntN(4) {
			files[f][rng.IntN(len(files[f]))] = codeLine(rng)
		}
		if rng.IntN(4) == 0 {
			files[f] = append(files[f], codeLine(rng))
		}
		content := strings.Join(files[f], "\n") + "\n"
		msg := sentence(rng)
		fmt.Fprintf(w, "commit refs/heads/main\ncommitter Bench <bench@example.com> %d +0000\ndata %d\n%s\n", 1_700_000_000+i*60, len(msg), msg)
		fmt.Fprintf(w, "M 100644 inline src/file%03d.go\ndata %d\n%s\n", f, len(content), content)
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("git fast-import: %v\n%s", err, stderr.String())
	}
	if _, err := gitRun(ctx, dir, "repack", "-adbq"); err != nil {
		return nil, err
	}
	tip, err := gitRun(ctx, dir, "rev-parse", "refs/heads/main")
	if err != nil {
		return nil, err
	}
	r := &cloneRepo{dir: dir, tip: strings.TrimSpace(tip), commits: commits}
	packs, _ := filepath.Glob(filepath.Join(dir, "objects", "pack", "*.pack"))
	for _, p := range packs {
		if st, err := os.Stat(p); err == nil {
			r.packBytes += st.Size()
		}
	}
	return r, nil
}

// cloneResult compares clones through a server with git's own transport.
type cloneResult struct {
	Clones int           `json:"clones"`
	Served time.Duration `json:"served_ns"` // all clones through the server
	Native time.Duration `json:"native_ns"` // all `git clone --no-local` of the same repository
}

func (r cloneResult) ratio() float64 { return r.Served.Seconds() / r.Native.Seconds() }

const cloneIdentifier = "bench-clone"

// hostOnGrasp makes grasp host the repository the way a user does: an
// announcement listing the server and a state naming the tip (both held in
// purgatory), then a push, which the state authorises. It returns the clone
// URL.
func hostOnGrasp(ctx context.Context, p *proc, repo *cloneRepo) (string, error) {
	return hostOnGraspAs(ctx, p, repo, cloneIdentifier)
}

// hostOnGraspAs is hostOnGrasp under the identifier d, by a fresh key.
func hostOnGraspAs(ctx context.Context, p *proc, repo *cloneRepo, d string) (string, error) {
	svc, err := nip34.ParseService(benchPublicURL)
	if err != nil {
		return "", err
	}
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	ann := &nostr.Event{Kind: nip34.KindAnnouncement, CreatedAt: nostr.Now(), Tags: nostr.Tags{
		{"d", d}, {"name", d},
		{"clone", svc.CloneURL(pk, d)}, {"relays", svc.RelayURL()},
	}}
	state := &nostr.Event{Kind: nip34.KindState, CreatedAt: nostr.Now(), Tags: nostr.Tags{
		{"d", d}, {"refs/heads/main", repo.tip}, {"HEAD", "ref: refs/heads/main"},
	}}
	ws, err := dial(ctx, p.wsURL())
	if err != nil {
		return "", err
	}
	defer ws.CloseNow()
	for _, e := range []*nostr.Event{ann, state} {
		if err := e.Sign(sk); err != nil {
			return "", err
		}
		if err := publishOne(ctx, ws, e); err != nil {
			return "", fmt.Errorf("publish kind %d: %w", e.Kind, err)
		}
	}
	url := p.httpURL() + git.RepoURLPath(nip34.Npub(pk), d)
	if _, err := gitRun(ctx, repo.dir, "push", "-q", url, "refs/heads/main:refs/heads/main"); err != nil {
		return "", err
	}
	return url, nil
}

// hostOnBaseline copies the repository under the baseline's git root,
// served by git http-backend.
func hostOnBaseline(ctx context.Context, p *proc, gitRoot string, repo *cloneRepo) (string, error) {
	rel := filepath.Join("bench", cloneIdentifier+".git")
	if err := os.MkdirAll(filepath.Join(gitRoot, "bench"), 0o755); err != nil {
		return "", err
	}
	if out, err := exec.CommandContext(ctx, "cp", "-a", repo.dir, filepath.Join(gitRoot, rel)).CombinedOutput(); err != nil {
		return "", fmt.Errorf("copy repository: %v\n%s", err, out)
	}
	return p.httpURL() + "/" + filepath.ToSlash(rel), nil
}

// runClones clones url and (right before each, so load drifts hit both
// alike) the bare repository with `git clone --no-local`, n times each.
func runClones(ctx context.Context, url string, repo *cloneRepo, n int, scratch string) (cloneResult, error) {
	res := cloneResult{Clones: n}
	for i := range n {
		native := filepath.Join(scratch, "native-"+strconv.Itoa(i))
		served := filepath.Join(scratch, "served-"+strconv.Itoa(i))
		start := time.Now()
		if _, err := gitRun(ctx, "", "clone", "-q", "--bare", "--no-local", repo.dir, native); err != nil {
			return res, err
		}
		res.Native += time.Since(start)
		start = time.Now()
		if _, err := gitRun(ctx, "", "clone", "-q", "--bare", url, served); err != nil {
			return res, err
		}
		res.Served += time.Since(start)
		got, err := gitRun(ctx, served, "rev-parse", "refs/heads/main")
		if err != nil {
			return res, err
		}
		if strings.TrimSpace(got) != repo.tip {
			return res, fmt.Errorf("clone through %s has main at %s, want %s", url, strings.TrimSpace(got), repo.tip)
		}
		_ = os.RemoveAll(native)
		_ = os.RemoveAll(served)
	}
	return res, nil
}

// publishOne sends one event and waits for its OK true.
func publishOne(ctx context.Context, ws *websocket.Conn, e *nostr.Event) error {
	frame, err := e.MarshalJSON()
	if err != nil {
		return err
	}
	if err := ws.Write(ctx, websocket.MessageText, append(append([]byte(`["EVENT",`), frame...), ']')); err != nil {
		return err
	}
	return expectOK(ctx, ws, e.ID)
}
