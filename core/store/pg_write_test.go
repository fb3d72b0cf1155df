package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fiatjaf/eventstore"
	"github.com/nbd-wtf/go-nostr"
	dto "github.com/prometheus/client_model/go"

	"github.com/grasp-dev/grasp/internal/pgtest"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// Issue 27 part 1: on PostgreSQL the events saved while a commit is under
// way go together in the next one (one INSERT, one transaction, one WAL
// flush), each caller answered only after the commit holding its event.
func TestPGGroupCommitIssue27Part1(t *testing.T) {
	ctx := context.Background()
	url := pgtest.DB(t)
	s := openTest(t, Options{Backend: BackendPostgres, PostgresURL: url})
	db, err := sql.Open("postgres", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Hold inserts back: the first save (the leader) waits in its INSERT
	// while the others queue behind it.
	lock, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback()
	if _, err := lock.Exec(`LOCK TABLE event IN SHARE MODE`); err != nil {
		t.Fatal(err)
	}
	const n = 50
	evts := make([]*nostr.Event, n+1)
	for i := range evts {
		evts[i] = signed(t, testKey(i%7+1), 1621, nostr.Timestamp(1000+i), fmt.Sprintf("issue %d", i), nostr.Tag{"a", "30617:x:repo"})
	}
	results := make([]error, n+2)
	var wg sync.WaitGroup
	save := func(slot int, evt *nostr.Event) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[slot] = s.Events().SaveEvent(ctx, evt)
		}()
	}
	save(0, evts[0])
	testwait.For(t, "the first insert to wait on the lock", func() bool {
		var waiting int
		db.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO event%'`).Scan(&waiting)
		return waiting == 1
	})
	for i := 1; i <= n; i++ {
		save(i, evts[i])
	}
	save(n+1, evts[1]) // the same event twice in one batch
	queued := func() int {
		p := &s.pg().inserts
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.queue)
	}
	testwait.For(t, "the other saves to queue", func() bool { return queued() == n+1 })
	for i, err := range results[1:] {
		if err != nil {
			t.Fatalf("save %d answered (%v) before its commit could happen", i+1, err)
		}
	}
	if err := lock.Commit(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i := 0; i <= n; i++ {
		if i == 1 {
			continue
		}
		if results[i] != nil {
			t.Errorf("save %d: %v, want stored", i, results[i])
		}
	}
	if a, b := results[1], results[n+1]; !(a == nil && b == eventstore.ErrDupEvent || a == eventstore.ErrDupEvent && b == nil) {
		t.Errorf("the event saved twice in one batch got %v and %v, want one stored and one duplicate", a, b)
	}
	var batches dto.Metric
	if err := s.m.batchOps.Write(&batches); err != nil {
		t.Fatal(err)
	}
	if got := batches.GetHistogram().GetSampleCount(); got != 2 {
		t.Errorf("%d inserts for %d saves, want 2: the leader's and one for all that waited", got, n+2)
	}
	got := query(t, ctx, s.Events(), nostr.Filter{Kinds: []int{1621}, Limit: 500})
	if len(got) != n+1 {
		t.Errorf("%d events stored, want %d", len(got), n+1)
	}
}

// Issue 27 part 1: an event PostgreSQL refuses in a batch fails its own
// caller only; the others of the batch are stored and told so, and
// duplicates (stored before, or twice in the batch) are told so.
func TestPGGroupCommitFailsOnlyTheRefusedEvent(t *testing.T) {
	ctx := context.Background()
	s := openPostgresTest(t, Options{})
	before := signed(t, testKey(1), 1, 1000, "stored before")
	mustSave(t, s.Events(), before)
	good := signed(t, testKey(2), 1, 1001, "good")
	good2 := signed(t, testKey(3), 1, 1002, "good too")
	// PostgreSQL's text holds no NUL character: its insert fails
	bad := signed(t, testKey(4), 1, 1003, "nul \x00 inside")
	batch := []*pgInsert{}
	for _, e := range []*nostr.Event{good, bad, good2, good, before} {
		batch = append(batch, &pgInsert{evt: e, done: make(chan error, 1)})
	}
	s.pg().insertBatch(ctx, batch)
	want := []string{"stored", "failed", "stored", "duplicate", "duplicate"}
	for i, r := range batch {
		var got string
		select {
		case err := <-r.done:
			switch {
			case err == nil:
				got = "stored"
			case errors.Is(err, eventstore.ErrDupEvent):
				got = "duplicate"
			default:
				got = "failed"
			}
		case <-time.After(time.Minute):
			t.Fatalf("request %d was never answered", i)
		}
		if got != want[i] {
			t.Errorf("request %d (%q): %s, want %s", i, r.evt.Content, got, want[i])
		}
	}
	for _, e := range []*nostr.Event{good, good2} {
		if got := query(t, ctx, s.Events(), nostr.Filter{IDs: []string{e.ID}}); len(got) != 1 {
			t.Errorf("%q answered stored but not found", e.Content)
		}
	}
}

