package git

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/nip34"
)

// genRepo writes a bare repository with commits commits of fileBytes of
// hex text each (tens of MB for thousands of commits) with git fast-import,
// repacked with bitmaps as a served repository would be.
func genRepo(b *testing.B, dir string, commits, fileBytes int) {
	b.Helper()
	gitRunB(b, "", "init", "-q", "--bare", "-b", "main", dir)
	cmd := exec.Command("git", "--git-dir="+dir, "fast-import", "--quiet")
	cmd.Env = clientEnv()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(stdin, 1<<20)
	raw := make([]byte, fileBytes/2)
	for i := 0; i < commits; i++ {
		_, _ = rand.Read(raw)
		content := hex.EncodeToString(raw)
		msg := fmt.Sprintf("commit %d", i)
		fmt.Fprintf(w, "commit refs/heads/main\ncommitter T <t@example.com> %d +0000\ndata %d\n%s\n", 1700000000+i, len(msg), msg)
		fmt.Fprintf(w, "M 100644 inline file%03d.txt\ndata %d\n%s\n", i%200, len(content), content)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		b.Fatalf("fast-import: %v", err)
	}
	gitRunB(b, dir, "repack", "-adbq")
}

func gitRunB(b *testing.B, dir string, args ...string) {
	b.Helper()
	if out, err := gitTry(dir, args...); err != nil {
		b.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// BenchmarkCloneVsNative clones a generated repository (3000 commits,
// ~25 MB pack) through the handler and, in the same run, with
// `git clone --no-local` straight from the bare repository. ratio is
// native time / handler time (1.0 = as fast as git's own pipe transport).
//
//	go test -run XXX -bench CloneVsNative -benchtime 3x ./core/git/
func BenchmarkCloneVsNative(b *testing.B) {
	ts := newTestServer(b, Options{})
	owner := randomNpub(b)
	dir, err := ts.repos.Path(ref(owner, "bench"))
	if err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		b.Fatal(err)
	}
	genRepo(b, dir, 3000, 16<<10)
	url := ts.srv.URL + RepoURLPath(owner, "bench")
	tmp := b.TempDir()
	var native, served time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		gitRunB(b, "", "clone", "-q", "--bare", "--no-local", dir, filepath.Join(tmp, "n"+strconv.Itoa(i)))
		native += time.Since(start)
		start = time.Now()
		gitRunB(b, "", "clone", "-q", "--bare", url, filepath.Join(tmp, "h"+strconv.Itoa(i)))
		served += time.Since(start)
		_ = os.RemoveAll(filepath.Join(tmp, "n"+strconv.Itoa(i)))
		_ = os.RemoveAll(filepath.Join(tmp, "h"+strconv.Itoa(i)))
	}
	b.ReportMetric(native.Seconds()/served.Seconds(), "ratio")
	b.ReportMetric(served.Seconds()/float64(b.N), "handler-s/clone")
	b.ReportMetric(native.Seconds()/float64(b.N), "native-s/clone")
	fi, _ := filepath.Glob(filepath.Join(dir, "objects", "pack", "*.pack"))
	if len(fi) == 1 {
		if st, err := os.Stat(fi[0]); err == nil {
			b.ReportMetric(float64(st.Size())/(1<<20), "pack-MB")
		}
	}
}

// procStatusKB reads a field such as VmHWM from /proc/self/status.
func procStatusKB(b *testing.B, field string) float64 {
	b.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb
		}
	}
	b.Fatalf("%s not in /proc/self/status", field)
	return 0
}

// BenchmarkPush200MBPeakRSS pushes 200 MB of incompressible data through
// the handler served in this process and reports this process's peak RSS
// during the push (the high-water mark is reset just before). The goal is
// < 100 MB: the body is streamed into git, never buffered.
//
//	go test -run XXX -bench Push200MB -benchtime 1x ./core/git/
func BenchmarkPush200MBPeakRSS(b *testing.B) {
	ts := newTestServer(b, Options{})
	work := b.TempDir()
	gitRunB(b, work, "init", "-q", "-b", "main")
	chunk := make([]byte, 1<<20)
	for f := 0; f < 4; f++ {
		fh, err := os.Create(filepath.Join(work, fmt.Sprintf("blob%d.bin", f)))
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < 50; i++ {
			_, _ = rand.Read(chunk)
			_, _ = fh.Write(chunk)
		}
		fh.Close()
	}
	gitRunB(b, work, "-c", "core.compression=0", "add", "-A")
	gitRunB(b, work, "commit", "-q", "-m", "big")
	out, err := gitTry(work, "rev-parse", "HEAD")
	if err != nil {
		b.Fatal(err)
	}
	x := strings.TrimSpace(out)
	b.ResetTimer()
	var peak, before float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		owner := randomNpub(b)
		if err := ts.repos.Create(context.Background(), ref(owner, "big")); err != nil {
			b.Fatal(err)
		}
		ts.auth.addState(owner, "big", state("s", 1, "", "refs/heads/main", x))
		if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
			b.Fatalf("reset peak RSS: %v", err)
		}
		before = procStatusKB(b, "VmHWM")
		b.StartTimer()
		gitRunB(b, work, "-c", "pack.compression=0", "push", "-q", ts.srv.URL+RepoURLPath(owner, "big"), "main")
		b.StopTimer()
		peak = max(peak, procStatusKB(b, "VmHWM"))
		refs, err := ts.repos.Refs(context.Background(), ref(owner, "big"))
		if err != nil || refs["refs/heads/main"] != x {
			b.Fatalf("push did not land: %v %v", refs, err)
		}
	}
	b.ReportMetric(peak/1024, "peak-rss-MB")
	b.ReportMetric(before/1024, "rss-before-MB")
	b.SetBytes(200 << 20)
}

