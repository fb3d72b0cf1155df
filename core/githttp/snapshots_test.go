package githttp

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/internal/testkit"
)

// snapshotRepo makes a repository whose main holds files, pushed straight
// into the bare repository (these tests are about reading), and returns it
// with its tip.
func snapshotRepo(t *testing.T, ts *testServer, files map[string]string) (nip34.RepoRef, string) {
	t.Helper()
	owner, _ := ts.newRepo("snap")
	repo := ref(owner, "snap")
	work := t.TempDir()
	testkit.Git(t, work, "init", "-q", "-b", "main")
	for p, c := range files {
		os.MkdirAll(filepath.Join(work, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(work, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Git(t, work, "add", "-A")
	testkit.Git(t, work, "commit", "-q", "-m", "files")
	dir, _ := ts.repos.Path(repo)
	testkit.Git(t, work, "push", "-q", dir, "main")
	return repo, testkit.Git(t, work, "rev-parse", "HEAD")
}

func (ts *testServer) serve(from string, serve func(w http.ResponseWriter, r *http.Request)) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, "/snapshot", nil)
	req.RemoteAddr = from + ":4242"
	rec := httptest.NewRecorder()
	serve(rec, req)
	return rec
}

var snapshotFiles = map[string]string{"README.md": "# Snap\n", "src/a.go": "package src\n", "src/b.go": "package src\n\nvar B = 2\n"}

// TestSnapshots_TarGzAndZipOfACommit: a snapshot holds the commit's tree,
// every path under <name>/, as a download (issue 26 part 4).
func TestSnapshots_TarGzAndZipOfACommit(t *testing.T) {
	ts := newTestServer(t, Options{})
	repo, tip := snapshotRepo(t, ts, snapshotFiles)
	want := []string{"snap-main/README.md", "snap-main/src/a.go", "snap-main/src/b.go"}

	rec := ts.serve("192.0.2.1", func(w http.ResponseWriter, r *http.Request) {
		ts.h.ServeArchive(w, r, repo, tip, "tar.gz", "snap-main")
	})
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/gzip" ||
		rec.Header().Get("Content-Disposition") != `attachment; filename=snap-main.tar.gz` {
		t.Fatalf("tar.gz: %d %v\n%s", rec.Code, rec.Header(), rec.Body.String())
	}
	gz, err := gzip.NewReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var names []string
	contents := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			names = append(names, h.Name)
			b, _ := io.ReadAll(tr)
			contents[h.Name] = string(b)
		}
	}
	sort.Strings(names)
	if strings.Join(names, " ") != strings.Join(want, " ") || contents["snap-main/src/b.go"] != snapshotFiles["src/b.go"] {
		t.Errorf("tar.gz holds %v %q, want %v", names, contents, want)
	}

	rec = ts.serve("192.0.2.1", func(w http.ResponseWriter, r *http.Request) { ts.h.ServeArchive(w, r, repo, tip, "zip", "snap-main") })
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/zip" {
		t.Fatalf("zip: %d %v", rec.Code, rec.Header())
	}
	zr, err := zip.NewReader(bytes.NewReader(rec.Body.Bytes()), int64(rec.Body.Len()))
	if err != nil {
		t.Fatal(err)
	}
	names = nil
	for _, f := range zr.File {
		if !strings.HasSuffix(f.Name, "/") {
			names = append(names, f.Name)
		}
	}
	sort.Strings(names)
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("zip holds %v, want %v", names, want)
	}
	if n := counterValue(t, ts.h.m.ops.WithLabelValues("snapshot", "ok")); n != 2 {
		t.Errorf("%v snapshots counted ok, want 2", n)
	}
}

// TestSnapshots_BoundedBeforeGitRuns: a snapshot that would hold more files
// or bytes than the bounds is refused with the reason before git archive
// runs (a tree may name one blob under any number of paths).
func TestSnapshots_BoundedBeforeGitRuns(t *testing.T) {
	for _, c := range []struct {
		name string
		opts Options
		want string
	}{
		{"files", Options{MaxArchiveFiles: 2}, "would hold more than 2 files"},
		{"bytes", Options{MaxArchiveBytes: 20}, "would hold 3 files and 42 bytes; snapshots here hold at most 100000 files and 20 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts := newTestServer(t, c.opts)
			repo, tip := snapshotRepo(t, ts, snapshotFiles)
			rec := ts.serve("192.0.2.1", func(w http.ResponseWriter, r *http.Request) { ts.h.ServeArchive(w, r, repo, tip, "tar.gz", "snap") })
			if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), c.want) || !strings.Contains(rec.Body.String(), "clone the repository instead") {
				t.Errorf("%d %q, want 413 saying %q", rec.Code, rec.Body.String(), c.want)
			}
			if n := counterValue(t, ts.h.m.refused.WithLabelValues("too_large")); n != 1 {
				t.Errorf("%v refusals counted as too_large, want 1", n)
			}
		})
	}
}

