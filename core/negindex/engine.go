package negindex

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
)

// Engine is NIP-77's negentropy protocol (version 1) over a Snapshot: the
// same messages, byte for byte, that go-nostr's negentropy.Negentropy makes
// over the same set (engine_test.go and FuzzEngineMatchesGoNostr hold it to
// that), so it speaks to strfry, go-nostr and khatru as that engine does.
//
// go-nostr's engine reads and writes hex strings throughout: every id it
// lists or bounds with is hex-encoded by the storage, every bound it reads
// is compared as a string, and a client's id lists go through a map of hex
// strings. At 1,000,000 events with 1 % missing that was ~0.3 s of the
// server's CPU and ~0.2 s of the client's per session, on the chain of
// rounds both sides wait on (issue 27 part 3). This one decodes a message
// once, works on the snapshot's raw 32-byte ids and running sums, and
// encodes its answer once.
//
// An Engine is one side of one session and is not safe for concurrent use.
// A message that is malformed yields an error, never a panic (gate and
// catchup still pass every peer message through negguard.Check first).
type Engine struct {
	s          *Snapshot
	frameLimit int
	isClient   bool
	lastIn     int64
	lastOut    int64

	haves, haveNots chan string

	theirs [][32]byte // a client's scratch for one id list
}

const (
	negProtocolV1 = 0x61
	negBuckets    = 16
	negFPSize     = 16
	// negInfinity is the infinite bound's timestamp, as go-nostr writes it.
	negInfinity = math.MaxInt64

	modeSkip        = 0
	modeFingerprint = 1
	modeIDList      = 2
)

// NewEngine is a session's engine over s. frameLimit bounds the bytes of
// one message (0: unbounded; below 4,096 it is refused, as go-nostr does).
func NewEngine(s *Snapshot, frameLimit int) (*Engine, error) {
	switch {
	case frameLimit == 0:
		frameLimit = math.MaxInt
	case frameLimit < 4096:
		return nil, fmt.Errorf("negentropy frame limit %d is below 4096", frameLimit)
	}
	return &Engine{s: s, frameLimit: frameLimit,
		haves: make(chan string, negBuckets*4), haveNots: make(chan string, negBuckets*4)}, nil
}

// Haves and HaveNots are a client's findings, hex ids as go-nostr's engine
// delivers them: what it has that the peer lacks, and what the peer has that
// it lacks (an id can come twice when a frame limit cut a list short). Both
// are closed when the session ends. The caller drains them concurrently
// with Reconcile, which blocks once 64 ids wait in one.
func (e *Engine) Haves() <-chan string { return e.haves }

// HaveNots: see Haves.
func (e *Engine) HaveNots() <-chan string { return e.haveNots }

// Reconciler is one side of a NIP-77 session: Engine over a Snapshot,
// go-nostr's engine over any other set (a client's items that do not fit a
// Snapshot, a backend's own storage).
type Reconciler interface {
	// Start is a client's first message.
	Start() string
	// Reconcile answers the peer's message; "" ends a client's session.
	Reconcile(msg string) (string, error)
	Haves() <-chan string
	HaveNots() <-chan string
}

// NewReconciler is the engine for a session over st with frames of at most
// frameLimit bytes (0: unbounded, else at least 4,096).
func NewReconciler(st negentropy.Storage, frameLimit int) (Reconciler, error) {
	if s, ok := st.(*Snapshot); ok {
		return NewEngine(s, frameLimit)
	}
	if frameLimit != 0 && frameLimit < 4096 {
		return nil, fmt.Errorf("negentropy frame limit %d is below 4096", frameLimit)
	}
	return goNostrEngine{negentropy.New(st, frameLimit)}, nil
}

// goNostrEngine is go-nostr's engine as a Reconciler. It is not hardened
// against crafted messages: callers check them with negguard and recover.
type goNostrEngine struct{ n *negentropy.Negentropy }

func (g goNostrEngine) Start() string                        { return g.n.Start() }
func (g goNostrEngine) Reconcile(msg string) (string, error) { return g.n.Reconcile(msg) }
func (g goNostrEngine) Haves() <-chan string                 { return g.n.Haves }
func (g goNostrEngine) HaveNots() <-chan string              { return g.n.HaveNots }

