package testlog

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// Concurrent writers and a reader: run under -race, a Buffer without its
// lock fails; every line written is kept.
func TestBufferConcurrentWritesAndReads(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				fmt.Fprintf(&b, "w%d-%d\n", i, j)
			}
		})
	}
	for range 50 {
		_ = b.String()
	}
	wg.Wait()
	if n := strings.Count(b.Take(), "\n"); n != 800 {
		t.Fatalf("%d lines kept, want 800", n)
	}
	if b.String() != "" {
		t.Fatal("Take did not forget what it returned")
	}
	b.Write([]byte("x"))
	b.Reset()
	if b.String() != "" {
		t.Fatal("Reset kept the log")
	}
}
