package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr"
)

// maxValueThreshold is badger's default and largest value-log threshold:
// values at least this big go to the value log, smaller ones stay inline in
// the LSM tree. Only a batch holding such a value needs the value log synced.
const maxValueThreshold = 1 << 20

// valueThreshold is maxValueThreshold unless the memtable is so small that
// badger requires the threshold to fit in a write batch (15% of it).
func valueThreshold(memTableBytes int64) int64 {
	return min(maxValueThreshold, memTableBytes*15/100-1024)
}

// walSyncer makes badger's memtable write-ahead logs durable with one
// fdatasync per group commit.
//
// Why not badger's own calls: SyncWrites syncs once per transaction, and
// DB.Sync syncs the active WAL and the value log (an extra device flush even
// when the value log is untouched) but not the WAL of a memtable that was
// rotated out and is still waiting to be flushed to a table. walSyncer lists
// the .mem files, syncs the newest (active) one, and syncs each older one
// once more after it stopped growing; a WAL that is gone was flushed into a
// table, which badger syncs before deleting it. A newly created WAL also gets
// its directory entry synced, which badger does not do.
//
// The WALs are written through mmap; fdatasync on any descriptor of the file
// writes back pages dirtied through the mapping. Only the writer goroutine
// (and Close, after it) uses a walSyncer.
type walSyncer struct {
	dir    string
	files  map[string]*os.File // open descriptors of WALs seen so far
	sealed map[string]bool     // older WALs synced after they stopped growing
}

func newWALSyncer(dir string) *walSyncer {
	return &walSyncer{dir: dir, files: map[string]*os.File{}, sealed: map[string]bool{}}
}

func (w *walSyncer) sync() error {
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		return fmt.Errorf("list %s for memtable WALs: %w", w.dir, err)
	}
	type wal struct {
		fid  int64
		name string
	}
	var wals []wal
	present := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".mem") {
			continue
		}
		fid, err := strconv.ParseInt(strings.TrimSuffix(name, ".mem"), 10, 64)
		if err != nil {
			continue
		}
		wals = append(wals, wal{fid, name})
		present[name] = true
	}
	slices.SortFunc(wals, func(a, b wal) int { return int(a.fid - b.fid) })

	newDir := false
	for i, wl := range wals {
		newest := i == len(wals)-1
		if !newest && w.sealed[wl.name] {
			continue
		}
		f, ok := w.files[wl.name]
		if !ok {
			f, err = os.Open(filepath.Join(w.dir, wl.name))
			if errors.Is(err, fs.ErrNotExist) {
				continue // flushed to a table and removed meanwhile
			}
			if err != nil {
				return fmt.Errorf("open WAL %s to sync: %w", wl.name, err)
			}
			w.files[wl.name] = f
			newDir = true
		}
		if err := fdatasync(f); err != nil {
			return fmt.Errorf("sync WAL %s: %w", wl.name, err)
		}
		if !newest {
			w.sealed[wl.name] = true
		}
	}
	if newDir {
		if err := syncDir(w.dir); err != nil {
			return err
		}
	}
	for name, f := range w.files {
		if !present[name] {
			f.Close()
			delete(w.files, name)
			delete(w.sealed, name)
		}
	}
	return nil
}

func (w *walSyncer) close() {
	for name, f := range w.files {
		f.Close()
		delete(w.files, name)
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open %s to sync: %w", dir, err)
	}
	serr := d.Sync()
	cerr := d.Close()
	if serr != nil {
		return fmt.Errorf("sync directory %s: %w", dir, serr)
	}
	if cerr != nil {
		return fmt.Errorf("close directory %s: %w", dir, cerr)
	}
	return nil
}

// syncDurable makes every write committed so far survive a power cut.
// vlog says whether one of them may have gone to the value log.
func (s *Store) syncDurable(vlog bool) error {
	if err := s.wals.sync(); err != nil {
		return err
	}
	if vlog {
		// DB.Sync covers the value log (and the active WAL again).
		if err := s.db.Sync(); err != nil {
			return fmt.Errorf("sync badger value log: %w", err)
		}
	}
	return nil
}

// mayUseValueLog reports whether evt's stored record could reach badger's
// value threshold: a generous over-estimate of its binary encoding.
func mayUseValueLog(evt *nostr.Event, threshold int64) bool {
	n := 256 + len(evt.Content)
	for _, tag := range evt.Tags {
		n += 1
		for _, item := range tag {
			n += 3 + len(item)
		}
	}
	return int64(n) >= threshold/2
}
