package admin

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/internal/testlog"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// fakeDataDir lays out a data dir with two repositories of one identifier,
// the second borrowing the first's objects, a push's quarantine, a lock
// file and an operator's plugins dir.
func fakeDataDir(t *testing.T) (data string, repos []string) {
	t.Helper()
	data = filepath.Join(t.TempDir(), "data")
	lender := filepath.Join(data, "git", "npub1aaa", "p.git")
	borrower := filepath.Join(data, "git", "npub1bbb", "p.git")
	files := map[string]string{
		lender + "/HEAD":                       "ref: refs/heads/main\n",
		lender + "/refs/heads/main":            "1111111111111111111111111111111111111111\n",
		lender + "/objects/pack/pack-1.pack":   "PACK",
		lender + "/objects/incoming-x/pack/q":  "unchecked",
		lender + "/refs/heads/main.lock":       "stale",
		borrower + "/HEAD":                     "ref: refs/heads/main\n",
		borrower + "/packed-refs":              "1111111111111111111111111111111111111111 refs/heads/main\n",
		borrower + "/objects/info/alternates":  lender + "/objects\n",
		data + "/plugins/accept.js":            "export default () => true\n",
		data + "/store/000001.vlog":            "never copied as a file",
		data + "/git/.grasp-hooks/pre-receive": "#!/bin/sh\n",
		data + "/lost+found/#1234":             "fsck's",
		data + "/admin.token":                  "secret",
		data + "/plugins/nested.token":         "secret too",
	}
	for p, body := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(lender+"/objects/pack/pack-1.pack", 0o444); err != nil {
		t.Fatal(err)
	}
	return data, []string{lender, borrower}
}

// TestBackupRoundTrip: a backup streamed through the handler and written
// out by ReceiveBackup restores into a new data dir with the store dump
// intact across pieces, the repositories without quarantine and lock
// files, the plugins dir, and the alternates rebased onto the new dir.
func TestBackupRoundTrip(t *testing.T) {
	data, repos := fakeDataDir(t)
	dump := make([]byte, 2*chunkSize+12345)
	for i := range dump {
		dump[i] = byte(rand.IntN(256))
	}
	clk := clock.NewFake(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	// The store is dumped after the repositories are copied, so no copied
	// ref is newer than the state the dump holds.
	var order []string
	src := BackupSources{DataDir: data, Backend: "badger", Online: true, Clock: clk,
		Repos: func(ctx context.Context, fn func([]string) error) error {
			order = append(order, "repos")
			return fn(repos)
		},
		Store: func(w io.Writer) error { order = append(order, "store"); _, err := w.Write(dump); return err },
		Leave: []string{filepath.Join(data, "admin.token"), filepath.Join(data, "plugins", "nested.token")},
	}
	var logs testlog.Buffer
	srv := httptest.NewServer(BackupHandler(func() BackupSources { return src }, hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})))
	defer srv.Close()
	if resp, err := http.Get(srv.URL + BackupPath); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %v %v", resp, err)
	}
	resp, err := http.Post(srv.URL+BackupPath, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	dest := filepath.Join(t.TempDir(), "backup")
	m, err := ReceiveBackup(resp.Body, dest)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(order, " ") != "repos store" {
		t.Errorf("backup read %v, want the repositories then the store", order)
	}
	if m.Repositories != 2 || m.StoreChunks != 3 || m.StoreBytes != int64(len(dump)) || m.DataDir != data || !m.Created.Equal(clk.Now()) {
		t.Errorf("manifest = %+v", m)
	}
	// The operator's log tells the backup's start and end (issue 26 part 6).
	finished := fmt.Sprintf("[INFO]  backup finished: repositories=2 store_bytes=%d", len(dump))
	testwait.For(t, "the backup's end logged", func() bool { return strings.Contains(logs.String(), finished) })
	if want := "[INFO]  backup started: data_dir=" + data + " online=true"; !strings.Contains(logs.String(), want) {
		t.Errorf("the log lacks %q:\n%s", want, logs.String())
	}

	restored := filepath.Join(t.TempDir(), "restored")
	var loaded []byte
	if _, err := Restore(dest, restored, func(r io.Reader) error {
		loaded, err = io.ReadAll(r)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(loaded, dump) {
		t.Errorf("store dump: %d bytes restored, %d written, equal=false", len(loaded), len(dump))
	}
	for rel, want := range map[string]string{
		"git/npub1aaa/p.git/refs/heads/main":          "1111111111111111111111111111111111111111\n",
		"git/npub1aaa/p.git/objects/pack/pack-1.pack": "PACK",
		"git/npub1bbb/p.git/objects/info/alternates":  filepath.Join(restored, "git", "npub1aaa", "p.git", "objects") + "\n",
		"plugins/accept.js":                           "export default () => true\n",
	} {
		if b, err := os.ReadFile(filepath.Join(restored, rel)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", rel, b, err, want)
		}
	}
	for _, rel := range []string{"git/npub1aaa/p.git/objects/incoming-x", "git/npub1aaa/p.git/refs/heads/main.lock", "store/000001.vlog", "git/.grasp-hooks", "lost+found", ManifestName, "admin.token", "plugins/nested.token"} {
		if _, err := os.Stat(filepath.Join(restored, rel)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s restored: %v", rel, err)
		}
	}
	if st, err := os.Stat(filepath.Join(restored, "git/npub1aaa/p.git/objects/pack/pack-1.pack")); err != nil || st.Mode().Perm() != 0o444 {
		t.Errorf("pack mode: %v %v", st, err)
	}

	// Into a non-empty directory: refused, nothing written.
	if _, err := Restore(dest, restored, func(io.Reader) error { return nil }); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("restore over a data dir: %v", err)
	}
	if _, err := ReceiveBackup(strings.NewReader(""), dest); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("backup into a non-empty dir: %v", err)
	}
	// A failing load leaves the target as empty as it was.
	empty := t.TempDir()
	if _, err := Restore(dest, empty, func(io.Reader) error { return errors.New("disk full") }); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("failing load: %v", err)
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Errorf("a failed restore left %d entries", len(ents))
	}
}

