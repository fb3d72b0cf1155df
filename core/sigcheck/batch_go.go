//go:build !libsecp256k1

package sigcheck

import (
	"crypto/rand"

	secp "github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// BIP-340's batch verification: n signatures hold together iff
//
//	(Σ aᵢ·sᵢ)·G − Σ aᵢ·Rᵢ − Σ (aᵢ·eᵢ)·Pᵢ = O
//
// with Rᵢ = lift_x(rᵢ), a₁ = 1 and the other aᵢ random 128-bit scalars: if
// one signature is bad, the sum misses O but with probability ~2⁻¹²⁸. It is
// one Strauss multiplication for the whole batch, so the ~128 doublings a
// single check spends (about half its work) are shared by all of them and
// each signature's own work is the additions for its aᵢ (against Rᵢ, NAF of
// width 2: Rᵢ is the only multiple that needs no inversion) and its eᵢ (split
// by the endomorphism against the author's table, as a single check does).
// Each Rᵢ costs a square root where a single check pays an inversion for R's
// y; s·G becomes one scalar for the whole batch.
//
// The coefficients come from crypto/rand: the signer of a bad signature
// cannot know them when it signs.

// maxBatch bounds the signatures of one batch multiplication (its terms
// live on the stack of verifyBatch's caller's goroutine: ~3 KiB each).
const maxBatch = 16

// batchTerm is one scalar of a batch multiplication: its NAF digits, the odd
// multiples of its point, and whether the point is negated.
type batchTerm struct {
	d   [nafDigits]int16
	n   int
	t   []affinePoint
	neg bool
}

// verifyBatch reports whether every proof's signature verifies (BIP-340,
// each proof's id the message). False means at least one does not (or, with
// probability ~2⁻¹²⁸ per bad signature, nothing); the caller then checks
// them one by one. Batches above maxBatch are split.
func verifyBatch(ps []proof) bool {
	for len(ps) > maxBatch {
		if !verifyBatch(ps[:maxBatch]) {
			return false
		}
		ps = ps[maxBatch:]
	}
	switch len(ps) {
	case 0:
		return true
	case 1:
		return verifySchnorr(&ps[0].id, &ps[0].pk, &ps[0].sig)
	}
	var coef [maxBatch * 16]byte
	if _, err := rand.Read(coef[:16*len(ps)]); err != nil {
		return false // no randomness: the caller checks one by one
	}
	var (
		terms [3*maxBatch + 2]batchTerm
		rs    [maxBatch][1]affinePoint
		phis  [maxBatch][oddP]affinePoint
		sum   secp.ModNScalar // Σ aᵢ·sᵢ
	)
	nt := 0
	for i := range ps {
		p := &ps[i]
		P, ok := pubkey(&p.pk)
		if !ok {
			return false
		}
		var s secp.ModNScalar
		if s.SetByteSlice(p.sig[32:]) {
			return false // s ≥ n
		}
		rx, ry, ok := liftX((*[32]byte)(p.sig[:32]))
		if !ok {
			return false // r ≥ p, or no point has x = r
		}
		var a secp.ModNScalar
		if i == 0 {
			a.SetInt(1)
		} else if a.SetByteSlice(coef[16*i : 16*i+16]); a.IsZero() {
			a.SetInt(1)
		}
		var as secp.ModNScalar
		as.Mul2(&a, &s)
		sum.Add(&as)

		// −aᵢ·Rᵢ
		rs[i][0] = affinePoint{rx, ry}
		t := &terms[nt]
		nt++
		t.n = wnaf(&t.d, limbs(&a), 2)
		t.t, t.neg = rs[i][:], true

		// −(aᵢ·eᵢ)·Pᵢ = k1·Pᵢ + k2·φ(Pᵢ)
		e := schnorrChallenge(p.sig[:32], &p.pk, &p.id)
		var k secp.ModNScalar
		k.Mul2(&a, &e).Negate()
		k1, k2 := splitScalar(&k)
		neg1 := k1.IsOverHalfOrder()
		if neg1 {
			k1.Negate()
		}
		neg2 := k2.IsOverHalfOrder()
		if neg2 {
			k2.Negate()
		}
		for j := range P.odd {
			phis[i][j].x.mul(&P.odd[j].x, &endoBetaFe)
			phis[i][j].y = P.odd[j].y
		}
		t = &terms[nt]
		nt++
		t.n = wnaf(&t.d, limbs(&k1), windowP)
		t.t, t.neg = P.odd[:], neg1
		t = &terms[nt]
		nt++
		t.n = wnaf(&t.d, limbs(&k2), windowP)
		t.t, t.neg = phis[i][:], neg2
	}
	gt := genTables()
	sl := limbs(&sum)
	t := &terms[nt]
	nt++
	t.n = wnaf(&t.d, [4]uint64{sl[0], sl[1]}, windowG)
	t.t = gt.g[:]
	t = &terms[nt]
	nt++
	t.n = wnaf(&t.d, [4]uint64{sl[2], sl[3]}, windowG)
	t.t = gt.h[:]

	top := 0
	for i := range nt {
		top = max(top, terms[i].n)
	}
	q := jac{inf: true}
	for i := top - 1; i >= 0; i-- {
		q.double()
		for j := range nt {
			if d := terms[j].d[i]; d != 0 {
				addDigit(&q, terms[j].t, d, terms[j].neg)
			}
		}
	}
	return q.inf
}
