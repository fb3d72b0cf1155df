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

// walSyncer makes badger's memtable write-ahead logs, and the value-log
// files when a batch wrote to them, durable with one fdatasync each per
// group commit.
//
// Why not badger's own calls: SyncWrites syncs once per transaction, and
// DB.Sync syncs the active WAL and the value log (an extra device flush even
// when the value log is untouched) but not the WAL of a memtable that was
// rotated out and is still waiting to be flushed to a table, nor a value-log
// file rotated away from. walSyncer lists the .mem (and .vlog) files, syncs
// the newest (active) one, and syncs each older one once more after it
// stopped growing; a WAL that is gone was flushed into a table, which badger
// syncs before deleting it. A newly created file also gets its directory
// entry synced, which badger does not do.
//
// The logs are written through mmap; fdatasync on any descriptor of the
// file writes back pages dirtied through the mapping. The newest file gets
// adviseSmallPages when first seen. Only the writer goroutine (and Close,
// after it) uses a walSyncer.
type walSyncer struct {
	dir     string
	realDir string              // dir as /proc/self/maps names it
	files   map[string]*os.File // open descriptors of logs seen so far
	sealed  map[string]bool     // older logs synced after they stopped growing
}

func newWALSyncer(dir string) *walSyncer {
	// /proc/self/maps names a mapped file by its absolute, resolved path.
	real := dir
	if abs, err := filepath.Abs(dir); err == nil {
		real = abs
		if r, err := filepath.EvalSymlinks(abs); err == nil {
			real = r
		}
	}
	return &walSyncer{dir: dir, realDir: real, files: map[string]*os.File{}, sealed: map[string]bool{}}
}

// sync makes the memtable WALs durable and, with vlog, the value-log files
// first (badger writes a value there before the WAL entry pointing to it).
func (w *walSyncer) sync(vlog bool) error {
	if vlog {
		if err := w.syncLogs(".vlog", "value log"); err != nil {
			return err
		}
	}
	return w.syncLogs(".mem", "WAL")
}

// syncLogs fdatasyncs the newest file named <number><suffix> and each older
// one once more after it stopped growing.
func (w *walSyncer) syncLogs(suffix, what string) error {
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		return fmt.Errorf("list %s for %s files: %w", w.dir, what, err)
	}
	type logFile struct {
		fid  int64
		name string
	}
	var logs []logFile
	present := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, suffix) {
			continue
		}
		fid, err := strconv.ParseInt(strings.TrimSuffix(name, suffix), 10, 64)
		if err != nil {
			continue
		}
		logs = append(logs, logFile{fid, name})
		present[name] = true
	}
	slices.SortFunc(logs, func(a, b logFile) int { return int(a.fid - b.fid) })

	newDir := false
	for i, lf := range logs {
		newest := i == len(logs)-1
		if !newest && w.sealed[lf.name] {
			continue
		}
		f, ok := w.files[lf.name]
		if !ok {
			f, err = os.Open(filepath.Join(w.dir, lf.name))
			if errors.Is(err, fs.ErrNotExist) {
				continue // flushed to a table (or garbage-collected) and removed meanwhile
			}
			if err != nil {
				return fmt.Errorf("open %s %s to sync: %w", what, lf.name, err)
			}
			w.files[lf.name] = f
			newDir = true
			if newest {
				adviseSmallPages(filepath.Join(w.realDir, lf.name))
			}
		}
		if err := fdatasync(f); err != nil {
			return fmt.Errorf("sync %s %s: %w", what, lf.name, err)
		}
		if !newest {
			w.sealed[lf.name] = true
		}
	}
	if newDir {
		if err := syncDir(w.dir); err != nil {
			return err
		}
	}
	for name, f := range w.files {
		if strings.HasSuffix(name, suffix) && !present[name] {
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
//
// Not DB.Sync: it msyncs the whole mapping of the active WAL and value-log
// file (tens of MiB of page tables walked per call), which made a group
// commit several times slower than an fdatasync of each, and it syncs only
// the newest value-log file, while badger without SyncWrites does not sync
// a value-log file it rotates away from.
func (s *badgerStore) syncDurable(vlog bool) error {
	return s.wals.sync(vlog)
}
