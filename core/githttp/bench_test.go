package githttp

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/internal/testkit"
)

// BenchmarkCloneVsNative clones a generated repository (3000 commits,
// ~25 MB pack) through the handler and, in the same run, with
// `git clone --no-local` straight from the bare repository. ratio is
// native time / handler time (1.0 = as fast as git's own pipe transport).
//
//	go test -run XXX -bench CloneVsNative -benchtime 3x ./core/githttp/
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
	testkit.GitRepo(b, dir, 3000, 16<<10)
	url := ts.srv.URL + git.RepoURLPath(owner, "bench")
	tmp := b.TempDir()
	var native, served time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		testkit.Git(b, "", "clone", "-q", "--bare", "--no-local", dir, filepath.Join(tmp, "n"+strconv.Itoa(i)))
		native += time.Since(start)
		start = time.Now()
		testkit.Git(b, "", "clone", "-q", "--bare", url, filepath.Join(tmp, "h"+strconv.Itoa(i)))
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
//	go test -run XXX -bench Push200MB -benchtime 1x ./core/githttp/
func BenchmarkPush200MBPeakRSS(b *testing.B) {
	ts := newTestServer(b, Options{})
	work := b.TempDir()
	testkit.Git(b, work, "init", "-q", "-b", "main")
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
	testkit.Git(b, work, "-c", "core.compression=0", "add", "-A")
	testkit.Git(b, work, "commit", "-q", "-m", "big")
	out, err := testkit.GitTry(work, "rev-parse", "HEAD")
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
		testkit.Git(b, work, "-c", "pack.compression=0", "push", "-q", ts.srv.URL+git.RepoURLPath(owner, "big"), "main")
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
