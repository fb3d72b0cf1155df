package admin

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/git"
)

// BackupPath is where the metrics listener streams `grasp admin backup`
// (POST): a tar of the backup directory, which the command writes out. The
// server only reads; the command, not the sandboxed service, writes the
// destination.
const BackupPath = "/admin/backup"

// A backup directory holds:
//
//	grasp-backup.json   the Manifest, written last: a directory without it is incomplete
//	grasp-backup.sha256 the hash manifest: "<sha256>  <path>" of every other file, as
//	                    sha256sum -c reads it; the Manifest holds its own hash
//	grasp-backup-refs.json every repository's refs as copied (Verify compares them)
//	store/badger.NNNNNN the badger dump (store.Backup) in pieces, read in name order
//	git/<npub>/<id>.git the bare repositories, as of the moment each was copied
//	...                 any other file of the data dir, as is
const (
	ManifestName   = "grasp-backup.json"
	HashesName     = "grasp-backup.sha256"
	RefsName       = "grasp-backup-refs.json"
	backupErrName  = "grasp-backup-error.txt"
	storeChunkDir  = "store"
	storeChunkName = "badger."
	// BackupFormat is the layout version in the manifest.
	BackupFormat = 1
)

// chunkSize bounds the memory one backup holds: tar needs each entry's
// size before its bytes, and the dump's size is known only at its end.
const chunkSize = 4 << 20

// Manifest describes a backup.
type Manifest struct {
	Format  int       `json:"format"`
	Created time.Time `json:"created"`
	// DataDir is the data dir backed up: restore rewrites the git
	// alternates that name it.
	DataDir string `json:"data_dir"`
	// Backend is store.backend: with "postgres" the events are not in the
	// store dump (pg_dump them), only the side tables.
	Backend      string `json:"store_backend"`
	Online       bool   `json:"online"`
	Repositories int    `json:"repositories"`
	StoreChunks  int    `json:"store_chunks"`
	StoreBytes   int64  `json:"store_bytes"`
	// Hashes is the SHA-256 of the hash manifest (HashesName), so that
	// neither can be changed alone; "" in a backup of an older grasp.
	Hashes string `json:"hashes_sha256,omitempty"`
}

// BackupSources is what a backup reads. The repositories are copied first
// and the store dumped last: an event acknowledged before the backup began
// is in the dump, and every ref copied names a state the dump holds (a push
// needs its state event stored first).
type BackupSources struct {
	DataDir string
	Backend string
	Online  bool
	// Repos calls fn with each group of repository directories while
	// nothing writes them (git.Repos.EachLocked).
	Repos func(ctx context.Context, fn func(dirs []string) error) error
	// Refs lists a repository's refs while Repos holds it
	// (git.Repos.RefsIn), recorded for Verify; nil records none.
	Refs func(ctx context.Context, dir string) (map[string]string, error)
	// Store writes the badger dump (store.Store.Backup, store.Closed.Backup).
	Store func(w io.Writer) error
	Clock clock.Clock
	// Leave are files of the data dir a backup leaves out: the admin
	// token (a restored server makes its own, and a backup copied
	// elsewhere must not carry it).
	Leave []string
}

// WriteBackup writes the backup of src to w as a tar stream. When it fails
// half-way the stream ends with an error entry instead of the manifest.
func WriteBackup(ctx context.Context, w io.Writer, src BackupSources) error {
	_, err := writeBackupStream(ctx, w, src)
	return err
}

// writeBackupStream is WriteBackup, returning the manifest written.
func writeBackupStream(ctx context.Context, w io.Writer, src BackupSources) (Manifest, error) {
	var m Manifest
	tw := tar.NewWriter(w)
	err := writeBackup(ctx, tw, src, &m)
	if err != nil {
		msg := []byte(err.Error())
		if tw.WriteHeader(&tar.Header{Name: backupErrName, Mode: 0o644, Size: int64(len(msg)), Typeflag: tar.TypeReg}) == nil {
			_, _ = tw.Write(msg)
		}
	}
	if cerr := tw.Close(); err == nil {
		err = cerr
	}
	return m, err
}

