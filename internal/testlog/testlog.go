// Package testlog owns the log sink tests read while the code under test
// may still be logging from its own goroutines. It holds no test
// assertions and is never imported by non-test code.
package testlog

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer whose writes and reads are serialised, so a
// logger writing from background goroutines and a test reading the log do
// not race.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is everything written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Reset forgets what was written.
func (l *Buffer) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Reset()
}

// Take returns what was written since the last Take or Reset and forgets it.
func (l *Buffer) Take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.b.String()
	l.b.Reset()
	return out
}