// negBound is a bound as the protocol carries it: a timestamp and an id
// prefix of at most 32 bytes.
type negBound struct {
	ts  int64
	id  [32]byte
	len int
}

var infiniteBound = negBound{ts: negInfinity}

// Start is a client's first message (hex).
func (e *Engine) Start() string {
	e.isClient = true
	out := make([]byte, 0, 1+min(len(e.s.items), 64)*48)
	out = append(out, negProtocolV1)
	out = e.splitRange(out, 0, len(e.s.items), infiniteBound)
	return hex.EncodeToString(out)
}

// Reconcile answers the peer's message msg (lowercase hex). A client's
// empty answer means the session is over (Haves and HaveNots are closed).
func (e *Engine) Reconcile(msg string) (string, error) {
	in := make([]byte, len(msg)/2)
	if _, err := hex.Decode(in, []byte(msg)); err != nil || len(msg)%2 != 0 {
		return "", errors.New("negentropy message is not hex")
	}
	out, err := e.reconcile(in)
	if err != nil {
		return "", err
	}
	if len(out) == 1 && e.isClient {
		close(e.haves)
		close(e.haveNots)
		return "", nil
	}
	return hex.EncodeToString(out), nil
}

var errNegTruncated = errors.New("negentropy message is truncated")

type negReader struct {
	b []byte
	i int
}

func (r *negReader) left() int { return len(r.b) - r.i }

func (r *negReader) byte() (byte, error) {
	if r.i >= len(r.b) {
		return 0, errNegTruncated
	}
	r.i++
	return r.b[r.i-1], nil
}

func (r *negReader) bytes(n int) ([]byte, error) {
	if n < 0 || n > r.left() {
		return nil, errNegTruncated
	}
	r.i += n
	return r.b[r.i-n : r.i], nil
}

// varint reads the protocol's big-endian base-128 integer, as go-nostr
// does (no bound on its length beyond int's wrap, which negguard refuses).
func (r *negReader) varint() (int, error) {
	res := 0
	for {
		b, err := r.byte()
		if err != nil {
			return 0, err
		}
		res = res<<7 | int(b&127)
		if b&128 == 0 {
			return res, nil
		}
	}
}

func (e *Engine) readBound(r *negReader) (negBound, error) {
	delta, err := r.varint()
	if err != nil {
		return negBound{}, fmt.Errorf("failed to decode bound timestamp: %w", err)
	}
	var b negBound
	if delta == 0 {
		b.ts = negInfinity
	} else {
		b.ts = e.lastIn + int64(delta-1)
	}
	e.lastIn = b.ts
	n, err := r.varint()
	if err != nil {
		return negBound{}, fmt.Errorf("failed to decode bound length: %w", err)
	}
	if n > 32 {
		return negBound{}, fmt.Errorf("bound id of %d bytes", n)
	}
	id, err := r.bytes(n)
	if err != nil {
		return negBound{}, fmt.Errorf("failed to read bound id: %w", err)
	}
	b.len = copy(b.id[:], id)
	return b, nil
}

func appendVarint(out []byte, n int) []byte {
	if n == 0 {
		return append(out, 0)
	}
	var buf [10]byte
	i := len(buf)
	for n != 0 {
		i--
		buf[i] = byte(n & 127)
		n >>= 7
	}
	for j := i; j < len(buf)-1; j++ {
		buf[j] |= 128
	}
	return append(out, buf[i:]...)
}

func (e *Engine) appendBound(out []byte, b negBound) []byte {
	if b.ts == negInfinity {
		e.lastOut = negInfinity
		out = append(out, 0)
	} else {
		delta := b.ts - e.lastOut
		e.lastOut = b.ts
		out = appendVarint(out, int(delta+1))
	}
	out = appendVarint(out, b.len)
	return append(out, b.id[:b.len]...)
}

// itemBound is the bound that is the whole item at i.
func (s *Snapshot) itemBound(i int) negBound {
	return negBound{ts: int64(s.items[i].ts), id: s.items[i].id, len: 32}
}

