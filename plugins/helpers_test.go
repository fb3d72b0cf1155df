package plugins

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/internal/testlog"
	"github.com/grasp-dev/grasp/internal/testwait"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func write(t testing.TB, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func testLogger(buf *testlog.Buffer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Output: buf, Level: hclog.Debug})
}

func acceptSpec(name, file string) Spec { return Spec{Name: name, File: file} }

// mustSet builds a Set. Unless the test brings its own clock, the clock is a
// fake that never moves, so no wall-clock deadline can fire on a loaded
// machine; deadline behaviour is tested by advancing a fake clock.
func mustSet(t testing.TB, opts Options) *Set {
	t.Helper()
	if opts.Clock == nil {
		opts.Clock = clock.NewFake(t0)
	}
	s, err := NewSet(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func testEvent(kind int, content string) *nostr.Event {
	return &nostr.Event{
		ID:        "ee" + string(bytes.Repeat([]byte("0"), 62)),
		PubKey:    "aa" + string(bytes.Repeat([]byte("1"), 62)),
		CreatedAt: nostr.Timestamp(t0.Unix()),
		Kind:      kind,
		Tags:      nostr.Tags{{"d", "repo"}, {"clone", "https://git.example.com/npub1x/repo.git"}, {"relays", "wss://git.example.com"}},
		Content:   content,
		Sig:       "ff",
	}
}

func clientMeta() policy.Meta {
	return policy.Meta{Source: policy.SourceClient, Remote: "203.0.113.7", ReceivedAt: t0}
}

// fakeStore counts calls and can block until its ctx ends.
type fakeStore struct {
	mu      sync.Mutex
	filters []nostr.Filter
	n       int64
	block   bool
	entered chan struct{}
}

func (f *fakeStore) Count(ctx context.Context, flt nostr.Filter) (int64, error) {
	f.mu.Lock()
	f.filters = append(f.filters, flt)
	f.mu.Unlock()
	if f.block {
		if f.entered != nil {
			close(f.entered)
		}
		<-ctx.Done()
		return 0, ctx.Err()
	}
	return f.n, nil
}

// runAsync runs Accept in a goroutine so a test can move the fake clock.
func runAsync(s *Set, evt *nostr.Event) <-chan policy.Verdict {
	ch := make(chan policy.Verdict, 1)
	go func() { ch <- s.Accept(context.Background(), evt, clientMeta()) }()
	return ch
}

func waitVerdict(t *testing.T, ch <-chan policy.Verdict) policy.Verdict {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-testwait.After(t):
		t.Fatal("no verdict: the plugin call was not interrupted")
	}
	return policy.Verdict{}
}
