package negindex

import (
	"encoding/hex"
	"math/rand"
	"runtime"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
)

// repoAddr is the repository the per-repository sessions reconcile; it is
// not one of corpusLikeEvents' 1,000.
const repoAddr = "30617:0000000000000000000000000000000000000000000000000000000000000001:fixed"

// repoStore is n corpus-like events plus repoEvents of repoAddr spread
// over the same time span, loaded into an index.
func repoStore(n, repoEvents int) (*Index, []Event) {
	events := corpusLikeEvents(n)
	r := rand.New(rand.NewSource(99))
	repo := make([]Event, repoEvents)
	for i := range repo {
		e := &repo[i]
		r.Read(e.ID[:])
		e.CreatedAt = uint32(1_700_000_000 + r.Intn(n*10))
		e.Kind = 1621
		e.Tags = [][2]string{{"a", repoAddr}}
	}
	ix := New(nil)
	ix.Load(append(events, repo...))
	return ix, repo
}

// repoSession is one NIP-77 session by #a for repoAddr, the client
// holding 90 % of the repository's events: what the server allocates for
// it (Select and every Reconcile), the entries Select looked at and the
// ids its fingerprints added.
func repoSession(tb testing.TB, ix *Index, client negentropy.Storage, want int) (bytes uint64, visited, added int) {
	f := nostr.Filter{Tags: nostr.TagMap{"a": {repoAddr}}}
	cneg := negentropy.New(client, 60_000)
	learned := countHaveNots(cneg)
	msg := cneg.Start()
	var before, after runtime.MemStats
	var snap *Snapshot
	for msg != "" {
		runtime.ReadMemStats(&before)
		if snap == nil {
			var ok bool
			var err error
			if snap, ok, err = ix.Select(f, 1_000_000); !ok || err != nil {
				tb.Fatal(ok, err)
			}
		}
		sneg := negentropy.New(snap, 500_000)
		out, err := sneg.Reconcile(msg)
		runtime.ReadMemStats(&after)
		bytes += after.TotalAlloc - before.TotalAlloc
		if err != nil {
			tb.Fatal(err)
		}
		if msg, err = cneg.Reconcile(out); err != nil {
			tb.Fatal(err)
		}
	}
	if k := <-learned; k != want {
		tb.Fatalf("the client learned of %d missing events, want %d", k, want)
	}
	return bytes, snap.visited, snap.added
}

// repoClient holds the repository's events except every 10th.
func repoClient(repo []Event) (negentropy.Storage, int) {
	b := NewSnapshotBuilder(len(repo))
	missing := 0
	for i := range repo {
		if i%10 == 5 {
			missing++
			continue
		}
		b.Add(nostr.Timestamp(repo[i].CreatedAt), hex.EncodeToString(repo[i].ID[:]))
	}
	return b.Snapshot(), missing
}

// A NEG-OPEN by #a for one repository costs what its events cost, not what
// the store holds (issue 27 part 3): with the same 300-event repository in
// stores of 20,000 and 200,000 events, the server's session looks at the
// same entries, adds the same ids into fingerprints and allocates as much,
// within a small margin (measured in bytes and entries, never in time).
func TestRepoSessionIndependentOfStoreSize(t *testing.T) {
	const repoEvents = 300
	var bytes [2]uint64
	var visited, added [2]int
	for i, n := range []int{20_000, 200_000} {
		ix, repo := repoStore(n, repoEvents)
		client, missing := repoClient(repo)
		// the least of three: a GC cycle's own allocations can land in one
		bytes[i] = ^uint64(0)
		for range 3 {
			b, v, a := repoSession(t, ix, client, missing)
			bytes[i], visited[i], added[i] = min(bytes[i], b), v, a
		}
		t.Logf("%d events: %d B allocated per session, %d entries visited, %d ids added", n, bytes[i], visited[i], added[i])
	}
	if visited[0] != repoEvents || visited[1] != repoEvents {
		t.Errorf("Select visited %d and %d entries, want the repository's %d", visited[0], visited[1], repoEvents)
	}
	if added[1] != added[0] {
		t.Errorf("fingerprints added %d ids at 20,000 events and %d at 200,000, want the same", added[0], added[1])
	}
	if float64(bytes[1]) > 1.25*float64(bytes[0])+4096 {
		t.Errorf("a session allocated %d B at 200,000 events against %d B at 20,000", bytes[1], bytes[0])
	}
}

// BenchmarkRepoSession is the server's side of a NEG-OPEN by #a for one
// 300-event repository, the client holding 90 % of it, in stores of
// 20,000, 200,000 and 1,000,000 events: B/op, entries visited and ids
// added do not grow with the store.
//
//	go test -run '^$' -bench RepoSession -benchmem ./core/negindex/
func BenchmarkRepoSession(b *testing.B) {
	for _, n := range []int{20_000, 200_000, 1_000_000} {
		b.Run(sizeName(n), func(b *testing.B) {
			ix, repo := repoStore(n, 300)
			client, missing := repoClient(repo)
			var bytes uint64
			var visited, added int
			b.ResetTimer()
			for b.Loop() {
				bytes, visited, added = repoSession(b, ix, client, missing)
			}
			b.ReportMetric(float64(bytes), "server-B/session")
			b.ReportMetric(float64(visited), "entries-visited")
			b.ReportMetric(float64(added), "ids-added")
		})
	}
}
