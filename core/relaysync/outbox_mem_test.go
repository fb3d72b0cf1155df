package relaysync

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
)

// Issue 27 part 2: the outbox state keeps one entry per root event in the
// store (a million on an archive). Its ids arrive as strings sliced from
// the store's decoded records, which hold an event's id and author in one
// 128-byte string: keeping the hex id kept that string alive, ~140 B per
// root event more than the id's 32 bytes, and was the largest per-event
// term of an idle server's heap after a restart.
func TestOutboxHeapPerRootEvent(t *testing.T) {
	m, err := NewManager(Options{Conns: &fakeConns{}, Health: &fakeHealth{}, Self: []string{selfURL}, Rand: func() float64 { return 0.5 },
		Config: config.Sync{Outbox: true, DisconnectCheckInterval: config.Duration(time.Hour)}}, env.Env{Metrics: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	const n = 20_000
	author := strings.Repeat("ab", 32)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	// What the store's decoder hands over: id and author in one string.
	ids := make([]string, n)
	for i := range ids {
		ids[i] = (fmt.Sprintf("%064x", i) + author)[:64]
	}
	addr := "30617:" + author + ":repo"
	// The manager's actor is not running (Run was not called): the test
	// goroutine is the only one touching its state.
	func() {
		changed := map[RepoID]struct{}{}
		for _, id := range ids {
			if _, err := m.repos.AddRootEvent(addr, id); err != nil {
				t.Error(err)
				return
			}
			m.addParticipants(id, []string{author}, changed)
		}
		ids = nil // only the manager's state may keep them now
		runtime.GC()
		runtime.ReadMemStats(&after)
	}()
	if m.outbox.rootCount != n { // also keeps m alive until after the measure
		t.Fatalf("outbox holds %d roots, want %d", m.outbox.rootCount, n)
	}
	perRoot := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
	t.Logf("%.0f B of heap per root event (repository index and outbox)", perRoot)
	// The id (32 B) in the repository index with its lookup slot, the
	// root's one participant held in 4 bytes by its position and the
	// root's 4-byte position in its participant's list: ~59 B (~89 with a
	// slice per root for its participants, ~150 with the index's lookup a
	// map of 8-byte prefixes, core/idtable). Keying the outbox on the
	// 32-byte id as well (a map of ids and 32 bytes per participant and
	// root) cost ~263; keeping the hex strings (and the decoded record's
	// string behind them) ~350.
	if perRoot > 75 {
		t.Errorf("%.0f B of heap per root event, want at most 75", perRoot)
	}
}

// Issue 27 part 2: a root event has a few participants (its author, the
// repliers and the keys they p-tag), and each was a 16-byte string header
// in the root's list and in its repository's people. They are 4-byte ids
// of keys held once.
func TestOutboxHeapPerParticipant(t *testing.T) {
	m, err := NewManager(Options{Conns: &fakeConns{}, Health: &fakeHealth{}, Self: []string{selfURL}, Rand: func() float64 { return 0.5 },
		Config: config.Sync{Outbox: true, OutboxParticipantsPerRoot: 10, DisconnectCheckInterval: config.Duration(time.Hour)}}, env.Env{Metrics: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	const n, perRoot, pool, repos = 20_000, 4, 200, 10
	keys := make([]string, pool)
	for i := range keys {
		keys[i] = fmt.Sprintf("%064x", 1_000_000+i)
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%064x", i)
	}
	people := make([][]string, n)
	for i := range people {
		for j := 0; j < perRoot; j++ {
			people[i] = append(people[i], keys[(i*7+j*13)%pool])
		}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	changed := map[RepoID]struct{}{}
	for i, id := range ids {
		if _, err := m.repos.AddRootEvent(repoAddr(i%repos), id); err != nil {
			t.Fatal(err)
		}
		m.addParticipants(id, people[i][:1], changed) // the root's author
		m.addParticipants(id, people[i][1:], changed) // its replies
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(ids) // counted in before: keep them out of the difference
	runtime.KeepAlive(people)
	if m.outbox.rootCount != n {
		t.Fatalf("outbox holds %d roots, want %d", m.outbox.rootCount, n)
	}
	ei, _ := m.rootPosition(ids[n-1])
	var got []string
	for _, k := range m.outbox.participantsOf(ei, &[1]uint32{}) {
		got = append(got, m.outbox.keys.key(k))
	}
	if !slices.Equal(got, people[n-1]) {
		t.Fatalf("participants of the last root: %v, want %v", got, people[n-1])
	}
	heap := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
	t.Logf("%.0f B of heap per root event with %d participants (repository index and outbox)", heap, perRoot)
	// The id in the repository index with its lookup slot and owner, the
	// root's list of 4 key ids (16 B, a 24-byte slice header and its
	// 4-byte reference by position) and its position in 4 participants'
	// lists (16 B), with append's slack: ~121
	// (~175 with the index's lookup a map of prefixes). With the
	// participants as strings (16-byte headers): ~224.
	if heap > 150 {
		t.Errorf("%.0f B of heap per root event with %d participants, want at most 150", heap, perRoot)
	}
}