// Issue 27 part 1: privacy records put together go in one statement; a
// record put twice keeps the later value, and a record PostgreSQL refuses
// fails its own caller only.
func TestPGGroupCommitOfPrivacyRecords(t *testing.T) {
	ctx := context.Background()
	s := openPostgresTest(t, Options{})
	a, b := strings.Repeat("a", 64), strings.Repeat("b", 64)
	batch := []*pgInsert{
		{id: a, val: []byte(`["30617:x:one"]`)},
		{id: "nul \x00 inside", val: []byte(`[]`)},
		{id: b, val: []byte(`["30617:x:two"]`)},
		{id: a, val: []byte(`["30617:x:three"]`)},
	}
	for _, r := range batch {
		r.done = make(chan error, 1)
	}
	s.pg().putPrivacyBatch(ctx, batch)
	for i, r := range batch {
		err := <-r.done
		if (err != nil) != (i == 1) {
			t.Errorf("record %d (%q): %v", i, r.id, err)
		}
	}
	got, err := s.Privacy().Events(ctx, []string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if string(got[a]) != `["30617:x:three"]` || string(got[b]) != `["30617:x:two"]` {
		t.Errorf("records %q, want a's later value and b's", got)
	}
	// and through the API, concurrently: every record answered is stored
	var wg sync.WaitGroup
	ids := make([]string, 40)
	for i := range ids {
		ids[i] = fmt.Sprintf("%064x", i+1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Privacy().PutEvent(ctx, ids[i], []byte(`["r"]`)); err != nil {
				t.Errorf("put %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if got, err := s.Privacy().Events(ctx, ids); err != nil || len(got) != len(ids) {
		t.Errorf("%d of %d records stored (%v)", len(got), len(ids), err)
	}
}

// Issue 27 part 1: a caller that leads the group commit returns its own
// answer once its write's batch committed, although more writes keep
// arriving: the rest of the queue goes on in another goroutine. On the
// first version the leader served the queue until it was empty, so under a
// steady stream of writes its own OK never came.
func TestPGGroupLeaderReturnsWhileWritesKeepComing(t *testing.T) {
	var g pgGroup
	started := make(chan []*pgInsert)
	release := make(chan struct{})
	run := func(_ context.Context, batch []*pgInsert) {
		started <- batch
		<-release
		for _, r := range batch {
			r.done <- nil
		}
	}
	ctx := context.Background()
	leaderDone := make(chan error, 1)
	go func() { leaderDone <- g.do(ctx, &pgInsert{id: "leader"}, run) }()
	if b := <-started; len(b) != 1 || b[0].id != "leader" {
		t.Fatalf("first batch %v, want the leader's write alone", b)
	}
	// two writes queue behind the running batch
	followers := make(chan error, 2)
	for _, id := range []string{"a", "b"} {
		go func() { followers <- g.do(ctx, &pgInsert{id: id}, run) }()
	}
	testwait.For(t, "two writes queued", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return len(g.queue) == 2
	})
	release <- struct{}{} // the leader's batch commits
	second := <-started   // the queued writes' batch starts, and is held
	if len(second) != 2 {
		t.Fatalf("second batch has %d writes, want 2", len(second))
	}
	select {
	case err := <-leaderDone:
		if err != nil {
			t.Fatalf("leader's write: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the leading caller did not return while the next batch ran: its OK waits for the others' writes")
	}
	release <- struct{}{}
	for range 2 {
		if err := <-followers; err != nil {
			t.Fatalf("queued write: %v", err)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.leading || len(g.queue) != 0 {
		t.Fatalf("after the queue drained: leading %v, %d queued", g.leading, len(g.queue))
	}
}
