package store

import (
	"time"

	"github.com/dgraph-io/badger/v4"
)

// residentCheckEvery is how often the file-backed resident memory is
// compared with Options.ResidentFileMB. A check reads /proc/self/status
// (tens of microseconds); what is mapped in between goes over the budget
// until the next one, and reading a million-event store maps 100-200 MB a
// second (the negentropy index and sync's replay at start-up, the queries
// of a NIP-77 session's fetch): checked every 10 s, its start-up peaked at
// 1.1 GB of file pages over a 256 MiB budget, and checked every second,
// queries still swung 30 → 320 MB between checks (issue 27 part 2).
const residentCheckEvery = 250 * time.Millisecond

// Badger reads and writes its tables and value log through mmap, so every
// page it wrote or read stayed in the process's resident memory until the
// file was deleted: RSS grew with the store (1.4 GiB of file pages at a
// million events, issue 27 part 2), although the kernel could drop them at
// any time. Above Options.ResidentFileMB of file-backed resident memory
// the store drops them from its mappings (dropResidentPages); the kernel
// keeps them cached.

// startResidentCheck checks every residentCheckEvery, and once after the
// negentropy index loaded (it reads every record).
func (s *badgerStore) startResidentCheck() {
	if s.opts.ResidentFileMB < 0 {
		return
	}
	budget := int64(s.opts.ResidentFileMB) << 20
	s.residentStop, s.residentDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.residentDone)
		t := s.env.Clock.NewTicker(residentCheckEvery)
		defer t.Stop()
		loaded := s.neg.done
		for {
			select {
			case <-s.residentStop:
				return
			case <-loaded:
				loaded = nil
			case <-t.C():
			}
			if residentFileBytes() > budget {
				s.dropResident()
			}
		}
	}()
}

// dropResident drops the resident pages of the tables and sealed value-log
// files, holding everything that could unmap one of them meanwhile:
//
//   - a table file is unmapped when its last reference goes (after a
//     compaction replaced it): an open iterator references every table in
//     the tree when it is created, and only tables listed before and after
//     it was created are dropped (a table never returns to the tree);
//   - a value-log file is unmapped when value-log GC deletes it, which
//     badger defers while an iterator is open, except for a deletion
//     decided before; gcMu keeps Maintain's GC, the only caller, out;
//   - a value-log file is shrunk (remapped) when it is rotated, after its
//     last write: the newest file is never dropped;
//   - WALs and the discard-statistics file are never dropped.
//
// If GC runs, it waits for the next check.
func (s *badgerStore) dropResident() int64 {
	if !s.gcMu.TryLock() {
		return 0
	}
	defer s.gcMu.Unlock()
	before := s.db.Tables()
	txn := s.db.NewTransaction(false)
	defer txn.Discard()
	it := txn.NewIterator(badger.IteratorOptions{})
	defer it.Close()
	listed := make(map[uint64]bool, len(before))
	for _, t := range before {
		listed[t.ID] = true
	}
	tables := make(map[uint64]bool, len(before))
	for _, t := range s.db.Tables() {
		if listed[t.ID] {
			tables[t.ID] = true
		}
	}
	return dropResidentPages(s.wals.realDir, tables)
}
