//go:build !libsecp256k1

package sigcheck

import (
	"crypto/sha256"
	"sync"

	secp "github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/nbd-wtf/go-nostr"
)

// maxKeys bounds the table of authors' keys: each entry is the lifted key's
// 8 odd multiples in affine coordinates (512 bytes; ~4.5 MiB when full). A
// client sending events of ever new keys only refills it: each costs one
// decompression and one table, as without the table.
const maxKeys = 8192

// authorKey is what the table keeps of an x-only key: odd[i] = (2i+1)·P,
// P = lift_x(pk) (odd[0] is P itself, even y). Never changed once built, so
// verifications share it without a lock.
type authorKey struct {
	odd [oddP]affinePoint
}

var keys = struct {
	sync.Mutex
	m map[[32]byte]*authorKey
}{m: map[[32]byte]*authorKey{}}

// parses counts key decompressions (the tests read it).
var parses int

// pubkey returns the table of the x-only key pk (BIP-340's lift_x: x < p,
// x³ + 7 a square, the even root), from the author table when it holds it.
func pubkey(pk *[32]byte) (*authorKey, bool) {
	keys.Lock()
	a, ok := keys.m[*pk]
	keys.Unlock()
	if ok {
		return a, true
	}
	x, y, ok := liftX(pk)
	if !ok {
		return nil, false
	}
	a = new(authorKey)
	oddMultiples(&x, &y, a.odd[:])
	keys.Lock()
	parses++
	if len(keys.m) >= maxKeys {
		clear(keys.m)
	}
	keys.m[*pk] = a
	keys.Unlock()
	return a, true
}

// liftX is BIP-340's lift_x: the point with x = pk and an even y; none when
// pk ≥ p or x³ + 7 has no square root.
func liftX(pk *[32]byte) (x, y fe, ok bool) {
	x = feFromBytes(pk)
	n := x
	if n.normalize(); n != x {
		return x, y, false // x ≥ p
	}
	var rhs, y2 fe
	rhs.sqr(&x)
	rhs.mul(&rhs, &x)
	rhs.add(&rhs, &fe{7})
	y.sqrt(&rhs)
	if y2.sqr(&y); !y2.equal(&rhs) {
		return x, y, false // no point of the curve
	}
	y.normalize()
	if y[0]&1 == 1 {
		y.neg(&y)
		y.normalize()
	}
	return x, y, true
}

// malformed decides a key or signature that is not 64 or 128 hex digits:
// BIP-340 refuses it.
func malformed(*nostr.Event) bool { return false }

// challengeTag is SHA-256("BIP0340/challenge"), written twice before the
// challenge's data (BIP-340's tagged hash).
var challengeTag = sha256.Sum256([]byte("BIP0340/challenge"))

// schnorrChallenge is BIP-340's e = H_challenge(r ‖ pk ‖ m) mod n.
func schnorrChallenge(r []byte, pk, msg *[32]byte) secp.ModNScalar {
	var buf [64 + 32 + 32 + 32]byte
	copy(buf[:32], challengeTag[:])
	copy(buf[32:64], challengeTag[:])
	copy(buf[64:96], r[:32])
	copy(buf[96:128], pk[:])
	copy(buf[128:], msg[:])
	h := sha256.Sum256(buf[:])
	var e secp.ModNScalar
	e.SetBytes(&h) // reduced mod n, as BIP-340 says
	return e
}

// batching: Events verifies a batch's signatures together (batch_go.go).
const batching = true

// verify is BIP-340's Verify(pk, m, sig) with m the event's id: R = s·G − e·P
// with e = H_challenge(r ‖ pk ‖ m) mod n must be a finite point with an even
// y whose x is r; r < p and s < n. pk and sig are the event's, decoded.
func verify(_ *nostr.Event, msg *[32]byte, pk *[32]byte, sig *[64]byte) bool {
	return verifySchnorr(msg, pk, sig)
}

// verifySchnorr is verify on the bytes alone (the differential tests call
// it with keys and signatures no event carries).
func verifySchnorr(msg *[32]byte, pk *[32]byte, sig *[64]byte) bool {
	P, ok := pubkey(pk)
	if !ok {
		return false
	}
	var rv secp.FieldVal
	if rv.SetByteSlice(sig[:32]) {
		return false // r ≥ p
	}
	var s secp.ModNScalar
	if s.SetByteSlice(sig[32:]) {
		return false // s ≥ n
	}
	e := schnorrChallenge(sig[:32], pk, msg)
	e.Negate()

	var R jac
	sumMul(&R, &s, &e, &P.odd)
	if R.inf {
		return false // the point at infinity
	}
	// x(R) = r ⇔ X = r·Z²: refuses a wrong signature before the inversion
	rf := feFromBytes((*[32]byte)(sig[:32]))
	var z2, rz fe
	z2.sqr(&R.z)
	rz.mul(&rf, &z2)
	if !rz.equal(&R.x) {
		return false
	}
	var zi, zi3, y fe // y(R) = Y/Z³
	zi.inv(&R.z)
	zi3.sqr(&zi)
	zi3.mul(&zi3, &zi)
	y.mul(&R.y, &zi3)
	return !y.isOdd()
}
