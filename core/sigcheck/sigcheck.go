// Package sigcheck owns the check of a Nostr event's id and signature on the
// write path: the id is the SHA-256 of the event's serialisation and the
// signature a BIP-340 Schnorr signature of that id by the event's pubkey.
//
// It exists because that check bounds ingest (issue 27 part 5): go-nostr's
// CheckID and CheckSignature serialise and hash the event twice, and btcec's
// pure Go verifier decompresses the author's key (a field square root, ~15 %
// of a verification) twice per event, then computes s·G and e·P apart. Event
// serialises and hashes once. In the default build it verifies with its own
// BIP-340 verifier (verify_go.go, strauss.go, fe.go): R = s·G − e·P as one
// multi-scalar multiplication (one chain of ~128 doublings for four
// half-length scalars: e split by the curve's endomorphism, s by its bits) on
// its own 4×64-bit field arithmetic, the odd multiples of recent authors'
// keys kept in a bounded table so an author's second event skips the square
// root and the table's construction: ~3× btcec's speed per check (docs/
// benchmarks.md, "Signature check: one combined multiplication"). Its tests
// compare it with btcec's schnorr.Verify on valid and broken signatures and
// its arithmetic with math/big and decred's.
// Events checks a list (a catch-up's fetched events): the signatures are
// verified as BIP-340 batches (batch_go.go), the ~128 doublings of a check
// shared by up to 16 of them, and one by one only when a batch fails.
// Built with -tags libsecp256k1, the signature is checked by go-nostr's cgo
// binding of bitcoin-core's library instead, one at a time.
//
// An event is often checked twice: a catch-up session (core/relaysync/
// catchup) verifies what a peer sends, in parallel on every core, before the
// write path checks it again; a live event comes from several peers. Event
// therefore remembers the last maxVerified (id, pubkey, signature) triples
// whose signature verified: the signature check is a function of those bytes
// alone, and the id is recomputed from the event on every call, so a
// remembered triple proves exactly what a new verification would (a changed
// field changes the hash or misses the table; nothing but a successful
// verification enters it).
//
// It decides nothing else about an event and never touches storage, and it
// never multiplies a secret: its arithmetic is variable-time, right only for
// public data. Imports only core/nip34 (the 64-hex check).
package sigcheck

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"sync/atomic"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
)

// Result is what Event found.
type Result int

const (
	// Valid: the id is the event's hash and the signature verifies.
	Valid Result = iota
	// BadID: the id is not the hash of the event (or not 64 hex digits).
	BadID
	// BadSignature: the id is right, the signature (or the pubkey) is not.
	BadSignature
)

// Event checks evt's id, then its signature (see the package doc).
func Event(evt *nostr.Event) Result {
	return verifyEvent(evt, true)
}

// EventUncached is Event without the table of verified signatures: every
// call verifies. Only a measurement of the verification itself wants it
// (grasp-bench's verification ceiling); the write path calls Event.
func EventUncached(evt *nostr.Event) Result {
	return verifyEvent(evt, false)
}

// Events checks each of evts as Event does, the result of evts[i] into
// out[i] (out as long as evts). The signatures the table of verified ones
// does not hold are verified as one batch (BIP-340 batch verification,
// batch_go.go: ~half a single check's work per signature at 16); when the
// batch fails, each is verified alone, so the results are exactly Event's.
// A peer's bad signature therefore costs its batch's work on top of the
// single checks: at most twice the work per event, as bounded as before.
func Events(evts []*nostr.Event, out []Result) {
	var (
		pending []proof
		at      []int
	)
	for i, evt := range evts {
		var p proof
		r, need := prepare(evt, true, &p)
		out[i] = r
		if need {
			pending = append(pending, p)
			at = append(at, i)
		}
	}
	if len(pending) == 0 {
		return
	}
	verifies.Add(int64(len(pending)))
	if batching && len(pending) > 1 && verifyBatch(pending) {
		for k := range pending {
			verified.add(&pending[k])
			out[at[k]] = Valid
		}
		return
	}
	for k := range pending {
		p := &pending[k]
		if verify(evts[at[k]], &p.id, &p.pk, &p.sig) {
			verified.add(p)
			out[at[k]] = Valid
		} else {
			out[at[k]] = BadSignature
		}
	}
}