func writeBackup(ctx context.Context, tw *tar.Writer, src BackupSources, m *Manifest) error {
	clk := src.Clock
	if clk == nil {
		clk = clock.New()
	}
	*m = Manifest{Format: BackupFormat, Created: clk.Now().UTC(), DataDir: src.DataDir, Backend: src.Backend, Online: src.Online}
	gitRoot := filepath.Join(src.DataDir, "git")
	hw := &hashingWriter{tw: tw}
	refs := map[string]map[string]string{}
	err := src.Repos(ctx, func(dirs []string) error {
		for _, d := range dirs {
			rel, err := filepath.Rel(src.DataDir, d)
			if err != nil {
				return err
			}
			if err := addTree(ctx, hw, d, filepath.ToSlash(rel), git.BackupSkips); err != nil {
				return fmt.Errorf("copy %s: %w", d, err)
			}
			if src.Refs != nil {
				if refs[filepath.ToSlash(rel)], err = src.Refs(ctx, d); err != nil {
					return err
				}
			}
			m.Repositories++
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Anything else an operator keeps in the data dir (a plugins dir),
	// copied as it is.
	top, err := os.ReadDir(src.DataDir)
	if err != nil {
		return err
	}
	leave := map[string]bool{}
	for _, p := range src.Leave {
		leave[filepath.Clean(p)] = true
	}
	for _, e := range top {
		name := e.Name()
		// lost+found: the data dir may be a filesystem of its own, and
		// fsck's directory is root's.
		dir := filepath.Join(src.DataDir, name)
		if name == "store" || name == "lost+found" || dir == gitRoot || leave[dir] {
			continue
		}
		skip := func(rel string) bool { return leave[filepath.Join(dir, rel)] }
		if err := addTree(ctx, hw, dir, name, skip); err != nil {
			return err
		}
	}
	cw := &chunkWriter{hw: hw, now: m.Created}
	if err := src.Store(cw); err != nil {
		return err
	}
	if err := cw.flush(); err != nil {
		return err
	}
	m.StoreChunks, m.StoreBytes = cw.n, cw.bytes
	if src.Refs != nil {
		b, err := json.MarshalIndent(refs, "", " ")
		if err != nil {
			return err
		}
		if err := hw.file(RefsName, append(b, '\n'), m.Created); err != nil {
			return err
		}
	}
	list := hw.list.Bytes()
	sum := sha256.Sum256(list)
	m.Hashes = hex.EncodeToString(sum[:])
	if err := writeEntry(tw, HashesName, list, m.Created); err != nil {
		return err
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeEntry(tw, ManifestName, append(b, '\n'), m.Created)
}

// writeEntry adds the file name holding b to the tar stream.
func writeEntry(tw *tar.Writer, name string, b []byte, at time.Time) error {
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), ModTime: at, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	_, err := tw.Write(b)
	return err
}

// hashingWriter writes files into the tar stream and lists each one's
// SHA-256 for the hash manifest, in sha256sum's format.
type hashingWriter struct {
	tw   *tar.Writer
	list bytes.Buffer
}

// copy adds the file described by hdr with the bytes of r.
func (h *hashingWriter) copy(hdr *tar.Header, r io.Reader) (int64, error) {
	if err := h.tw.WriteHeader(hdr); err != nil {
		return 0, err
	}
	sum := sha256.New()
	n, err := io.Copy(io.MultiWriter(h.tw, sum), r)
	if err == nil {
		fmt.Fprintf(&h.list, "%x  %s\n", sum.Sum(nil), hdr.Name)
	}
	return n, err
}

// file adds the file name holding b.
func (h *hashingWriter) file(name string, b []byte, at time.Time) error {
	_, err := h.copy(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), ModTime: at, Typeflag: tar.TypeReg}, bytes.NewReader(b))
	return err
}

// addTree adds the regular files under dir as name/...; skip (if set) leaves
// out paths relative to dir. A file that vanishes during the walk is left
// out: outside a repository's lock nothing of grasp's own changes there.
func addTree(ctx context.Context, hw *hashingWriter, dir, name string, skip func(rel string) bool) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if skip != nil && rel != "." && skip(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		} else if err != nil {
			return err
		}
		hdr := &tar.Header{Name: path.Join(name, filepath.ToSlash(rel)), Mode: int64(info.Mode().Perm()), ModTime: info.ModTime()}
		if d.IsDir() {
			hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
			return hw.tw.WriteHeader(hdr)
		}
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		} else if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		hdr.Typeflag, hdr.Size = tar.TypeReg, st.Size()
		// A file that grows while read is cut at the size announced.
		n, err := hw.copy(hdr, io.LimitReader(f, hdr.Size))
		if err == nil && n < hdr.Size {
			err = fmt.Errorf("%s shrank while read", p)
		}
		return err
	})
}