// BenchmarkCreate measures Repos.Create, what an announcement pays before
// its first push (audit F13), as a ratio to `git init --bare --template=`
// (what it ran before) in the same run, with the disk it takes per
// repository:
//
//	go test -run XXX -bench Create -benchtime 2000x ./core/git/
func BenchmarkCreate(b *testing.B) {
	root := filepath.Join(b.TempDir(), "git")
	repos, err := NewRepos(RepoOptions{Root: root}, env.Env{})
	if err != nil {
		b.Fatal(err)
	}
	owner := randomNpub(b)
	ctx := context.Background()
	const baseN = 50
	base := filepath.Join(b.TempDir(), "init")
	start := time.Now()
	for i := 0; i < baseN; i++ {
		if _, err := repos.run(ctx, "", nil, "init", "--bare", "--quiet", "--template=", "--initial-branch=main", filepath.Join(base, strconv.Itoa(i))); err != nil {
			b.Fatal(err)
		}
	}
	perInit := time.Since(start) / baseN
	b.ResetTimer()
	start = time.Now()
	for i := 0; i < b.N; i++ {
		if err := repos.Create(ctx, ref(owner, "r"+strconv.Itoa(i))); err != nil {
			b.Fatal(err)
		}
	}
	per := time.Since(start) / time.Duration(b.N)
	b.StopTimer()
	b.ReportMetric(float64(per)/float64(perInit), "x-git-init")
	inodes, kib := diskUse(b, filepath.Join(root, owner))
	b.ReportMetric(float64(inodes-1)/float64(b.N), "inodes/repo")
	b.ReportMetric(float64(kib)/float64(b.N), "KiB/repo")
	inodes, kib = diskUse(b, base)
	b.ReportMetric(float64(inodes-1)/baseN, "git-init-inodes/repo")
	b.ReportMetric(float64(kib)/baseN, "git-init-KiB/repo")
}

// diskUse counts the inodes under dir and the KiB they occupy on disk.
func diskUse(b *testing.B, dir string) (inodes int, kib int64) {
	b.Helper()
	err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		inodes++
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			kib += st.Blocks / 2
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return inodes, kib
}

// dirBytes sums the sizes of the regular files under dir.
func dirBytes(b *testing.B, dir string) int64 {
	var n int64
	err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkPropagateAlternatesVsCopy propagates a generated repository
// (3000 commits, ~6 MB pack) from its owner's repo to 3 maintainers' empty
// repos, by borrowing (alternates) and by copying (local fetch), in the
// same run. It reports seconds per propagation to the 3 repos and the
// bytes the 3 targets' objects take on disk, for each mode (F01: the
// package doc's decision rests on these).
//
//	go test -run XXX -bench PropagateAlternatesVsCopy -benchtime 3x ./core/git/
func BenchmarkPropagateAlternatesVsCopy(b *testing.B) {
	repos, err := NewRepos(RepoOptions{Root: b.TempDir()}, env.Env{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	src := nip34RepoFor(b, "bench")
	dir, _ := repos.Path(src)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		b.Fatal(err)
	}
	genRepo(b, dir, 3000, 2048)
	head, err := repos.Refs(ctx, src)
	if err != nil {
		b.Fatal(err)
	}
	refs := map[string]string{"refs/heads/main": head["refs/heads/main"]}
	var secs [2]time.Duration
	var bytes [2]int64
	for i := 0; i < b.N; i++ {
		for mode, borrow := range []bool{true, false} {
			var to []Target
			for k := 0; k < 3; k++ {
				t := nip34RepoFor(b, "bench")
				if err := repos.Create(ctx, t); err != nil {
					b.Fatal(err)
				}
				to = append(to, Target{Repo: t, Borrow: borrow})
			}
			start := time.Now()
			if err := repos.Propagate(ctx, src, to, refs, "refs/heads/main"); err != nil {
				b.Fatal(err)
			}
			secs[mode] += time.Since(start)
			for _, t := range to {
				p, _ := repos.Path(t.Repo)
				bytes[mode] += dirBytes(b, filepath.Join(p, "objects"))
				if err := repos.Delete(ctx, t.Repo); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	n := float64(b.N)
	b.ReportMetric(secs[0].Seconds()/n, "alternates_s")
	b.ReportMetric(secs[1].Seconds()/n, "copy_s")
	b.ReportMetric(float64(bytes[0])/n, "alternates_bytes")
	b.ReportMetric(float64(bytes[1])/n, "copy_bytes")
	b.ReportMetric(float64(dirBytes(b, filepath.Join(dir, "objects"))), "source_bytes")
}

func nip34RepoFor(b *testing.B, id string) nip34.RepoRef {
	var raw [32]byte
	_, _ = rand.Read(raw[:])
	return nip34.RepoRef{Pubkey: hex.EncodeToString(raw[:]), Identifier: id}
}
