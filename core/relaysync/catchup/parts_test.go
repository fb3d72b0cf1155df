package catchup

import (
	"context"
	"testing"

	"github.com/fiatjaf/eventstore/slicestore"
	"github.com/nbd-wtf/go-nostr"
)

func TestLabelReadsOnlyTheVerb(t *testing.T) {
	for in, want := range map[string]string{
		`["EVENT","s",{}]`:              "EVENT",
		` [ "NEG-ERROR","s","CLOSED"]`:  "NEG-ERROR",
		`["NEG-ERR","s","blocked: x"]`:  "NEG-ERR",
		`{"EVENT":1}`:                   "",
		`["`:                            "",
		`[1,2]`:                         "",
		`["AVERYLONGVERBTHATISNOTONE"]`: "",
		``:                              "",
	} {
		if got := label([]byte(in)); got != want {
			t.Errorf("label(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSplitHalvesTheFirstList(t *testing.T) {
	f := nostr.Filter{Kinds: []int{1}, Authors: []string{"a", "b", "c"}, Tags: nostr.TagMap{"e": {"x", "y"}}}
	a, b, ok := split(f)
	if !ok || len(a.Authors) != 1 || len(b.Authors) != 2 || len(a.Tags["e"]) != 2 {
		t.Fatalf("split authors: %+v %+v %v", a, b, ok)
	}
	a.Authors = append(a.Authors, "z") // halves must not share backing arrays
	if b.Authors[0] != "b" {
		t.Fatalf("halves alias: %v", b.Authors)
	}
	f = nostr.Filter{Kinds: []int{1}, Tags: nostr.TagMap{"e": {"x", "y"}, "a": {"q"}}}
	a, b, ok = split(f)
	if !ok || len(a.Tags["e"]) != 1 || len(b.Tags["e"]) != 1 || f.Tags["e"][1] != "y" {
		t.Fatalf("split tags: %+v %+v %v (input %+v)", a, b, ok, f)
	}
	if _, _, ok := split(nostr.Filter{Kinds: []int{1}, Tags: nostr.TagMap{"a": {"q"}}}); ok {
		t.Fatal("split a filter with no list longer than one")
	}
}

func TestFallbackReasonsMapToBoundedLabels(t *testing.T) {
	for in, want := range map[string]string{
		"notice: failed to parse envelope": "notice",
		"error: blocked: too big":          "error",
		"timeout: no negentropy answer":    "timeout",
		"connection: read: EOF":            "connection",
		"protocol: bad varint":             "protocol",
		"anything a peer says":             "other",
	} {
		if got := fallbackKind(in); got != want {
			t.Errorf("fallbackKind(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]bool{"CLOSED": true, "closed: idle": true, " Closed": true, "blocked: closed": false} {
		if isClosedReason(in) != want {
			t.Errorf("isClosedReason(%q) != %v", in, want)
		}
	}
}

func TestDrainIDsBoundsAndFilters(t *testing.T) {
	ch := make(chan string, 10)
	ids := []string{corpusID(1), corpusID(2), "not hex", corpusID(1), corpusID(3)}
	for _, id := range ids {
		ch <- id
	}
	close(ch)
	got := drainIDs(ch, make(chan struct{}), 2)
	if len(got) != 2 {
		t.Fatalf("drained %v, want the first 2 distinct valid ids", got)
	}
	stop := make(chan struct{})
	close(stop)
	if got := drainIDs(make(chan string), stop, 0); len(got) != 0 {
		t.Fatalf("drain after stop returned %v", got)
	}
}

func corpusID(n int) string {
	const hex = "0123456789abcdef"
	b := make([]byte, 64)
	for i := range b {
		b[i] = hex[(n+i)%16]
	}
	return string(b)
}

// StoreLocal drains the whole query and stops on a cancelled ctx.
func TestStoreLocalListsEverything(t *testing.T) {
	// slicestore caps even negentropy queries at MaxLimit (badger and lmdb
	// do not once SetNegentropy is set), so it is configured above the set.
	store := &slicestore.SliceStore{MaxLimit: 1000}
	if err := store.Init(); err != nil {
		t.Fatal(err)
	}
	evts := corpus(t, 120, 0)
	for _, e := range evts {
		if err := store.SaveEvent(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	items, err := StoreLocal{Store: store}.Items(context.Background(), allKinds)
	if err != nil || len(items) != len(evts) {
		t.Fatalf("items %d err %v, want %d", len(items), err, len(evts))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (StoreLocal{Store: store}).Items(ctx, allKinds); err == nil {
		t.Fatal("no error from a cancelled listing")
	}
}

func TestOptionsDefaults(t *testing.T) {
	o := Options{FrameLimit: 100, Retries: -1}.withDefaults()
	if o.FrameLimit != 4096 || o.Retries != 0 || o.IDsPerReq != 250 || o.PageLimit != 500 || o.RoundTimeout <= 0 || o.RetryDelay <= 0 {
		t.Fatalf("defaults %+v", o)
	}
	if (Options{}).withDefaults().Retries != 1 {
		t.Fatal("default retries is not 1")
	}
}
