package relay

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
)

// The cheap limits of the write path measure an event's JSON without
// serialising it (issue 27 part 5): the bound used instead is never below
// the real size, and an event near max_event_bytes is still measured
// exactly, so the limit refuses what it refused before, to the byte.

// limitsRelay is a relay that is never served: checkEvent's owner.
func limitsRelay(t *testing.T, l config.Limits) *Server {
	t.Helper()
	store := openBadger(t, t.TempDir(), false)
	t.Cleanup(store.Close)
	s, err := New(Options{Events: store, Limits: l, PublicURL: "http://relay.invalid"}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// awkwardString draws n bytes among those JSON escapes longest: control
// characters, quotes, backslashes, U+2028, invalid UTF-8, plain ASCII.
func awkwardString(r *rand.Rand, n int) string {
	pieces := []string{"\x00", "\x01", "\x08", "\t", "\n", "\x0b", "\x1f", `"`, `\`, "\u2028", "\u2029", "\xff", "\xc3", "é", "a", "<", "&"}
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

func TestJSONSizeBoundIsNeverBelowTheJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 5))
	for i := range 2000 {
		evt := &nostr.Event{
			ID: awkwardString(r, r.IntN(70)), PubKey: awkwardString(r, r.IntN(70)), Sig: awkwardString(r, r.IntN(130)),
			Kind: r.IntN(1 << 20), CreatedAt: nostr.Timestamp(r.Int64() - r.Int64()),
			Content: awkwardString(r, r.IntN(400)),
		}
		if i%7 == 0 {
			evt.Kind = -r.IntN(1 << 30)
		}
		for range r.IntN(6) {
			var tag nostr.Tag
			for range r.IntN(4) {
				tag = append(tag, awkwardString(r, r.IntN(40)))
			}
			evt.Tags = append(evt.Tags, tag)
		}
		b, err := evt.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if bound := jsonSizeBound(evt); bound < len(b) {
			t.Fatalf("event %d: bound %d below its JSON's %d bytes: %q", i, bound, len(b), b)
		}
	}
}

// An event of exactly max_event_bytes is taken and one byte more refused,
// also when its content escapes to several times its length.
func TestEventSizeLimitStillExactAtTheBoundary(t *testing.T) {
	k := newKey(t)
	now := time.Now().Unix()
	for _, content := range []string{strings.Repeat("plain ", 60), strings.Repeat("\x01\"\\\u2028", 60)} {
		evt := k.event(t, 1, now, nostr.Tags{{"t", "limit"}}, content)
		b, _ := evt.MarshalJSON()
		l := config.Limits{MaxEventBytes: len(b)}.WithDefaults()
		l.MaxEventBytes = len(b)
		if msg := limitsRelay(t, l).checkEvent(evt); msg != "" {
			t.Errorf("an event of exactly max_event_bytes (%d) was refused: %s", len(b), msg)
		}
		l.MaxEventBytes = len(b) - 1
		msg := limitsRelay(t, l).checkEvent(evt)
		if want := "event too large"; !strings.HasPrefix(msg, want) {
			t.Errorf("an event one byte over max_event_bytes (%d): %q, want %q", len(b)-1, msg, want)
		}
	}
}

// Guard of the cut: the cheap limits of an ordinary event (2 KB of content,
// a few tags, the default limits) allocate nothing; serialising it to
// measure it allocated its size (counted, not timed).
func TestCheckEventAllocatesNothing(t *testing.T) {
	s := limitsRelay(t, config.Limits{}.WithDefaults())
	k := newKey(t)
	evt := k.event(t, 1621, time.Now().Unix(), nostr.Tags{
		{"a", "30617:" + k.PK + ":repo"}, {"p", k.PK}, {"subject", "an issue"}, {"t", "bug"},
	}, strings.Repeat("an issue body of a realistic length, ", 55))
	if msg := s.checkEvent(evt); msg != "" {
		t.Fatalf("refused: %s", msg)
	}
	if n := testing.AllocsPerRun(50, func() { s.checkEvent(evt) }); n > 0 {
		t.Errorf("checkEvent allocated %.0f times per event, want 0", n)
	}
}

// BenchmarkEventSizeCheck compares, on the same 2 KB event in the same
// run, the cheap limits as they are (the size bounded without serialising)
// with the serialisation they did before to measure it:
//
//	go test -run '^$' -bench EventSizeCheck -benchmem ./core/relay/
func BenchmarkEventSizeCheck(b *testing.B) {
	k := newKey(b)
	evt := k.event(b, 1621, time.Now().Unix(), nostr.Tags{
		{"a", "30617:" + k.PK + ":repo"}, {"p", k.PK}, {"subject", "an issue"}, {"t", "bug"},
	}, strings.Repeat("an issue body of a realistic length, ", 55))
	b.Run("bound", func(b *testing.B) {
		for range b.N {
			if jsonSizeBound(evt) > 1<<20 {
				b.Fatal("over")
			}
		}
	})
	b.Run("serialise", func(b *testing.B) {
		for range b.N {
			if j, _ := evt.MarshalJSON(); len(j) > 1<<20 {
				b.Fatal("over")
			}
		}
	})
}
