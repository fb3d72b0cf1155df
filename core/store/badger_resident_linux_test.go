package store

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// storeResident sums the resident bytes of this process's mappings of files
// in dir, from /proc/self/smaps.
func storeResident(t *testing.T, dir string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var total int64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if !strings.HasSuffix(fields[0], ":") {
			in = len(fields) >= 6 && strings.HasPrefix(fields[5], dir+"/")
			continue
		}
		if in && fields[0] == "Rss:" {
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			total += kb << 10
		}
	}
	return total
}

// Badger's files are read and written through mmap; dropping the pages of
// its tables and sealed value-log files returns them (issue 27 part 2), and
// everything reads back. Measured in resident bytes.
func TestSealedStoreFilesDropped(t *testing.T) {
	s := openTest(t, Options{UnsafeNoSync: true, ValueLogFileMB: 1, ResidentFileMB: -1,
		Limits: config.Limits{MaxLimit: 5000, DefaultLimit: 100}})
	g := newRandStore(1)
	const n = 600 // ~5 MB in ~5 value-log files of 1 MiB
	for i := range n {
		evt := g.event(nostr.Timestamp(1_700_000_000 + i))
		evt.Kind, evt.Content = 1621, randHex(g.r, 4096)
		mustSave(t, s.Events(), evt)
	}
	if got := len(query(t, context.Background(), s.Events(), nostr.Filter{Limit: n})); got != n {
		t.Fatalf("read %d events, want %d", got, n)
	}
	before := storeResident(t, s.badger().wals.realDir)
	advised := s.badger().dropResident()
	after := storeResident(t, s.badger().wals.realDir)
	t.Logf("store files resident: %d KiB before, %d KiB after dropping %d KiB of mappings", before>>10, after>>10, advised>>10)
	if advised == 0 || after > before/3 {
		t.Fatalf("resident store file pages: %d KiB before, %d KiB after", before>>10, after>>10)
	}
	got := query(t, context.Background(), s.Events(), nostr.Filter{Limit: n})
	if len(got) != n {
		t.Fatalf("read %d events after dropping pages, want %d", len(got), n)
	}
	for _, e := range got {
		if len(e.Content) != 8192 {
			t.Fatalf("event %s read back damaged", e.ID)
		}
	}
}

// Dropping resident pages while events are written (memtable flushes and
// compactions on a 1 MiB memtable), deleted and garbage-collected from the
// value log, and read, loses nothing.
func TestDropResidentWhileTheStoreChanges(t *testing.T) {
	s := openTest(t, Options{UnsafeNoSync: true, MemTableMB: 1, ValueLogFileMB: 1, ResidentFileMB: -1,
		Limits: config.Limits{MaxLimit: 5000, DefaultLimit: 100}})
	g := newRandStore(2)
	var evts []*nostr.Event
	for i := range 600 {
		evt := g.event(nostr.Timestamp(1_700_000_000 + i))
		evt.Kind, evt.Tags, evt.Content = 1621, nil, randHex(g.r, 2048)
		evts = append(evts, evt)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i, e := range evts {
			mustSave(t, s.Events(), e)
			if i%3 == 2 {
				if err := s.Events().DeleteEvent(context.Background(), evts[i-1]); err != nil {
					t.Errorf("delete: %v", err)
					return
				}
			}
		}
	}()
	drops := 0
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		s.badger().dropResident()
		drops++
		if drops%10 == 0 {
			if err := s.Maintain(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		query(t, context.Background(), s.Events(), nostr.Filter{Kinds: []int{1621}, Limit: 200})
	}
	s.badger().dropResident()
	got := query(t, context.Background(), s.Events(), nostr.Filter{Limit: 5000})
	if want := len(evts) - len(evts)/3; len(got) != want {
		t.Fatalf("read %d events, want %d", len(got), want)
	}
	byID := map[string]*nostr.Event{}
	for _, e := range evts {
		byID[e.ID] = e
	}
	for _, e := range got {
		if w := byID[e.ID]; w == nil || w.String() != e.String() {
			t.Fatalf("event %s read back damaged", e.ID)
		}
	}
	t.Logf("%d drops while writing", drops)
}

// Issue 27 part 2: the file-backed resident memory is checked more than once
// a second. Reading a million-event store maps 100-200 MB a second (the
// negentropy index and sync's replay at start-up, queries): checked every
// 10 s, its start-up held 1.1 GB of file pages over a 256 MiB budget.
// Driven by the fake clock: one second on it drops what the reads mapped.
func TestResidentFilesCheckedEverySecond(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	// 1 MiB: this test process maps more than that anyway (its own binary).
	s := openTestEnv(t, Options{UnsafeNoSync: true, ValueLogFileMB: 1, ResidentFileMB: 1,
		Limits: config.Limits{MaxLimit: 5000, DefaultLimit: 100}}, env.Env{Clock: clk})
	if !clk.BlockUntil(1, testwait.Limit(t)) {
		t.Fatal("the resident-memory check never started")
	}
	g := newRandStore(3)
	const n = 600 // ~5 MB in ~5 value-log files of 1 MiB
	for i := range n {
		evt := g.event(nostr.Timestamp(1_700_000_000 + i))
		evt.Kind, evt.Content = 1621, randHex(g.r, 4096)
		mustSave(t, s.Events(), evt)
	}
	if got := len(query(t, context.Background(), s.Events(), nostr.Filter{Limit: n})); got != n {
		t.Fatalf("read %d events, want %d", got, n)
	}
	dir := s.badger().wals.realDir
	before := storeResident(t, dir)
	clk.Advance(time.Second)
	testwait.For(t, "the store's sealed file pages dropped one second after they were read", func() bool {
		return storeResident(t, dir) < before/3
	})
}
