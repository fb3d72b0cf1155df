package sigcheck

import (
	"encoding/hex"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/internal/testkit"
)

// propertyRounds bounds the random comparison in an ordinary `go test` run
// (each round signs one event and checks it and a mutation of it both
// ways; race_test.go lowers it under -race, where a check costs ~20×);
// `go test -fuzz FuzzCheckAgreesWithGoNostr -fuzztime 20000x` runs the
// open-ended form.
var propertyRounds = 300

// randomText is content or a tag value that exercises the serialisation's
// escaping: every control byte, quotes, backslashes, multi-byte and
// invalid UTF-8, U+2028.
func randomText(r *rand.Rand) string {
	alphabet := []string{"a", "Z", " ", "\"", "\\", "/", "\u2028", "✓", "🚀", "\xff", "\xc3", "\x7f", "<", "&"}
	var b strings.Builder
	for range r.IntN(40) {
		if r.IntN(4) == 0 {
			b.WriteByte(byte(r.IntN(0x20))) // a control byte, \b \t \n \f \r among them
		} else {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
	}
	return b.String()
}

// otherHex replaces the hex digit at i of s by a different lowercase one.
func otherHex(r *rand.Rand, s string, i int) string {
	const digits = "0123456789abcdef"
	b := []byte(s)
	for {
		c := digits[r.IntN(16)]
		if c != b[i] {
			b[i] = c
			return string(b)
		}
	}
}

// mutate returns a copy of evt changed in one of the ways a broken or
// hostile client could change it; other is a valid event of another key.
func mutate(r *rand.Rand, evt, other *nostr.Event) *nostr.Event {
	e := *evt
	e.Tags = make(nostr.Tags, len(evt.Tags))
	for i, tag := range evt.Tags {
		e.Tags[i] = append(nostr.Tag(nil), tag...)
	}
	field := func() *string { return []*string{&e.ID, &e.Sig, &e.PubKey}[r.IntN(3)] }
	switch r.IntN(14) {
	case 0: // unchanged
	case 1:
		f := field()
		*f = otherHex(r, *f, r.IntN(len(*f)))
	case 2: // one digit in upper case (go-nostr accepts upper-case pubkey and sig hex)
		f := field()
		i := r.IntN(len(*f))
		*f = (*f)[:i] + strings.ToUpper((*f)[i:i+1]) + (*f)[i+1:]
	case 3:
		e.Content += randomText(r) + "x"
	case 4:
		e.CreatedAt += nostr.Timestamp(1 + r.IntN(3))
	case 5:
		e.Kind++
	case 6:
		e.Tags = append(e.Tags, nostr.Tag{"t", randomText(r)})
	case 7:
		e.Sig = other.Sig
	case 8: // another key's pubkey with a matching id: the signature is the wrong key's
		e.PubKey = other.PubKey
		e.ID = e.GetID()
	case 9: // a changed event with its id recomputed
		e.Content += "!"
		e.ID = e.GetID()
	case 10: // one digit too few or too many
		f := field()
		if r.IntN(2) == 0 {
			*f = (*f)[:len(*f)-1]
		} else {
			*f += "0"
		}
	case 11: // r or s pushed out of range, or one of them zero
		hi := strings.Repeat("f", 64)
		switch r.IntN(4) {
		case 0:
			e.Sig = hi + e.Sig[64:]
		case 1:
			e.Sig = e.Sig[:64] + hi
		case 2:
			e.Sig = strings.Repeat("0", 64) + e.Sig[64:]
		default:
			e.Sig = e.Sig[:64] + strings.Repeat("0", 64)
		}
	case 12: // a byte that is no hex digit
		f := field()
		i := r.IntN(len(*f))
		*f = (*f)[:i] + string([]byte{"gz -\x00"[r.IntN(5)]}) + (*f)[i+1:]
	default: // a random x-only pubkey (on the curve about half the time) with its id
		b := make([]byte, 32)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		e.PubKey = hex.EncodeToString(b)
		e.ID = e.GetID()
	}
	return &e
}

// TestCheckAgreesWithGoNostrOnRandomEvents: a property test over random
// events (random kinds, times, tags and contents full of characters the
// serialisation escapes) and random mutations of their ids, signatures,
// keys and bodies: Event answers exactly what go-nostr's CheckID and
// CheckSignature answer, every time, and twice (the second answer reads the
// author's key from the table). Fixed seed, bounded rounds.
func TestCheckAgreesWithGoNostrOnRandomEvents(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 5))
	signers := make([]testkit.Key, 6)
	for i := range signers {
		signers[i] = testkit.NewKey(t)
	}
	counts := map[Result]int{}
	var prev *nostr.Event
	for round := range propertyRounds {
		k := signers[r.IntN(len(signers))]
		tags := nostr.Tags{}
		for range r.IntN(4) {
			tags = append(tags, nostr.Tag{randomText(r), randomText(r)})
		}
		evt := k.Event(t, r.IntN(40000), nostr.Timestamp(r.Int64N(1<<40)), tags, randomText(r))
		if prev == nil {
			prev = evt
		}
		for _, e := range []*nostr.Event{evt, mutate(r, evt, prev)} {
			want := goNostr(e)
			for pass := range 2 {
				if got := Event(e); got != want {
					t.Fatalf("round %d pass %d: Event = %d, go-nostr = %d for %#v", round, pass, got, want, e)
				}
			}
			counts[want]++
		}
		prev = evt
	}
	t.Logf("answers: valid %d, bad id %d, bad signature %d", counts[Valid], counts[BadID], counts[BadSignature])
	if counts[Valid] <= propertyRounds || counts[BadID] < propertyRounds/10 || counts[BadSignature] < propertyRounds/10 {
		t.Fatalf("the random cases do not cover every answer: %v", counts)
	}
}