// chunkWriter cuts the store dump into tar entries of chunkSize bytes.
type chunkWriter struct {
	hw    *hashingWriter
	buf   bytes.Buffer
	n     int
	bytes int64
	now   time.Time
}

func (c *chunkWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		k := min(len(p), chunkSize-c.buf.Len())
		c.buf.Write(p[:k])
		p, written = p[k:], written+k
		if c.buf.Len() == chunkSize {
			if err := c.flush(); err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

func (c *chunkWriter) flush() error {
	if c.buf.Len() == 0 && c.n > 0 {
		return nil
	}
	c.n++
	name := fmt.Sprintf("%s/%s%06d", storeChunkDir, storeChunkName, c.n)
	c.bytes += int64(c.buf.Len())
	_, err := c.hw.copy(&tar.Header{Name: name, Mode: 0o600, Size: int64(c.buf.Len()), ModTime: c.now, Typeflag: tar.TypeReg}, bytes.NewReader(c.buf.Bytes()))
	c.buf.Reset()
	return err
}

// BackupHandler streams WriteBackup of what src returns for each request.
// A failure after the first byte cannot change the status: the stream then
// ends with an error entry, which ReceiveBackup reports. log (nil: none)
// gets "backup started" and "backup finished" at info; a failure is the
// Guard's "admin command failed".
func BackupHandler(src func() BackupSources, log hclog.Logger) http.Handler {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST to take a backup", http.StatusMethodNotAllowed)
			return
		}
		s := src()
		clk := s.Clock
		if clk == nil {
			clk = clock.New()
		}
		start := clk.Now()
		log.Info("backup started", "data_dir", s.DataDir, "online", s.Online)
		w.Header().Set("Content-Type", "application/x-tar")
		m, err := writeBackupStream(r.Context(), w, s)
		if err != nil {
			noteFailure(w, fmt.Errorf("backup: %w", err))
			return
		}
		log.Info("backup finished", "repositories", m.Repositories, "store_bytes", m.StoreBytes, "took", clk.Since(start).Round(time.Millisecond))
	})
}

// EmptyDir reports an error unless dir is missing or an empty directory:
// a backup or restore never mixes its files with others.
func EmptyDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(ents) > 0 {
		return fmt.Errorf("%s is not empty", dir)
	}
	return nil
}

// ReceiveBackup writes the tar stream of WriteBackup into dest (missing or
// empty), fsyncing each file, and returns its manifest. A stream that ends
// without the manifest, or with the server's error, fails.
func ReceiveBackup(r io.Reader, dest string) (Manifest, error) {
	var m Manifest
	if err := EmptyDir(dest); err != nil {
		return m, err
	}
	if err := os.MkdirAll(dest, 0o700); err != nil {
		return m, err
	}
	tr := tar.NewReader(r)
	var got bool
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return m, fmt.Errorf("read backup stream: %w", err)
		}
		name := path.Clean(hdr.Name)
		if !fs.ValidPath(name) || name == "." {
			return m, fmt.Errorf("backup stream: bad path %q", hdr.Name)
		}
		if got {
			return m, fmt.Errorf("backup stream: %q after the manifest", name)
		}
		switch {
		case name == backupErrName:
			b, _ := io.ReadAll(io.LimitReader(tr, 64<<10))
			return m, fmt.Errorf("the server failed: %s", b)
		case hdr.Typeflag == tar.TypeDir:
			p := filepath.Join(dest, filepath.FromSlash(name))
			if err := os.MkdirAll(p, 0o755); err != nil {
				return m, err
			}
			// Owner-writable, so files can be added to it.
			if err := os.Chmod(p, fs.FileMode(hdr.Mode).Perm()|0o700); err != nil {
				return m, err
			}
			continue
		case hdr.Typeflag != tar.TypeReg:
			return m, fmt.Errorf("backup stream: %q is not a file", name)
		}
		p := filepath.Join(dest, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return m, err
		}
		if name == ManifestName {
			b, err := io.ReadAll(io.LimitReader(tr, 1<<20))
			if err != nil {
				return m, err
			}
			if err := json.Unmarshal(b, &m); err != nil {
				return m, fmt.Errorf("backup manifest: %w", err)
			}
			// Written last, after everything it vouches for is on disk.
			// The files are synced here rather than one by one as they
			// arrive: the server holds a repository's lock while it sends it.
			if err := syncTree(dest); err != nil {
				return m, err
			}
			if err := writeFrom(p, bytes.NewReader(b), 0o644); err != nil {
				return m, err
			}
			if err := syncTree(p); err != nil {
				return m, err
			}
			got = true
			continue
		}
		if err := writeFrom(p, tr, fs.FileMode(hdr.Mode).Perm()); err != nil {
			return m, err
		}
	}
	if !got {
		return m, errors.New("the backup stream ended before its manifest: incomplete")
	}
	return m, syncTree(dest)
}

