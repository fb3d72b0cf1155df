//go:build !libsecp256k1

package sigcheck

import (
	"crypto/sha256"
	"sync"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"
	"github.com/nbd-wtf/go-nostr"
)

// maxKeys bounds the table of decompressed keys (~100 B each). A client
// sending events of ever new keys only refills it: each costs one
// decompression, as without the table.
const maxKeys = 8192

var keys = struct {
	sync.Mutex
	m map[[32]byte]*btcec.PublicKey
}{m: map[[32]byte]*btcec.PublicKey{}}

// parses counts key decompressions (the tests read it).
var parses int

// pubkey returns the point of the x-only key pk (BIP-340's lift_x), from the
// table when it holds it.
func pubkey(pk *[32]byte) (*btcec.PublicKey, bool) {
	keys.Lock()
	p, ok := keys.m[*pk]
	keys.Unlock()
	if ok {
		return p, true
	}
	p, err := schnorr.ParsePubKey(pk[:])
	if err != nil {
		return nil, false
	}
	keys.Lock()
	parses++
	if len(keys.m) >= maxKeys {
		clear(keys.m)
	}
	keys.m[*pk] = p
	keys.Unlock()
	return p, true
}

// malformed decides a key or signature that is not 64 or 128 hex digits:
// BIP-340 refuses it.
func malformed(*nostr.Event) bool { return false }

// challengeTag is SHA-256("BIP0340/challenge"), written twice before the
// challenge's data (BIP-340's tagged hash).
var challengeTag = sha256.Sum256([]byte("BIP0340/challenge"))

// verify is BIP-340's Verify(pk, m, sig) with m the event's id: R = s·G − e·P
// with e = H_challenge(r ‖ pk ‖ m) mod n must be a finite point with an even
// y whose x is r; r < p and s < n. pk and sig are the event's, decoded.
func verify(_ *nostr.Event, msg *[32]byte, pk *[32]byte, sig *[64]byte) bool {
	P, ok := pubkey(pk)
	if !ok {
		return false
	}
	var r btcec.FieldVal
	if r.SetByteSlice(sig[:32]) {
		return false // r ≥ p
	}
	var s btcec.ModNScalar
	if s.SetByteSlice(sig[32:]) {
		return false // s ≥ n
	}
	var buf [64 + 32 + 32 + 32]byte
	copy(buf[:32], challengeTag[:])
	copy(buf[32:64], challengeTag[:])
	copy(buf[64:96], sig[:32])
	copy(buf[96:128], pk[:])
	copy(buf[128:], msg[:])
	h := sha256.Sum256(buf[:])
	var e btcec.ModNScalar
	e.SetBytes(&h) // reduced mod n, as BIP-340 says
	e.Negate()

	var pj, sG, eP, R btcec.JacobianPoint
	P.AsJacobian(&pj)
	btcec.ScalarBaseMultNonConst(&s, &sG)
	btcec.ScalarMultNonConst(&e, &pj, &eP)
	btcec.AddNonConst(&sG, &eP, &R)
	if (R.X.IsZero() && R.Y.IsZero()) || R.Z.IsZero() {
		return false // the point at infinity
	}
	R.ToAffine()
	if R.Y.IsOdd() {
		return false
	}
	return r.Equals(&R.X)
}