// minimalBound is the shortest bound above prev and not above curr, as
// go-nostr makes it: the timestamp alone when they differ, else curr's id
// up to the first byte that differs within the first 16 (17 bytes when those
// are all equal).
func minimalBound(prev, curr *item) negBound {
	b := negBound{ts: int64(curr.ts)}
	if curr.ts != prev.ts {
		return b
	}
	shared := 0
	for shared < 16 && curr.id[shared] == prev.id[shared] {
		shared++
	}
	b.len = shared + 1
	copy(b.id[:b.len], curr.id[:b.len])
	return b
}

func compareBounds(a, b *negBound) int {
	switch {
	case a.ts < b.ts:
		return -1
	case a.ts > b.ts:
		return 1
	}
	return bytes.Compare(a.id[:a.len], b.id[:b.len])
}

// lowerBound is the first index in [begin, end) whose item is not below b.
// A message's bounds ascend and most are a few items apart, so it gallops
// from begin (1, 2, 4, … items on) before its binary search: a full binary
// search over the set per bound was 18 % of a 1 % session at 1,000,000.
func (s *Snapshot) lowerBound(begin, end int, b *negBound) int {
	lo := begin // every item before lo is below b
	for step := 1; begin+step < end; step *= 2 {
		if !s.items[begin+step-1].below(b) {
			end = begin + step
			break
		}
		if !s.items[begin+step].below(b) {
			return begin + step
		}
		lo = begin + step + 1
	}
	return s.searchBound(lo, end, b)
}

// below reports whether it sorts before the bound b.
func (it *item) below(b *negBound) bool {
	ts := int64(it.ts)
	if ts != b.ts {
		return ts < b.ts
	}
	return bytes.Compare(it.id[:], b.id[:b.len]) < 0
}

// searchBound is lowerBound by binary search alone.
func (s *Snapshot) searchBound(begin, end int, b *negBound) int {
	idx, _ := slices.BinarySearchFunc(s.items[begin:end], b, func(it item, b *negBound) int {
		ts := int64(it.ts)
		switch {
		case ts < b.ts:
			return -1
		case ts > b.ts:
			return 1
		}
		return bytes.Compare(it.id[:], b.id[:b.len])
	})
	return begin + idx
}

// fingerprintOf is NIP-77's fingerprint of [begin, end): the first 16 bytes
// of the SHA-256 of the ids' sum and their count.
func (s *Snapshot) fingerprintOf(begin, end int) [negFPSize]byte {
	sum := s.rangeSum(begin, end)
	var buf [32 + 10]byte
	for i := range sum {
		binary.LittleEndian.PutUint64(buf[8*i:], sum[i])
	}
	h := sha256.Sum256(appendVarint(buf[:32], end-begin))
	return [negFPSize]byte(h[:negFPSize])
}