func writeFrom(p string, r io.Reader, mode fs.FileMode) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode|0o200)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && mode&0o200 == 0 {
		err = os.Chmod(p, mode)
	}
	return err
}

// syncTree fsyncs every file and directory under root (root itself when it
// is a file, and its parent directory).
func syncTree(root string) error {
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return syncPath(p)
	})
	if err != nil {
		return err
	}
	return syncPath(filepath.Dir(root))
}

func syncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	err = f.Sync()
	f.Close()
	if err != nil {
		return fmt.Errorf("sync %s: %w", p, err)
	}
	return nil
}

// ReadManifest reads the manifest of the backup directory src.
func ReadManifest(src string) (Manifest, error) {
	var m Manifest
	b, err := os.ReadFile(filepath.Join(src, ManifestName))
	if errors.Is(err, fs.ErrNotExist) {
		return m, fmt.Errorf("%s is not a complete grasp backup (no %s)", src, ManifestName)
	}
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%s: %w", ManifestName, err)
	}
	if m.Format != BackupFormat {
		return m, fmt.Errorf("%s: format %d, this grasp reads %d", ManifestName, m.Format, BackupFormat)
	}
	return m, nil
}

// Restore fills dataDir (missing or empty: a running server's data dir
// never is) from the backup directory src: the files as they are, the git
// alternates rebased onto dataDir, and the store dump handed to load
// (store.Restore).
// A restore that fails half-way removes what it wrote.
func Restore(src, dataDir string, load func(r io.Reader) error) (Manifest, error) {
	// src may be a link to the backup (deploy/backup.sh's DIR/latest).
	if real, err := filepath.EvalSymlinks(src); err == nil {
		src = real
	}
	m, err := ReadManifest(src)
	if err != nil {
		return m, err
	}
	if err := EmptyDir(dataDir); err != nil {
		return m, fmt.Errorf("refusing to restore into %s: %w (stop the server and restore into an empty directory)", dataDir, err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return m, err
	}
	m, err = restore(src, dataDir, m, load)
	if err != nil {
		ents, _ := os.ReadDir(dataDir)
		for _, e := range ents {
			os.RemoveAll(filepath.Join(dataDir, e.Name()))
		}
	}
	return m, err
}

func restore(src, dataDir string, m Manifest, load func(r io.Reader) error) (Manifest, error) {
	var err error
	var chunks []string
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil || rel == "." || rel == ManifestName || rel == HashesName || rel == RefsName {
			return err
		}
		if filepath.Dir(rel) == storeChunkDir && strings.HasPrefix(d.Name(), storeChunkName) {
			chunks = append(chunks, p)
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		dst := filepath.Join(dataDir, rel)
		if d.IsDir() {
			if rel == storeChunkDir {
				return nil
			}
			return os.MkdirAll(dst, info.Mode().Perm()|0o700)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		return writeFrom(dst, f, info.Mode().Perm())
	})
	if err != nil {
		return m, fmt.Errorf("restore %s: %w", dataDir, err)
	}
	sort.Strings(chunks)
	if len(chunks) != m.StoreChunks {
		return m, fmt.Errorf("restore: %s holds %d store pieces, its manifest says %d", src, len(chunks), m.StoreChunks)
	}
	readers := make([]io.Reader, 0, len(chunks))
	for _, c := range chunks {
		f, err := os.Open(c)
		if err != nil {
			return m, err
		}
		defer f.Close()
		readers = append(readers, f)
	}
	if err := load(io.MultiReader(readers...)); err != nil {
		return m, err
	}
	if m.DataDir != "" {
		if err := git.RebaseAlternates(filepath.Join(dataDir, "git"), filepath.Join(m.DataDir, "git")); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return m, fmt.Errorf("restore: rebase alternates: %w", err)
		}
	}
	return m, syncTree(dataDir)
}
