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
// adviseSmallPages when first seen. Only the writer's syncer goroutine (and
// the writer's own drain, then Close, after it) uses a walSyncer, one sync at
// a time; each of its two log sets is used by one goroutine at a time (see
// sync).
type walSyncer struct {
	dir     string
	realDir string // dir as /proc/self/maps names it
	// parallel syncs the value log and the WALs at the same time
	// (Options.ParallelLogSync).
	parallel bool
	wal      *logSet
	vlog     *logSet
}

// logSet is the state of one kind of log: the files named
// <number><suffix> seen so far.
type logSet struct {
	w      *walSyncer
	suffix string
	what   string
	files  map[string]*os.File // open descriptors of logs seen so far
	sealed map[string]bool     // older logs synced after they stopped growing
}

func newWALSyncer(dir string, parallel bool) *walSyncer {
	// /proc/self/maps names a mapped file by its absolute, resolved path.
	real := dir
	if abs, err := filepath.Abs(dir); err == nil {
		real = abs
		if r, err := filepath.EvalSymlinks(abs); err == nil {
			real = r
		}
	}
	w := &walSyncer{dir: dir, realDir: real, parallel: parallel}
	w.wal = &logSet{w: w, suffix: ".mem", what: "WAL", files: map[string]*os.File{}, sealed: map[string]bool{}}
	w.vlog = &logSet{w: w, suffix: ".vlog", what: "value log", files: map[string]*os.File{}, sealed: map[string]bool{}}
	return w
}

// sync makes the memtable WALs durable and, with vlog, the value-log files.
//
// In order (the default), the value log is synced first: badger writes a
// value there before the WAL entry pointing to it, and a WAL entry made
// durable before its value would, after a power cut in between, point past
// the end of the value log (its write was never acknowledged, but reading
// its record would fail). That costs a second device flush after the first
// on every commit that wrote a value (issue 27 part 4: 4 writers, 2 events
// per commit, 1,259 → 476 events/s). With parallel, both are synced at
// once, so ext4 commits them in one journal transaction: the commit waits
// for about one flush, and a power cut during it may leave that
// unacknowledged batch's records unreadable.
func (w *walSyncer) sync(vlog bool) error {
	if !vlog {
		return w.wal.sync()
	}
	if !w.parallel {
		if err := w.vlog.sync(); err != nil {
			return err
		}
		return w.wal.sync()
	}
	var verr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		verr = w.vlog.sync()
	}()
	werr := w.wal.sync()
	<-done
	return errors.Join(verr, werr)
}

// sync fdatasyncs the newest file of the set and each older one once more
// after it stopped growing.
func (l *logSet) sync() error {
	w := l.w
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		return fmt.Errorf("list %s for %s files: %w", w.dir, l.what, err)
	}
	type logFile struct {
		fid  int64
		name string
	}
	var logs []logFile
	present := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, l.suffix) {
			continue
		}
		fid, err := strconv.ParseInt(strings.TrimSuffix(name, l.suffix), 10, 64)
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
		if !newest && l.sealed[lf.name] {
			continue
		}
		f, ok := l.files[lf.name]
		if !ok {
			f, err = os.Open(filepath.Join(w.dir, lf.name))
			if errors.Is(err, fs.ErrNotExist) {
				continue // flushed to a table (or garbage-collected) and removed meanwhile
			}
			if err != nil {
				return fmt.Errorf("open %s %s to sync: %w", l.what, lf.name, err)
			}
			l.files[lf.name] = f
			newDir = true
			if newest {
				adviseSmallPages(filepath.Join(w.realDir, lf.name))
			}
		}
		if err := fdatasync(f); err != nil {
			return fmt.Errorf("sync %s %s: %w", l.what, lf.name, err)
		}
		if !newest {
			l.sealed[lf.name] = true
		}
	}
	if newDir {
		if err := syncDir(w.dir); err != nil {
			return err
		}
	}
	for name, f := range l.files {
		if !present[name] {
			f.Close()
			delete(l.files, name)
			delete(l.sealed, name)
		}
	}
	return nil
}

func (w *walSyncer) close() {
	for _, l := range []*logSet{w.wal, w.vlog} {
		for name, f := range l.files {
			f.Close()
			delete(l.files, name)
		}
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
