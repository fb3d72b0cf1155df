package negindex

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"

	"github.com/grasp-dev/grasp/core/negguard"
)

// side is one end of a session under test: either engine, with what its
// Haves/HaveNots channels delivered.
type side struct {
	start     func() string
	reconcile func(string) (string, error)
	haves     []string
	haveNots  []string
	wg        sync.WaitGroup
}

func (sd *side) drain(haves, haveNots <-chan string) {
	sd.wg.Add(2)
	go func() {
		defer sd.wg.Done()
		for id := range haves {
			sd.haves = append(sd.haves, id)
		}
	}()
	go func() {
		defer sd.wg.Done()
		for id := range haveNots {
			sd.haveNots = append(sd.haveNots, id)
		}
	}()
}

func goNostrSide(s *Snapshot, frame int) *side {
	n := negentropy.New(s, frame)
	sd := &side{start: n.Start, reconcile: n.Reconcile}
	sd.drain(n.Haves, n.HaveNots)
	return sd
}

func ourSide(t testing.TB, s *Snapshot, frame int) *side {
	e, err := NewEngine(s, frame)
	if err != nil {
		t.Fatal(err)
	}
	sd := &side{start: e.Start, reconcile: e.Reconcile}
	sd.drain(e.Haves(), e.HaveNots())
	return sd
}

// session runs client against server to the end and returns every message
// in order.
func session(t testing.TB, client, server *side) []string {
	t.Helper()
	msg := client.start()
	transcript := []string{msg}
	for round := 0; ; round++ {
		if round > 10_000 {
			t.Fatal("session does not end")
		}
		reply, err := server.reconcile(msg)
		if err != nil {
			t.Fatalf("server: %v", err)
		}
		transcript = append(transcript, reply)
		msg, err = client.reconcile(reply)
		if err != nil {
			t.Fatalf("client: %v", err)
		}
		transcript = append(transcript, msg)
		if msg == "" {
			client.wg.Wait()
			return transcript
		}
	}
}

// randomPair makes two sets sharing most items: timestamps from a narrow
// range (so bounds need id prefixes) and, now and then, ids sharing a long
// prefix (so minimal bounds grow).
func randomPair(rng *rand.Rand) (client, server *Snapshot, onlyClient, onlyServer []string) {
	n := rng.IntN(3000)
	spread := 1 + rng.IntN(200)
	cb, sb := NewSnapshotBuilder(n), NewSnapshotBuilder(n)
	// now and then the client holds next to nothing: its first message is
	// then one id list, and the server's answer fills frames with ids
	few := rng.IntN(4) == 0
	var prev [32]byte
	for range n {
		var id [32]byte
		for i := range id {
			id[i] = byte(rng.Uint32())
		}
		if rng.IntN(20) == 0 {
			copy(id[:rng.IntN(20)], prev[:])
		}
		prev = id
		ts := nostr.Timestamp(1_700_000_000 + rng.IntN(spread))
		h := hex.EncodeToString(id[:])
		switch r := rng.IntN(100); {
		case few && r < 98:
			sb.Add(ts, h)
			onlyServer = append(onlyServer, h)
		case r < 3:
			cb.Add(ts, h)
			onlyClient = append(onlyClient, h)
		case r < 6:
			sb.Add(ts, h)
			onlyServer = append(onlyServer, h)
		default:
			cb.Add(ts, h)
			sb.Add(ts, h)
		}
	}
	return cb.Snapshot(), sb.Snapshot(), onlyClient, onlyServer
}

// sorted is ids sorted, each once: go-nostr's engine can deliver an id
// twice when a frame limit cut an id list short (the rest of the range is
// listed again after the peer splits it), and so does ours; catchup keeps
// each id once.
func sorted(ids []string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}

// TestEngineMatchesGoNostr is the differential test of the engine: on
// random pairs of sets and frame limits, our client against our server
// sends exactly the messages go-nostr's client and server send over the
// same sets, and both find exactly the true differences. Mixed pairs (ours
// against go-nostr's) are run too.
func TestEngineMatchesGoNostr(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 27))
	frames := []int{0, 4096, 5000, 20_000, 60_000}
	for round := range 60 {
		cs, ss, onlyClient, onlyServer := randomPair(rng)
		frame := frames[rng.IntN(len(frames))]
		t.Run(fmt.Sprintf("%d-%d-%d", round, cs.Size(), frame), func(t *testing.T) {
			want := session(t, goNostrSide(cs, frame), goNostrSide(ss, frame))
			for _, pair := range []struct {
				name           string
				client, server *side
			}{
				{"ours", ourSide(t, cs, frame), ourSide(t, ss, frame)},
				{"our client", ourSide(t, cs, frame), goNostrSide(ss, frame)},
				{"our server", goNostrSide(cs, frame), ourSide(t, ss, frame)},
			} {
				got := session(t, pair.client, pair.server)
				if !slices.Equal(got, want) {
					t.Fatalf("%s: transcript of %d messages differs from go-nostr's %d", pair.name, len(got), len(want))
				}
				if h := sorted(pair.client.haves); !slices.Equal(h, sorted(onlyClient)) {
					t.Fatalf("%s: client found %d ids the server lacks, want %d", pair.name, len(h), len(onlyClient))
				}
				if h := sorted(pair.client.haveNots); !slices.Equal(h, sorted(onlyServer)) {
					t.Fatalf("%s: client found %d ids it lacks, want %d", pair.name, len(h), len(onlyServer))
				}
			}
		})
	}
}

