package store

import (
	"context"
	"sync"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/internal/testkit"
)

var (
	keysOnce sync.Once
	testKeys []string
)

// testKey returns one of a few fixed secret keys, generated once per run.
func testKey(i int) string {
	keysOnce.Do(func() {
		for range 8 {
			testKeys = append(testKeys, nostr.GeneratePrivateKey())
		}
	})
	return testKeys[i%len(testKeys)]
}

// signed is an event by sk with its tags given one by one, the shape most
// store tests need; testkit signs it.
func signed(t testing.TB, sk string, kind int, createdAt nostr.Timestamp, content string, tags ...nostr.Tag) *nostr.Event {
	t.Helper()
	return testkit.Sign(t, sk, &nostr.Event{Kind: kind, CreatedAt: createdAt, Content: content, Tags: nostr.Tags(tags)})
}

func openTest(t testing.TB, opts Options) *Store {
	t.Helper()
	return openTestEnv(t, opts, env.Env{})
}

func openTestEnv(t testing.TB, opts Options, e env.Env) *Store {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	s, err := New(opts, e)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return s
}

func query(t testing.TB, ctx context.Context, es EventStore, f nostr.Filter) []*nostr.Event {
	t.Helper()
	ch, err := es.QueryEvents(ctx, f)
	if err != nil {
		t.Fatalf("query %v: %v", f, err)
	}
	var out []*nostr.Event
	for e := range ch {
		out = append(out, e)
	}
	return out
}

func mustSave(t testing.TB, es EventStore, evts ...*nostr.Event) {
	t.Helper()
	for _, e := range evts {
		if err := es.SaveEvent(context.Background(), e); err != nil {
			t.Fatalf("save %s: %v", e.ID, err)
		}
	}
}

// badger and pg are the backend of a store a test opened, for the tests
// that look inside it.
func (s *Store) badger() *badgerStore { return s.be.(*badgerStore) }

func (s *Store) pg() *pgStore { return s.be.(*pgStore) }
