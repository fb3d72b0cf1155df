package memlimit

import (
	"bytes"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

const mib = 1 << 20

func TestAdvice(t *testing.T) {
	for _, c := range []struct {
		live    uint64
		limit   int64
		over    bool
		suggest uint64
	}{
		{300 * mib, 768 * mib, false, 660}, // a million events: room to double
		{350 * mib, 768 * mib, true, 770},  // past 45 %: the limit paces the collector
		{900 * mib, 768 * mib, true, 1980}, // five million events on the default
		{900 * mib, 0, false, 0},           // no limit: nothing to advise
	} {
		over, suggest := Advice(c.live, c.limit)
		if over != c.over || suggest != c.suggest {
			t.Errorf("Advice(%d MiB, %d MiB) = %v, %d; want %v, %d", c.live/mib, c.limit/mib, over, suggest, c.over, c.suggest)
		}
	}
}

// The operator reads one warning when the store outgrows the limit, another
// only when the heap has grown a quarter more, and a new one after it went
// back under and crossed again.
func TestWatchWarnsOnceAndAgainWhenTheHeapKeepsGrowing(t *testing.T) {
	var out bytes.Buffer
	live := uint64(300 * mib)
	w := &Watch{
		Log:   hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Warn}),
		Live:  func() uint64 { return live },
		Limit: func() int64 { return 768 * mib },
	}
	steps := []struct {
		live uint64
		warn bool
	}{
		{300, false}, {400, true}, {450, false}, {499, false}, {500, true}, {300, false}, {400, true},
	}
	for _, s := range steps {
		live = s.live * mib
		if got := w.Check(); got != s.warn {
			t.Fatalf("live %d MiB: warned %v, want %v", s.live, got, s.warn)
		}
	}
	if n := strings.Count(out.String(), "outgrown the memory limit"); n != 3 {
		t.Fatalf("%d warnings logged, want 3:\n%s", n, out.String())
	}
	if !strings.Contains(out.String(), "suggested_mb=880") || !strings.Contains(out.String(), "key=server.memory_limit_mb") {
		t.Fatalf("the warning lacks the key or the value to set:\n%s", out.String())
	}
}

func TestLimitReadsTheRuntimesLimit(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(old)
	debug.SetMemoryLimit(512 * mib)
	if got := Limit(); got != 512*mib {
		t.Fatalf("Limit() = %d, want %d", got, 512*mib)
	}
	debug.SetMemoryLimit(1<<63 - 1)
	if got := Limit(); got != 0 {
		t.Fatalf("Limit() with none set = %d, want 0", got)
	}
	runtime.GC() // the live heap is what the last collection marked
	if LiveHeap() == 0 {
		t.Fatal("LiveHeap() = 0 in a running program")
	}
}
