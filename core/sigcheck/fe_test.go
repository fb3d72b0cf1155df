//go:build !libsecp256k1

package sigcheck

import (
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2"
)

func feBig(a *fe) *big.Int { return limbsBig(a[:]) }

// feValues are field elements in every range the operations see: small,
// near p, at or above p (weakly reduced, up to 2^256 − 1), and random.
func feValues(r *rand.Rand) []fe {
	m := ^uint64(0)
	pm := fe{0xfffffffefffffc2f, m, m, m} // p
	vs := []fe{{}, {1}, {2}, {feC}, {feC - 1}, {feC + 1}, pm, {m, m, m, m}, {0, 0, 0, 1 << 63}, {m, 0, m, 0}}
	for _, d := range []uint64{1, 2, 977, feC - 1} { // p − d and p + d
		var lo, hi fe
		lo.sub(&pm, &fe{d}) // below p: sub of a smaller value is exact
		hi = pm
		hi[0] += d
		vs = append(vs, lo, hi, fe{0xfffffffefffffc2f - d, m, m, m})
	}
	for range 3000 {
		v := fe{r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64()}
		switch r.IntN(5) {
		case 0:
			v[1], v[2], v[3] = m, m, m
		case 1:
			v[1], v[2], v[3] = 0, 0, 0
		}
		vs = append(vs, v)
	}
	return vs
}

// TestFieldAgreesWithBig: every field operation on values below 2^256
// equals math/big's modulo p, its result stays below 2^256, and normalize,
// equality, parity and bytes read the value mod p.
func TestFieldAgreesWithBig(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	vs := feValues(r)
	mod := func(x *big.Int) *big.Int { return x.Mod(x, curveP) }
	for i, a := range vs {
		b := vs[r.IntN(len(vs))]
		if i%7 == 0 {
			b = a
		}
		A, B := feBig(&a), feBig(&b)
		var z fe
		check := func(op string, got *fe, want *big.Int) {
			t.Helper()
			if g := mod(feBig(got)); g.Cmp(mod(want)) != 0 {
				t.Fatalf("%s(%x, %x) = %x, want %x", op, A, B, g, mod(want))
			}
		}
		z.add(&a, &b)
		check("add", &z, new(big.Int).Add(A, B))
		z.sub(&a, &b)
		check("sub", &z, new(big.Int).Sub(A, B))
		z.neg(&a)
		check("neg", &z, new(big.Int).Neg(A))
		z.mul(&a, &b)
		check("mul", &z, new(big.Int).Mul(A, B))
		z.sqr(&a)
		check("sqr", &z, new(big.Int).Mul(A, A))
		z = a
		z.mul(&z, &b) // aliased
		check("mul aliased", &z, new(big.Int).Mul(A, B))
		z = a
		z.normalize()
		if feBig(&z).Cmp(mod(new(big.Int).Set(A))) != 0 {
			t.Fatalf("normalize(%x) = %x", A, feBig(&z))
		}
		if a.isZero() != (mod(new(big.Int).Set(A)).Sign() == 0) || a.isOdd() != (mod(new(big.Int).Set(A)).Bit(0) == 1) {
			t.Fatalf("isZero or isOdd of %x", A)
		}
		if a.equal(&b) != (mod(new(big.Int).Set(A)).Cmp(mod(new(big.Int).Set(B))) == 0) {
			t.Fatalf("equal(%x, %x)", A, B)
		}
		if bb := a.bytes(); new(big.Int).SetBytes(bb[:]).Cmp(mod(new(big.Int).Set(A))) != 0 {
			t.Fatalf("bytes(%x) = %x", A, bb)
		}
		if i%10 == 0 && !a.isZero() {
			z.inv(&a)
			check("inv", &z, new(big.Int).ModInverse(mod(new(big.Int).Set(A)), curveP))
		}
	}
}

