package pages

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io/fs"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
)

// largeRepo fills a bare repository with commits commits, each growing one
// of files text files and rewriting a 6 KiB incompressible asset (tens of
// MB of history), through git fast-import, and returns the last commit.
func largeRepo(b *testing.B, dir string, commits, files int) string {
	b.Helper()
	cmd := exec.Command("git", "--git-dir="+dir, "fast-import", "--quiet")
	in, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(in, 1<<20)
	rng := rand.New(rand.NewSource(1))
	content := make([][]string, files)
	for i := 1; i <= commits; i++ {
		f := rng.Intn(files)
		content[f] = append(content[f], fmt.Sprintf("line %d of commit %d: %x\n", len(content[f]), i, rng.Int63()))
		if len(content[f]) > 800 {
			content[f] = content[f][400:]
		}
		data := strings.Join(content[f], "")
		fmt.Fprintf(w, "commit refs/heads/main\nmark :%d\ncommitter Bench <b@example.org> %d +0000\ndata <<EOM\nchange %d to file %d\nEOM\n", i, 1_700_000_000+i, i, f)
		if i > 1 {
			fmt.Fprintf(w, "from :%d\n", i-1)
		} else {
			readme := "# Large repository\n\nGenerated for the page benchmark.\n\n" + strings.Repeat("- an item of a long list\n", 200)
			fmt.Fprintf(w, "M 100644 inline README.md\ndata %d\n%s\n", len(readme), readme)
		}
		fmt.Fprintf(w, "M 100644 inline src/dir%02d/file%03d.txt\ndata %d\n%s\n", f%20, f, len(data), data)
		// and 6 KiB that neither compresses nor deltas, so that history
		// weighs tens of MB as in the issue
		noise := make([]byte, 4608)
		rng.Read(noise)
		asset := base64.StdEncoding.EncodeToString(noise)
		fmt.Fprintf(w, "M 100644 inline assets/a%02d/blob%03d.txt\ndata %d\n%s\n", i%50, i%500, len(asset), asset)
	}
	w.Flush()
	in.Close()
	if err := cmd.Wait(); err != nil {
		b.Fatal(err)
	}
	out, err := exec.Command("git", "--git-dir="+dir, "rev-parse", "main").Output()
	if err != nil {
		b.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// BenchmarkPages_LargeRepo renders the pages of a repository with 5000
// commits: "first" with an empty cache (every view reads git), "cached"
// after one view (issue 16 part 1: well under 100 ms after the first view).
//
//	go test ./core/pages -run '^$' -bench LargeRepo -benchtime 20x
func BenchmarkPages_LargeRepo(b *testing.B) {
	r := newRig(b, "https://git.example.org", nil)
	owner := newKey(b)
	r.announce(owner, "large", 100, nil)
	repo := nip34.RepoRef{Pubkey: owner.PK, Identifier: "large"}
	if err := r.repos.Create(b.Context(), repo); err != nil {
		b.Fatal(err)
	}
	dir, _ := r.repos.Path(repo)
	tip := largeRepo(b, dir, 5000, 400)
	var packed int64
	filepath.WalkDir(filepath.Join(dir, "objects"), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if st, err := d.Info(); err == nil {
				packed += st.Size()
			}
		}
		return nil
	})
	b.Logf("generated repository: 5000 commits, %.1f MiB of objects on disk", float64(packed)/(1<<20))
	base := git.RepoURLPath(repo.Npub(), "large")
	views := []struct{ name, path string }{
		{"summary", base},
		{"tree", base + "/tree/main/src/dir07"},
		{"file", base + "/blob/main/src/dir07/file007.txt"},
		{"commit", base + "/commit/" + tip},
		{"history", base + "/commits/main?page=40"},
	}
	get := func(b *testing.B, path string) {
		rec := httptest.NewRecorder()
		r.pages.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("%s: %d", path, rec.Code)
		}
	}
	for _, v := range views {
		b.Run("first/"+v.name, func(b *testing.B) {
			for b.Loop() {
				r.pages.cache = newCache(r.pages.opts.CacheBytes)
				get(b, v.path)
			}
		})
		b.Run("cached/"+v.name, func(b *testing.B) {
			get(b, v.path)
			for b.Loop() {
				get(b, v.path)
			}
		})
	}
}
