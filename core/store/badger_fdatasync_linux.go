package store

import (
	"os"
	"syscall"
)

// fdatasync skips the inode timestamp update that fsync would also commit;
// the WAL files are preallocated, so their size does not change.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