// verifyEvent is Event; remember false neither consults nor fills the table of
// verified signatures (the benchmarks measure the verification with it).
func verifyEvent(evt *nostr.Event, remember bool) Result {
	var p proof
	r, need := prepare(evt, remember, &p)
	if !need {
		return r
	}
	verifies.Add(1)
	if !verify(evt, &p.id, &p.pk, &p.sig) {
		return BadSignature
	}
	if remember {
		verified.add(&p)
	}
	return Valid
}

// prepare checks evt's id and decodes its key and signature into p. need
// says the signature is still to be verified; else r is the result (the id
// or the encoding is bad, or the table of verified signatures holds p when
// remember is set).
func prepare(evt *nostr.Event, remember bool, p *proof) (r Result, need bool) {
	if !nip34.DecodeHex64(evt.ID, &p.id) { // lowercase, as the hash is written
		return BadID, false
	}
	if sha256.Sum256(evt.Serialize()) != p.id {
		return BadID, false
	}
	if !decodeHex(p.pk[:], evt.PubKey) || !decodeHex(p.sig[:], evt.Sig) {
		if malformed(evt) { // go-nostr's libsecp256k1 binding reads short hex
			return Valid, false
		}
		return BadSignature, false
	}
	if remember && verified.has(p) {
		return Valid, false
	}
	return Valid, true
}

// decodeHex decodes exactly len(dst) bytes of hex (either case, as go-nostr
// and BIP-340's byte strings accept) from s.
func decodeHex(dst []byte, s string) bool {
	if len(s) != 2*len(dst) {
		return false
	}
	_, err := hex.Decode(dst, []byte(s))
	return err == nil
}

// maxVerified bounds the table of verified signatures: 8,192 triples of
// 128 bytes, in the map and the ring: 3.1 MiB of heap when full (measured),
// whatever is sent. It covers
// the events a catch-up session has verified but not yet handed to the write
// path (at most InFlight × IDsPerReq = 1,000 per session by default); older
// entries go first, and a forgotten one is only verified again.
const maxVerified = 8192

// proof is what a successful verification covers: the message (the event's
// id, recomputed from the event before the table is asked), the x-only key
// and the signature.
type proof struct {
	id  [32]byte
	pk  [32]byte
	sig [64]byte
}

// verifiedSet remembers the last maxVerified proofs, the oldest forgotten
// first (a ring of their places).
type verifiedSet struct {
	sync.Mutex
	m    map[proof]struct{}
	ring [maxVerified]proof
	next int
}

var verified = &verifiedSet{m: make(map[proof]struct{}, maxVerified)}

// verifies counts signature verifications (Verifications).
var verifies atomic.Int64

// Verifications is how many signatures this process has verified, valid or
// not (checks the table answered are not counted). A signature counts once
// per check that decided it by verifying: one that Events verified in a
// batch that failed, then alone, counts once (the failed batch is extra
// work, not another decision).
func Verifications() int64 { return verifies.Load() }

// Forget drops every remembered verification. A benchmark that fetches the
// same events run after run calls it before each run, so that each run
// verifies what it fetches as a first sync does; forgetting only ever costs
// a verification again.
func Forget() {
	verified.Lock()
	clear(verified.m)
	verified.next = 0
	verified.Unlock()
}

func (v *verifiedSet) has(p *proof) bool {
	v.Lock()
	_, ok := v.m[*p]
	v.Unlock()
	return ok
}

func (v *verifiedSet) add(p *proof) {
	v.Lock()
	defer v.Unlock()
	if _, ok := v.m[*p]; ok {
		return
	}
	if len(v.m) >= maxVerified {
		delete(v.m, v.ring[v.next])
	}
	v.ring[v.next] = *p
	v.m[*p] = struct{}{}
	v.next = (v.next + 1) % maxVerified
}
