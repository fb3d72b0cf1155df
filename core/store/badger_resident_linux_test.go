package store

import (
	"bufio"
	"context"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
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
	r := rand.New(rand.NewSource(1))
	sk := testKey(0)
	const n = 1200 // ~10 MB in ~10 value-log files of 1 MiB
	for i := range n {
		mustSave(t, s.Events(), signed(t, sk, 1621, nostr.Timestamp(1_700_000_000+i), randHex(r, 4096)))
	}
	if got := len(query(t, context.Background(), s.Events(), nostr.Filter{Limit: n})); got != n {
		t.Fatalf("read %d events, want %d", got, n)
	}
	before := storeResident(t, s.wals.realDir)
	advised := s.dropResident()
	after := storeResident(t, s.wals.realDir)
	t.Logf("store files resident: %d KiB before, %d KiB after dropping %d KiB of mappings", before>>10, after>>10, advised>>10)
	if advised == 0 || after > before/3 {
		t.Fatalf("resident store file pages: %d KiB before, %d KiB after", before>>10, after>>10)
	}
	got := query(t, context.Background(), s.Events(), nostr.Filter{Limit: n})
	if len(got) != n {
		t.Fatalf("read %d events after dropping pages, want %d", len(got), n)
	}
	for _, e := range got {
		if len(e.Content) != 8192 || !e.CheckID() {
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
	r := rand.New(rand.NewSource(2))
	sk := testKey(1)
	var evts []*nostr.Event
	for i := range 1500 {
		evts = append(evts, signed(t, sk, 1621, nostr.Timestamp(1_700_000_000+i), randHex(r, 2048)))
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
		s.dropResident()
		drops++
		if drops%10 == 0 {
			if err := s.Maintain(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		query(t, context.Background(), s.Events(), nostr.Filter{Kinds: []int{1621}, Limit: 200})
	}
	s.dropResident()
	got := query(t, context.Background(), s.Events(), nostr.Filter{Limit: 5000})
	if want := len(evts) - len(evts)/3; len(got) != want {
		t.Fatalf("read %d events, want %d", len(got), want)
	}
	for _, e := range got {
		if !e.CheckID() {
			t.Fatalf("event %s read back damaged", e.ID)
		}
	}
	t.Logf("%d drops while writing", drops)
}
