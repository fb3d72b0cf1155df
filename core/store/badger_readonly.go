package store

import (
	"errors"
	"strings"
	"syscall"
)

// A full disk is survivable (issue 24 part 7, audit 2026-11 F12): badger
// opened for writing writes its LOCK pid file, a fresh memtable and
// value-log file, and compacts; on a disk with no room left that open
// fails, and a write into one of its mmapped files would end the process
// with SIGBUS. Opened read-only it writes nothing under its directory
// (badger: a shared directory lock, no pid file, no memtable, no
// compaction), so the server starts, serves what it has, and refuses
// every write with ReadOnly's reason. Getting out of it takes a restart
// once space is freed: the server logs what to free.

// noSpace reports whether err says the disk is full.
func noSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) ||
		strings.Contains(err.Error(), "no space left on device")
}
