package main

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/nbd-wtf/go-nostr"
)

// Issue 27 part 6: the corpus index keeps what the benchmark needs of each
// event and reads its JSON from the file when it is sent. Every frame read
// back is the file's line, and every kept field is the event's.
func TestCorpusIndexMatchesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.jsonl")
	if err := generateFile(path, 600, 3, time.Unix(1_760_000_000, 0)); err != nil {
		t.Fatal(err)
	}
	c, err := loadCorpus(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	sc.Scan() // header
	var frame []byte
	repos := 0
	for i := 0; sc.Scan(); i++ {
		line := sc.Bytes()
		if frame, err = c.appendFrame(frame[:0], i); err != nil {
			t.Fatal(err)
		}
		if string(frame) != `["EVENT",`+string(line)+`]` {
			t.Fatalf("frame %d read back differs from the file's line", i)
		}
		var evt nostr.Event
		if err := evt.UnmarshalJSON(line); err != nil {
			t.Fatal(err)
		}
		it := &c.items[i]
		if it.idHex() != evt.ID || c.pubkey(i) != evt.PubKey || int(it.kind) != evt.Kind || it.createdAt != int64(evt.CreatedAt) {
			t.Fatalf("event %d indexed as %s %s %d %d, the file has %s %s %d %d", i, it.idHex(), c.pubkey(i), it.kind, it.createdAt,
				evt.ID, evt.PubKey, evt.Kind, evt.CreatedAt)
		}
		var as []string
		for _, tag := range evt.Tags {
			if len(tag) >= 2 && tag[0] == "a" && !slices.Contains(as, tag[1]) {
				as = append(as, tag[1])
			}
		}
		if got := c.aTags(i); !slices.Equal(got, as) {
			t.Fatalf("event %d: a tags %v, the file has %v", i, got, as)
		}
		if evt.Kind == nip34.KindAnnouncement || evt.Kind == nip34.KindState {
			repos++
			if c.dTag(i) != evt.Tags.GetD() || c.dTag(i) == "" {
				t.Fatalf("event %d: d tag %q, the file has %q", i, c.dTag(i), evt.Tags.GetD())
			}
		}
		if got, err := c.event(i); err != nil || got.Sig != evt.Sig {
			t.Fatalf("event %d decoded from the file: %v", i, err)
		}
	}
	if repos != 2*len(c.hdr.Repos) {
		t.Fatalf("%d announcements and states, %d repositories", repos, len(c.hdr.Repos))
	}
	if len(c.items) != 600 {
		t.Fatalf("%d events indexed, the file has 600", len(c.items))
	}
}

// The benchmark's own memory per corpus event is a small fraction of the
// event's JSON (it held every frame, ~2.3 KB per event, before: 12-18 GB
// for 5,000,000 events): bounded against the corpus's mean event size,
// measured in the same run.
func TestCorpusHeldMemoryPerEvent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.jsonl")
	const n = 3000
	if err := generateFile(path, n, 4, time.Unix(1_760_000_000, 0)); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c, err := loadCorpus(path)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
	runtime.KeepAlive(c)
	t.Logf("%.0f B held per event, mean event JSON %.0f B", held, c.avgEventBytes())
	if held > c.avgEventBytes()/10 {
		t.Fatalf("the loaded corpus holds %.0f B per event, over a tenth of the mean event (%.0f B)", held, c.avgEventBytes())
	}
}