func (e *Engine) reconcile(in []byte) ([]byte, error) {
	e.lastIn, e.lastOut = 0, 0 // both reset for each message
	r := negReader{b: in}
	full := make([]byte, 0, 2500)
	full = append(full, negProtocolV1)
	pv, err := r.byte()
	if err != nil {
		return nil, fmt.Errorf("failed to read pv: %w", err)
	}
	if pv != negProtocolV1 {
		if e.isClient {
			return nil, fmt.Errorf("unsupported negentropy protocol version %v", pv)
		}
		// a server answers with the version it speaks
		return full, nil
	}
	s := e.s
	size := len(s.items)
	var prevBound, lastRead negBound
	prevIndex := 0
	skipping := false // coalescing ranges into one skip
	var partial []byte
	for r.left() > 0 {
		partial = partial[:0]
		finishSkip := func() {
			if skipping {
				skipping = false
				partial = e.appendBound(partial, prevBound)
				partial = append(partial, modeSkip)
			}
		}
		currBound, err := e.readBound(&r)
		if err != nil {
			return nil, fmt.Errorf("failed to decode bound: %w", err)
		}
		if compareBounds(&currBound, &lastRead) < 0 {
			// negguard refuses these too; checked here so that a bound
			// written back can never go below the one before it
			return nil, errors.New("bounds out of order")
		}
		lastRead = currBound
		mode, err := r.varint()
		if err != nil {
			return nil, fmt.Errorf("failed to decode mode: %w", err)
		}
		lower := prevIndex
		upper := s.lowerBound(prevIndex, size, &currBound)
		switch mode {
		case modeSkip:
			skipping = true
		case modeFingerprint:
			theirs, err := r.bytes(negFPSize)
			if err != nil {
				return nil, fmt.Errorf("failed to read fingerprint: %w", err)
			}
			if ours := s.fingerprintOf(lower, upper); bytes.Equal(theirs, ours[:]) {
				skipping = true
			} else {
				finishSkip()
				partial = e.splitRange(partial, lower, upper, currBound)
			}
		case modeIDList:
			n, err := r.varint()
			if err != nil {
				return nil, fmt.Errorf("failed to decode number of ids: %w", err)
			}
			if n < 0 || n > r.left()/32 {
				return nil, fmt.Errorf("failed to read id list of %d: %w", n, errNegTruncated)
			}
			list, _ := r.bytes(32 * n)
			if e.isClient {
				e.compare(list, lower, upper)
				skipping = true // the peer listed its ids: this range is done
				break
			}
			// a server answers with its own ids for the range, as many as fit
			finishSkip()
			endBound := currBound
			responses := 0
			for i := lower; i < upper; i++ {
				if e.frameLimit-200 < len(full)+32*responses {
					endBound = s.itemBound(i)
					upper = i
					break
				}
				responses++
			}
			partial = e.appendBound(partial, endBound)
			partial = append(partial, modeIDList)
			partial = appendVarint(partial, responses)
			for i := lower; i < lower+responses; i++ {
				partial = append(partial, s.items[i].id[:]...)
			}
			full = append(full, partial...)
			partial = partial[:0]
		default:
			return nil, fmt.Errorf("unexpected mode %d", mode)
		}
		if e.frameLimit-200 < len(full)+len(partial) {
			// the frame is full: what is left is one fingerprint, from the
			// end of this range on, that the peer splits again
			fp := s.fingerprintOf(upper, size)
			full = e.appendBound(full, infiniteBound)
			full = append(full, modeFingerprint)
			full = append(full, fp[:]...)
			break
		}
		full = append(full, partial...)
		prevIndex = upper
		prevBound = currBound
	}
	return full, nil
}

// compare delivers a client's findings for one range: the ids of [lower,
// upper) the peer did not list (Haves) and the listed ids not in it
// (HaveNots), each once.
func (e *Engine) compare(list []byte, lower, upper int) {
	theirs := e.theirs[:0]
	for i := 0; i+32 <= len(list); i += 32 {
		theirs = append(theirs, [32]byte(list[i:i+32]))
	}
	slices.SortFunc(theirs, func(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) })
	theirs = slices.Compact(theirs)
	matched := make([]bool, len(theirs))
	for i := lower; i < upper; i++ {
		id := &e.s.items[i].id
		j, found := slices.BinarySearchFunc(theirs, id, func(a [32]byte, b *[32]byte) int { return bytes.Compare(a[:], b[:]) })
		if found {
			matched[j] = true
			continue
		}
		e.haves <- hex.EncodeToString(id[:])
	}
	for j := range theirs {
		if !matched[j] {
			e.haveNots <- hex.EncodeToString(theirs[j][:])
		}
	}
	e.theirs = theirs
}

// splitRange appends the description of [lower, upper) up to upperBound:
// its ids when there are fewer than 32, else 16 fingerprints of near-equal
// buckets, each up to the minimal bound after it.
func (e *Engine) splitRange(out []byte, lower, upper int, upperBound negBound) []byte {
	s := e.s
	n := upper - lower
	if n < negBuckets*2 {
		out = e.appendBound(out, upperBound)
		out = append(out, modeIDList)
		out = appendVarint(out, n)
		for i := lower; i < upper; i++ {
			out = append(out, s.items[i].id[:]...)
		}
		return out
	}
	per, extra := n/negBuckets, n%negBuckets
	curr := lower
	for i := range negBuckets {
		size := per
		if i < extra {
			size++
		}
		fp := s.fingerprintOf(curr, curr+size)
		curr += size
		next := upperBound
		if curr != upper {
			next = minimalBound(&s.items[curr-1], &s.items[curr])
		}
		out = e.appendBound(out, next)
		out = append(out, modeFingerprint)
		out = append(out, fp[:]...)
	}
	return out
}