// TestReceiveBackupRefusesBrokenStreams: a stream that ends early, carries
// the server's error, or names a path outside the destination fails.
func TestReceiveBackupRefusesBrokenStreams(t *testing.T) {
	data, repos := fakeDataDir(t)
	failing := BackupSources{DataDir: data,
		Repos: func(ctx context.Context, fn func([]string) error) error { return fn(repos) },
		Store: func(w io.Writer) error { return errors.New("badger: disk gone") },
	}
	var full bytes.Buffer
	if err := WriteBackup(context.Background(), &full, failing); err == nil {
		t.Fatal("WriteBackup hid the store's error")
	}
	if _, err := ReceiveBackup(&full, filepath.Join(t.TempDir(), "b")); err == nil || !strings.Contains(err.Error(), "badger: disk gone") {
		t.Errorf("stream with the server's error: %v", err)
	}

	ok := failing
	ok.Store = func(w io.Writer) error { _, err := w.Write([]byte("dump")); return err }
	var good bytes.Buffer
	if err := WriteBackup(context.Background(), &good, ok); err != nil {
		t.Fatal(err)
	}
	cut := good.Bytes()[:good.Len()/2]
	if _, err := ReceiveBackup(bytes.NewReader(cut), filepath.Join(t.TempDir(), "b")); err == nil {
		t.Error("a stream cut in half was accepted")
	}

	var evil bytes.Buffer
	tw := tar.NewWriter(&evil)
	tw.WriteHeader(&tar.Header{Name: "../escape", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
	tw.Write([]byte("x"))
	tw.Close()
	parent := t.TempDir()
	if _, err := ReceiveBackup(&evil, filepath.Join(parent, "b")); err == nil || !strings.Contains(err.Error(), "bad path") {
		t.Errorf("path outside the destination: %v", err)
	}
	if _, err := os.Stat(filepath.Join(parent, "escape")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("escape written: %v", err)
	}
}
