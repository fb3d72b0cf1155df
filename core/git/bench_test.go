package git

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/internal/testkit"
)

// BenchmarkCloneVsNative clones a generated repository (3000 commits,
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
	testkit.GitRepo(b, dir, 3000, 2048)
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
