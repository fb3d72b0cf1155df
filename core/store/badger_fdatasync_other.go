//go:build !linux

package store

import "os"

func fdatasync(f *os.File) error { return f.Sync() }