// FuzzCheckAgreesWithGoNostr: the fuzzer picks an event's body and a list
// of byte edits to its signed id, signature and pubkey; Event must answer
// what go-nostr answers. `go test` runs the seeds; run it open-ended with
// `go test -run '^$' -fuzz FuzzCheckAgreesWithGoNostr -fuzztime 20000x ./core/sigcheck`.
func FuzzCheckAgreesWithGoNostr(f *testing.F) {
	k := testkit.NewKey(f)
	f.Add("hello", "t", int64(1700000000), 1, []byte{})
	f.Add("line\nquote\"back\\slash\x01\x1f\u2028", "subject", int64(0), 1621, []byte{1, 3, 'a'})
	f.Add("\xff\xfe", "a", int64(-1), 30617, []byte{0, 0, 'A', 2, 63, 'F'})
	f.Add("", "", int64(1<<40), 0, []byte{1, 64, 'f', 1, 127, '0'})
	f.Fuzz(func(t *testing.T, content, tag string, at int64, kind int, edits []byte) {
		evt := testkit.Sign(t, k.SK, &nostr.Event{Kind: kind, CreatedAt: nostr.Timestamp(at), Tags: nostr.Tags{{tag, content}}, Content: content})
		// each edit is (field, position, byte)
		for i := 0; i+2 < len(edits) && i < 30; i += 3 {
			f := []*string{&evt.ID, &evt.Sig, &evt.PubKey}[int(edits[i])%3]
			if len(*f) == 0 {
				continue
			}
			b := []byte(*f)
			b[int(edits[i+1])%len(b)] = edits[i+2]
			*f = string(b)
		}
		want := goNostr(evt)
		for pass := range 2 {
			if got := Event(evt); got != want {
				t.Fatalf("pass %d: Event = %d, go-nostr = %d for %#v", pass, got, want, evt)
			}
		}
	})
}

// TestCheckConcurrentAuthors: goroutines checking valid and forged events of
// the same and of different authors at once all get go-nostr's answers (run
// under -race: the key table is shared).
func TestCheckConcurrentAuthors(t *testing.T) {
	var evs []*nostr.Event
	var want []Result
	for i := range 8 {
		k := testkit.NewKey(t)
		evt := k.Event(t, 1, nostr.Timestamp(1700000000+i), nil, "x")
		forged := *evt
		forged.Sig = otherHex(rand.New(rand.NewPCG(uint64(i), 1)), forged.Sig, 70)
		evs = append(evs, evt, &forged)
		want = append(want, Valid, BadSignature)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 3 * len(evs) {
				j := (i + g) % len(evs)
				if got := Event(evs[j]); got != want[j] {
					errs <- "event " + strconv.Itoa(j) + ": " + strconv.Itoa(int(got))
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}