// TestSnapshots_RefusedPastTheProcessSlots: snapshots and raw files are git
// processes in the handler's slots: past a client's share they are refused
// with 429, past the total (with no queue) with 503 and Retry-After, and
// served again once a slot is free.
func TestSnapshots_RefusedPastTheProcessSlots(t *testing.T) {
	ts := newTestServer(t, Options{MaxProcesses: 2, MaxProcessesPerIP: 1, QueueWait: -1})
	repo, tip := snapshotRepo(t, ts, snapshotFiles)
	blob := testkit.Git(t, "", "--git-dir="+mustPath(t, ts, repo), "rev-parse", tip+":src/a.go")
	archive := func(w http.ResponseWriter, r *http.Request) { ts.h.ServeArchive(w, r, repo, tip, "zip", "snap") }
	raw := func(w http.ResponseWriter, r *http.Request) { ts.h.ServeBlob(w, r, repo, blob, "a.go", false) }

	hold1, refused := ts.h.slots.acquire(context.Background(), "192.0.2.1")
	if refused != nil {
		t.Fatal(refused)
	}
	for _, serve := range []func(http.ResponseWriter, *http.Request){archive, raw} {
		if rec := ts.serve("192.0.2.1", serve); rec.Code != http.StatusTooManyRequests || !strings.HasPrefix(rec.Body.String(), "rate-limited: ") {
			t.Errorf("a second process for one client: %d %q, want 429 rate-limited", rec.Code, rec.Body.String())
		}
	}
	hold2, refused := ts.h.slots.acquire(context.Background(), "192.0.2.2")
	if refused != nil {
		t.Fatal(refused)
	}
	rec := ts.serve("192.0.2.3", archive)
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), "maximum of 2 git processes") {
		t.Errorf("past the total: %d %v %q, want 503 with Retry-After", rec.Code, rec.Header(), rec.Body.String())
	}
	if n := counterValue(t, ts.h.m.ops.WithLabelValues("snapshot", "ok")); n != 0 {
		t.Errorf("%v snapshots ran while refused", n)
	}
	hold1()
	hold2()
	if rec := ts.serve("192.0.2.1", archive); rec.Code != http.StatusOK {
		t.Errorf("with slots free: %d", rec.Code)
	}
	if rec := ts.serve("192.0.2.1", raw); rec.Code != http.StatusOK || rec.Body.String() != snapshotFiles["src/a.go"] {
		t.Errorf("raw with slots free: %d %q", rec.Code, rec.Body.String())
	}
	if n := counterValue(t, ts.h.m.refused.WithLabelValues("busy_ip")); n != 2 {
		t.Errorf("%v refusals counted as busy_ip, want 2", n)
	}
}

func mustPath(t *testing.T, ts *testServer, repo nip34.RepoRef) string {
	t.Helper()
	dir, err := ts.repos.Path(repo)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestSnapshots_RawFileTypes: a raw file is served as text/plain when it is
// UTF-8 text (an HTML file included: it never runs as a page here), as the
// image it is for PNG, as bytes otherwise; always nosniff and sandboxed,
// an attachment when downloaded.
func TestSnapshots_RawFileTypes(t *testing.T) {
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"
	files := map[string]string{"page.html": "<!doctype html><script>alert(1)</script>", "dot.png": png, "data.bin": "\x00\x01\x02\xff\xfe",
		"big.txt": strings.Repeat("é", 600)}
	ts := newTestServer(t, Options{})
	repo, tip := snapshotRepo(t, ts, files)
	for name, want := range map[string]string{"page.html": "text/plain; charset=utf-8", "dot.png": "image/png",
		"data.bin": "application/octet-stream", "big.txt": "text/plain; charset=utf-8"} {
		blob := testkit.Git(t, "", "--git-dir="+mustPath(t, ts, repo), "rev-parse", tip+":"+name)
		for _, download := range []bool{false, true} {
			rec := ts.serve("192.0.2.1", func(w http.ResponseWriter, r *http.Request) { ts.h.ServeBlob(w, r, repo, blob, name, download) })
			h := rec.Header()
			if rec.Code != http.StatusOK || h.Get("Content-Type") != want || rec.Body.String() != files[name] ||
				h.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(h.Get("Content-Security-Policy"), "sandbox") {
				t.Errorf("%s: %d %v, %d bytes; want %s and the file", name, rec.Code, h, rec.Body.Len(), want)
			}
			if disp := h.Get("Content-Disposition"); strings.HasPrefix(disp, "attachment") != download || !strings.Contains(disp, "filename="+name) {
				t.Errorf("%s (download %v): Content-Disposition %q", name, download, disp)
			}
		}
	}
}