// TestPointOpsAgreeWithDecred: doubling and the mixed addition give
// decred's results, the addition of a point to itself and to its negation
// included.
func TestPointOpsAgreeWithDecred(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for range 300 {
		k1, k2 := randomScalar(r), randomScalar(r)
		if k1.IsZero() || k2.IsZero() {
			continue
		}
		A, B := affine(k1), affine(k2)
		var P btcec.JacobianPoint // A in Jacobian coordinates with a z ≠ 1: 2A − A
		btcec.DoubleNonConst(&A, &P)
		negA := A
		negA.Y.Negate(1).Normalize()
		btcec.AddNonConst(&P, &negA, &P)
		q := jac{x: feFromField(&P.X), y: feFromField(&P.Y), z: feFromField(&P.Z)}
		if !sameAffine(toDecred(&q), A) {
			t.Fatal("conversion differs")
		}
		bx, by := feFromField(&B.X), feFromField(&B.Y)
		ax, ay := feFromField(&A.X), feFromField(&A.Y)
		var want btcec.JacobianPoint
		d := q
		d.double()
		btcec.DoubleNonConst(&A, &want)
		if !sameAffine(toDecred(&d), want) {
			t.Fatal("double differs")
		}
		s := q
		s.addAffine(&bx, &by)
		btcec.AddNonConst(&A, &B, &want)
		if !sameAffine(toDecred(&s), want) {
			t.Fatal("add differs")
		}
		same := q
		same.addAffine(&ax, &ay)
		btcec.DoubleNonConst(&A, &want)
		if !sameAffine(toDecred(&same), want) {
			t.Fatal("A + A is not 2A")
		}
		var nay fe
		nay.neg(&ay)
		opp := q
		opp.addAffine(&ax, &nay)
		if !opp.inf {
			t.Fatal("A + (−A) is not the point at infinity")
		}
		inf := jac{inf: true}
		inf.double()
		inf.addAffine(&ax, &ay)
		if !sameAffine(toDecred(&inf), A) {
			t.Fatal("∞ + A is not A")
		}
	}
}

// TestFieldReduceFoldsTwice: reduce's rare paths, where folding the high
// half's carry back in passes 2^256 again and the last fold carries into the
// second word, give t mod p (random products almost never reach them).
func TestFieldReduceFoldsTwice(t *testing.T) {
	two256 := new(big.Int).Lsh(big.NewInt(1), 256)
	c := big.NewInt(feC)
	m := new(big.Int).Sub(two256, big.NewInt(1))
	reached := 0
	for _, H := range []*big.Int{m, new(big.Int).Sub(m, big.NewInt(1)), new(big.Int).Rsh(m, 1), new(big.Int).Sub(two256, c)} {
		hc := new(big.Int).Mul(H, c)
		k := new(big.Int).Rsh(hc, 256)
		k.Add(k, big.NewInt(1)) // the carry when L is large
		for _, w := range []uint64{^uint64(0), ^uint64(0) - feC + 1, ^uint64(0) - feC, 0, 12345} {
			// L + H·c = k·2^256 + r with r + k·c = 2^256 + w
			r := new(big.Int).Add(two256, new(big.Int).SetUint64(w))
			r.Sub(r, new(big.Int).Mul(k, c))
			L := new(big.Int).Add(r, new(big.Int).Mul(k, two256))
			L.Sub(L, hc)
			if L.Sign() < 0 || L.Cmp(two256) >= 0 || r.Sign() < 0 || r.Cmp(two256) >= 0 {
				continue
			}
			reached++
			var tw [8]uint64
			var lb, hb [32]byte
			L.FillBytes(lb[:])
			H.FillBytes(hb[:])
			lo, hi := feFromBytes(&lb), feFromBytes(&hb)
			copy(tw[:4], lo[:])
			copy(tw[4:], hi[:])
			var z fe
			z.reduce(&tw)
			want := new(big.Int).Add(L, new(big.Int).Mul(H, two256))
			want.Mod(want, curveP)
			got := feBig(&z)
			if got.Mod(got, curveP).Cmp(want) != 0 {
				t.Fatalf("reduce(%x, %x) = %x, want %x", H, L, feBig(&z), want)
			}
		}
	}
	if reached < 10 {
		t.Fatalf("only %d cases reach the second fold", reached)
	}
}

// TestLiftXAgreesWithDecred: BIP-340's lift_x gives decred's answer
// (DecompressY with an even y) for random x, x near and above p, and x of
// keys that are no curve point.
func TestLiftXAgreesWithDecred(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	var xs [][32]byte
	for _, v := range feValues(r) {
		xs = append(xs, v.rawBytes())
	}
	lifted := 0
	for _, b := range xs {
		x, y, ok := liftX(&b)
		var fx, fy btcec.FieldVal
		want := fx.SetBytes(&b) == 0 && btcec.DecompressY(&fx, false, &fy)
		if ok != want {
			t.Fatalf("lift_x(%x): %v, decred %v", b, ok, want)
		}
		if !ok {
			continue
		}
		lifted++
		if xb, yb := x.bytes(), y.bytes(); xb != b || yb != *fy.Bytes() {
			t.Fatalf("lift_x(%x) = (%x, %x), decred y %x", b, xb, yb, fy.Bytes())
		}
	}
	if lifted < len(xs)/4 || lifted > 3*len(xs)/4 {
		t.Fatalf("%d of %d x lift: about half should", lifted, len(xs))
	}
}

// rawBytes is z's words big-endian, not reduced (≥ p when z is).
func (z *fe) rawBytes() [32]byte {
	var b [32]byte
	for i := range 4 {
		for j := range 8 {
			b[31-8*i-j] = byte(z[i] >> (8 * j))
		}
	}
	return b
}
