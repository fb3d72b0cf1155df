package negindex

import (
	"encoding/hex"
	"math/rand"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
)

// BenchmarkRangeIDList lists ranges of 24 items, as the engine does for an
// id list (under 32 items) and, by pairs, for bounds: "chunked" is
// Snapshot.Range (one allocation per 32 hex ids), "per-id" the
// hex.EncodeToString per item it replaced, in the same run (issue 27
// part 3: ~24 % of a NEG-MSG answer's CPU at 1,000,000 events went to
// making these strings).
//
//	go test -run '^$' -bench RangeIDList -benchmem ./core/negindex/
func BenchmarkRangeIDList(b *testing.B) {
	r := rand.New(rand.NewSource(1))
	bld := NewSnapshotBuilder(4096)
	for range 4096 {
		var id [32]byte
		r.Read(id[:])
		bld.Add(nostr.Timestamp(1_700_000_000+r.Intn(1_000_000)), hex.EncodeToString(id[:]))
	}
	s := bld.Snapshot()
	const width = 24
	var sink int
	b.Run("chunked", func(b *testing.B) {
		i := 0
		for b.Loop() {
			for _, it := range s.Range(i, i+width) {
				sink += len(it.ID)
			}
			i = (i + width) % (s.Size() - width)
		}
	})
	b.Run("per-id", func(b *testing.B) {
		i := 0
		for b.Loop() {
			for k := i; k < i+width; k++ {
				it := negentropy.Item{Timestamp: nostr.Timestamp(s.items[k].ts), ID: hex.EncodeToString(s.items[k].id[:])}
				sink += len(it.ID)
			}
			i = (i + width) % (s.Size() - width)
		}
	})
	_ = sink
}

// The ids Range lists are the snapshot's, each its own string even when a
// later one is made after the engine kept an earlier one.
func TestRangeIDsStayDistinct(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	bld := NewSnapshotBuilder(100)
	var want []string
	for range 100 {
		var id [32]byte
		r.Read(id[:])
		bld.Add(1_700_000_000, hex.EncodeToString(id[:]))
	}
	s := bld.Snapshot()
	want = s.IDs()
	var kept []string
	for _, it := range s.Range(3, 97) {
		kept = append(kept, it.ID)
	}
	for _, it := range s.Range(0, 100) {
		_ = it // a second listing must not overwrite the first one's strings
	}
	for i, id := range kept {
		if id != want[3+i] {
			t.Fatalf("item %d: %s, want %s", 3+i, id, want[3+i])
		}
	}
	stopped := 0
	for range s.Range(10, 90) {
		if stopped++; stopped == 5 {
			break
		}
	}
	if stopped != 5 {
		t.Fatalf("Range went on after the loop stopped: %d", stopped)
	}
}
