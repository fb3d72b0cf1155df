package sigcheck

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/nbd-wtf/go-nostr"
)

// The cases below are signatures built here, step by step, from known
// secret keys and nonces, so that each one breaks exactly one rule of
// BIP-340's verification; a correct verifier refuses each, and accepts the
// control signature made by the same steps without the break.

// scalar is a ModNScalar of the small integer v (v ≥ 1).
func scalar(v uint32) *btcec.ModNScalar {
	var s btcec.ModNScalar
	s.SetInt(v)
	return &s
}

// affine returns k·G in affine coordinates.
func affine(k *btcec.ModNScalar) btcec.JacobianPoint {
	var p btcec.JacobianPoint
	btcec.ScalarBaseMultNonConst(k, &p)
	p.ToAffine()
	return p
}

// challenge is BIP-340's e = H_tag("BIP0340/challenge", r ‖ pk ‖ m) mod n,
// computed here independently of the package.
func challenge(r, pk, m []byte) *btcec.ModNScalar {
	tag := sha256.Sum256([]byte("BIP0340/challenge"))
	h := sha256.New()
	h.Write(tag[:])
	h.Write(tag[:])
	h.Write(r)
	h.Write(pk)
	h.Write(m)
	var e btcec.ModNScalar
	e.SetByteSlice(h.Sum(nil))
	return &e
}

// breaks lists the rule a forged signature breaks.
type breaks int

const (
	none         breaks = iota
	keyParity           // the signer uses d although d·G has an odd y (BIP-340 negates d)
	nonceParity         // the signer uses k although k·G has an odd y (BIP-340 negates k)
	infinity            // s = e·d: s·G − e·P is the point at infinity
	wrongMessage        // signed a message other than the event's id
)

// signEvent signs evt (its id recomputed) with secret d and nonce k,
// breaking rule b.
func signEvent(t *testing.T, d, k *btcec.ModNScalar, evt *nostr.Event, b breaks) *nostr.Event {
	t.Helper()
	var dd, kk btcec.ModNScalar
	dd.Set(d)
	kk.Set(k)
	P := affine(&dd)
	if P.Y.IsOdd() && b != keyParity {
		dd.Negate()
	}
	pk := P.X.Bytes()
	evt.PubKey = hex.EncodeToString(pk[:])
	evt.ID = evt.GetID()
	msg, _ := hex.DecodeString(evt.ID)
	if b == wrongMessage {
		msg[0] ^= 1
	}
	R := affine(&kk)
	if R.Y.IsOdd() && b != nonceParity {
		kk.Negate()
	}
	r := R.X.Bytes()
	e := challenge(r[:], pk[:], msg)
	var s btcec.ModNScalar
	s.Mul2(e, &dd) // e·d
	if b != infinity {
		s.Add(&kk) // k + e·d
	}
	sb := s.Bytes()
	evt.Sig = hex.EncodeToString(r[:]) + hex.EncodeToString(sb[:])
	return evt
}

// findKey returns a secret key ≥ start whose point's y parity is odd (or
// even), and a nonce likewise: the cases need both parities.
func findScalar(t *testing.T, start uint32, oddY bool) *btcec.ModNScalar {
	t.Helper()
	for v := start; v < start+64; v++ {
		p := affine(scalar(v))
		if p.Y.IsOdd() == oddY {
			return scalar(v)
		}
	}
	t.Fatal("no scalar of that parity in 64 tries")
	return nil
}

// TestCheckBIP340Rules: signatures built to break one verification rule
// each (the signer's key or nonce parity, R at infinity, another message)
// are refused, their controls accepted, and go-nostr agrees on every one.
func TestCheckBIP340Rules(t *testing.T) {
	body := func() *nostr.Event {
		return &nostr.Event{Kind: 1617, CreatedAt: 1700000000, Tags: nostr.Tags{{"a", "30617:x:y"}}, Content: "diff --git\n\t\"x\"\x01"}
	}
	type tc struct {
		name     string
		d, k     *btcec.ModNScalar
		b        breaks
		accepted bool
	}
	evenD, oddD := findScalar(t, 1000, false), findScalar(t, 1000, true)
	evenK, oddK := findScalar(t, 5000, false), findScalar(t, 5000, true)
	cases := []tc{
		{"even key, even nonce", evenD, evenK, none, true},
		{"odd key negated, odd nonce negated", oddD, oddK, none, true},
		{"odd key used as is", oddD, evenK, keyParity, false},
		{"odd nonce used as is (R has an odd y)", evenD, oddK, nonceParity, false},
		{"R at infinity (s = e·d)", evenD, evenK, infinity, false},
		{"R at infinity, odd key", oddD, oddK, infinity, false},
		{"another message signed", evenD, evenK, wrongMessage, false},
	}
	for _, c := range cases {
		evt := signEvent(t, c.d, c.k, body(), c.b)
		want := BadSignature
		if c.accepted {
			want = Valid
		}
		if g := goNostr(evt); g != want {
			t.Fatalf("%s: go-nostr answers %d, the case expects %d (the construction is wrong)", c.name, g, want)
		}
		for pass := range 2 {
			if got := Event(evt); got != want {
				t.Errorf("%s (pass %d): Event = %d, want %d", c.name, pass, got, want)
			}
		}
	}
}

// TestCheckScalarAndKeyRanges: r ≥ p, s ≥ n, and x-only keys that are
// not points of the curve (x ≥ p, x without a y) are refused even where
// reducing them would give a value that verifies; r = p − 1, s = n − 1 and
// the smallest keys are checked without error.
func TestCheckScalarAndKeyRanges(t *testing.T) {
	const p = "fffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2f"
	const n = "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141"
	const pMinus1 = "fffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2e"
	const nMinus1 = "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364140"
	const max = "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
	valid := signEvent(t, findScalar(t, 77, false), findScalar(t, 99, false), &nostr.Event{Kind: 1, CreatedAt: 1, Content: "x"}, none)
	if Event(valid) != Valid {
		t.Fatal("the control event does not check")
	}
	r, s := valid.Sig[:64], valid.Sig[64:]
	sigs := map[string]string{"r = p": p + s, "r = p − 1": pMinus1 + s, "r = 2²⁵⁶−1": max + s,
		"s = n": r + n, "s = n − 1": r + nMinus1, "s = 2²⁵⁶−1": r + max}
	for name, sig := range sigs {
		e := *valid
		e.Sig = sig
		if got, want := Event(&e), goNostr(&e); got != BadSignature || want != BadSignature {
			t.Errorf("%s: Event = %d, go-nostr = %d, want both %d", name, got, want, BadSignature)
		}
	}
	keys := map[string]string{"x = p": p, "x = 2²⁵⁶−1": max, "x = p + 1": p[:63] + "0", "x = 0": strings.Repeat("0", 64),
		"x = 5 (no y)": strings.Repeat("0", 63) + "5", "x = 1": strings.Repeat("0", 63) + "1", "G's x": "79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798"}
	for name, pk := range keys {
		e := *valid
		e.PubKey = pk
		e.ID = e.GetID()
		for pass := range 2 {
			if got, want := Event(&e), goNostr(&e); got != BadSignature || want != BadSignature {
				t.Errorf("%s (pass %d): Event = %d, go-nostr = %d, want both %d", name, pass, got, want, BadSignature)
			}
		}
	}
	if Event(valid) != Valid {
		t.Fatal("the control event fails after the bad keys")
	}
}
