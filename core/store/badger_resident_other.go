//go:build !linux

package store

// dropResidentPages is Linux-only (see badger_resident_linux.go).
func dropResidentPages(string, map[uint64]bool) int64 { return 0 }

// residentFileBytes is Linux-only.
func residentFileBytes() int64 { return 0 }
