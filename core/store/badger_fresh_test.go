package store

import (
	"context"
	"log"
	"os"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/internal/testlog"
)

// A store created now logs "store created" and nothing that reads as data
// loss (eventstore's "migration 5: delete all indexes" is for old
// databases); events saved in it are found by their indexes after a reopen.
func TestFreshStoreSaysCreatedNotMigrated(t *testing.T) {
	var std testlog.Buffer
	log.SetOutput(&std)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
	// the store logs from its own goroutines too (the negentropy index
	// loads in the background): the buffer is read under the same lock
	var ours testlog.Buffer
	lg := hclog.New(&hclog.LoggerOptions{Output: &ours, Level: hclog.Info})

	dir := t.TempDir()
	s, err := New(Options{Dir: dir}, env.Env{Log: lg})
	if err != nil {
		t.Fatal(err)
	}
	sk := nostr.GeneratePrivateKey()
	evt := signed(t, sk, 1621, 1767323045, "hello", nostr.Tag{"t", "x"})
	if err := s.Events().SaveEvent(context.Background(), evt); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(std.String(), "migration") || strings.Contains(ours.String(), "migration") {
		t.Errorf("a fresh store logged a migration:\n%s%s", std.String(), ours.String())
	}
	if !strings.Contains(ours.String(), "store created") {
		t.Errorf("no \"store created\" line:\n%s", ours.String())
	}

	ours.Reset()
	s = openTestEnv(t, Options{Dir: dir}, env.Env{Log: lg})
	if strings.Contains(ours.String(), "store created") || strings.Contains(std.String(), "migration") {
		t.Errorf("reopening logged creation or a migration:\n%s%s", std.String(), ours.String())
	}
	got := query(t, context.Background(), s.Events(), nostr.Filter{Tags: nostr.TagMap{"t": {"x"}}})
	if len(got) != 1 || got[0].ID != evt.ID {
		t.Errorf("query by tag after reopen = %v, want the saved event", got)
	}
}
