package hosting

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// brokenStore fails every read.
type brokenStore struct{}

func (brokenStore) QueryEvents(context.Context, nostr.Filter) (chan *nostr.Event, error) {
	return nil, errors.New("disk gone")
}

// A failed store read reads as nothing, logged: a stored PR cannot be
// found (no tip to check a push against) rather than half-read.
func TestFailedStoreReadIsNothing(t *testing.T) {
	r := newRig(t)
	r.h.events = brokenStore{}
	if tip, ok, err := r.h.PRTip(context.Background(), strings.Repeat("a", 64)); ok || tip != "" || err != nil {
		t.Fatalf("PRTip over a failed read = %q, %v, %v; want none", tip, ok, err)
	}
	if log := r.logs.Take(); !strings.Contains(log, "query store: error=\"disk gone\"") {
		t.Fatalf("the failed read is not logged:\n%s", log)
	}
}