// TestEngineRefusesMalformedMessages: what go-nostr's engine panics or errs
// on is an error here, never a panic.
func TestEngineRefusesMalformedMessages(t *testing.T) {
	s := snapshotOf(t, 100)
	for _, msg := range []string{
		"",
		"6",
		"zz",
		"61" + "01",                        // a bound timestamp, then nothing
		"61" + "0000" + "07",               // unknown mode
		"61" + "0000" + "01" + "00",        // truncated fingerprint
		"61" + "0000" + "02" + "05" + "00", // id list longer than the message
		"61" + "0021",                      // a bound id of 33 bytes
		"61" + "05" + "00" + "00" + "02" + "00" + "01" + "00" + "00", // second bound below the first
		"61" + "ffffffffffffffffffffff7f",
	} {
		e, err := NewEngine(s, 0)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := e.Reconcile(msg); err == nil {
			t.Errorf("Reconcile(%q) = %q, want an error", msg, out)
		}
	}
	if _, err := NewEngine(s, 4095); err == nil {
		t.Error("a frame limit below 4096 was taken")
	}
}

// TestEngineServerAnswersOtherVersions: a server answers a message of
// another protocol version with the version it speaks, as go-nostr's does;
// a client refuses it.
func TestEngineServerAnswersOtherVersions(t *testing.T) {
	s := snapshotOf(t, 10)
	e, _ := NewEngine(s, 0)
	if out, err := e.Reconcile("62"); err != nil || out != "61" {
		t.Fatalf("server: %q, %v; want \"61\"", out, err)
	}
	c, _ := NewEngine(s, 0)
	c.Start()
	if _, err := c.Reconcile("62"); err == nil {
		t.Fatal("a client took another protocol version")
	}
}

func snapshotOf(t testing.TB, n int) *Snapshot {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(n), 1))
	b := NewSnapshotBuilder(n)
	for range n {
		var id [32]byte
		for i := range id {
			id[i] = byte(rng.Uint32())
		}
		b.Add(nostr.Timestamp(1_700_000_000+rng.IntN(50)), hex.EncodeToString(id[:]))
	}
	return b.Snapshot()
}

// goNostrReconcile runs go-nostr's engine on one message; ok false when it
// panicked (it is not hardened: grasp wraps it in a recover).
func goNostrReconcile(n *negentropy.Negentropy, msg string) (out string, err error, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	out, err = n.Reconcile(msg)
	return out, err, true
}

// FuzzEngineMatchesGoNostr feeds a server (and a client, after its first
// message) of both engines the same message that passed negguard.Check,
// over the same random set: the answers are equal, or both engines refuse
// it. Ours never panics.
//
//	go test -run '^$' -fuzz FuzzEngineMatchesGoNostr -fuzztime 20000x ./core/negindex
func FuzzEngineMatchesGoNostr(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 9))
	for range 8 {
		cs, ss, _, _ := randomPair(rng)
		c := negentropy.New(cs, 4096)
		first := c.Start()
		b, _ := hex.DecodeString(first)
		f.Add(uint16(ss.Size()), false, b)
		reply, _ := negentropy.New(ss, 4096).Reconcile(first)
		b, _ = hex.DecodeString(reply)
		f.Add(uint16(cs.Size()), true, b)
	}
	f.Add(uint16(40), false, []byte{0x61, 0, 0})
	f.Fuzz(func(t *testing.T, n uint16, client bool, raw []byte) {
		s := snapshotOf(t, int(n%600))
		msg, err := negguard.Check(hex.EncodeToString(raw))
		if err != nil {
			return
		}
		theirs := negentropy.New(s, 4096)
		ours, _ := NewEngine(s, 4096)
		if client {
			if a, b := theirs.Start(), ours.Start(); a != b {
				t.Fatalf("first messages differ")
			}
		}
		var wg sync.WaitGroup
		for _, ch := range []<-chan string{theirs.Haves, theirs.HaveNots, ours.haves, ours.haveNots} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range ch {
				}
			}()
		}
		want, wantErr, ok := goNostrReconcile(theirs, msg)
		got, gotErr := ours.Reconcile(msg)
		if ok && (wantErr != nil) != (gotErr != nil) {
			t.Fatalf("go-nostr: %q, %v; ours: %q, %v", want, wantErr, got, gotErr)
		}
		if ok && wantErr == nil && got != want {
			t.Fatalf("answers differ:\ngo-nostr %s\nours     %s", want, got)
		}
		if got != "" || gotErr != nil || !client {
			close(ours.haves)
			close(ours.haveNots)
		}
		if !ok || want != "" || wantErr != nil || !client {
			close(theirs.Haves)
			close(theirs.HaveNots)
		}
		wg.Wait()
	})
}

// TestLowerBoundGallopsToTheSameIndex: the galloping search finds what a
// binary search over the whole range finds, for bounds between, on and
// past the items, from every start.
func TestLowerBoundGallopsToTheSameIndex(t *testing.T) {
	s := snapshotOf(t, 300)
	rng := rand.New(rand.NewPCG(5, 5))
	for range 5000 {
		begin := rng.IntN(s.Size() + 1)
		var b negBound
		switch i := rng.IntN(s.Size()); rng.IntN(3) {
		case 0:
			b = s.itemBound(i)
		case 1:
			b = negBound{ts: int64(s.items[i].ts)}
			b.len = rng.IntN(4)
			copy(b.id[:b.len], s.items[i].id[:])
		default:
			b = negBound{ts: int64(s.items[i].ts) + int64(rng.IntN(3)) - 1}
		}
		if got, want := s.lowerBound(begin, s.Size(), &b), s.searchBound(begin, s.Size(), &b); got != want {
			t.Fatalf("lowerBound(%d) = %d, binary search %d", begin, got, want)
		}
	}
	inf := infiniteBound
	if got := s.lowerBound(0, s.Size(), &inf); got != s.Size() {
		t.Fatalf("the infinite bound: %d, want %d", got, s.Size())
	}
}
