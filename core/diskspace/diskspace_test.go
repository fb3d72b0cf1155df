package diskspace

import (
	"errors"
	"strings"
	"testing"
)

func TestGuard(t *testing.T) {
	var free uint64
	var ferr error
	g := New(t.TempDir(), 100<<20, func(string) (uint64, error) { return free, ferr })
	free = 200 << 20
	if err := g.Check(); err != nil {
		t.Fatalf("200 MiB free, 100 kept: %v", err)
	}
	free = 99 << 20
	if err := g.Check(); err == nil || !strings.HasPrefix(err.Error(), "error: this server is low on disk space (99 MiB free, it keeps 100 MiB)") {
		t.Fatalf("99 MiB free, 100 kept: %v", err)
	}
	ferr = errors.New("statfs failed")
	if err := g.Check(); err != nil {
		t.Fatalf("a failed measurement refused a write: %v", err)
	}
	if err := New(t.TempDir(), 0, func(string) (uint64, error) { return 0, nil }).Check(); err != nil {
		t.Fatalf("min 0 is no check: %v", err)
	}
	var none *Guard
	if err := none.Check(); err != nil {
		t.Fatal(err)
	}
}

// The real measurement of a real directory: something is free where tests
// run, and a directory that does not exist is an error.
func TestFree(t *testing.T) {
	if n, err := Free(t.TempDir()); err != nil || n == 0 {
		t.Fatalf("Free(tempdir) = %d, %v", n, err)
	}
	if _, err := Free("/does/not/exist"); err == nil {
		t.Fatal("Free of a missing directory")
	}
}
