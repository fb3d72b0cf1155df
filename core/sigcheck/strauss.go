//go:build !libsecp256k1

package sigcheck

import (
	"encoding/binary"
	"math/bits"
	"sync"

	secp "github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// This file computes BIP-340's R = s·G − e·P as one multi-scalar
// multiplication (Strauss–Shamir: one chain of doublings, each step adding
// the table entries its four scalars' digits name), instead of btcec's s·G
// and e·P apart followed by their sum:
//
//   - e·P: −e is split by the secp256k1 endomorphism φ(x, y) = (β·x, y) =
//     λ·(x, y) into k1 + k2·λ with |k1|, |k2| ≈ 2^128, so k1·P + k2·φ(P)
//     needs ~128 doublings instead of 256. P's odd multiples are built once
//     per author and kept in the author table (verify_go.go); φ's are the same
//     points with x times β.
//   - s·G: s = s1 + s2·2^128 with s1, s2 < 2^128 (a split of the bits, no
//     endomorphism), against fixed tables of odd multiples of G and of
//     2^128·G built once per process. Both halves share the 128 doublings
//     above.
//
// The four scalars are written in width-w NAF (odd digits, at least w−1
// zeros after each), so a table of 2^(w−2) odd multiples serves every digit.
// The result does not depend on the split being short: the NAF below takes
// any 256-bit scalar, so a decomposition longer than expected only costs
// doublings (the tests check the identity k1 + k2·λ ≡ k and the bound).
//
// Everything here is variable-time (branches and table indexes depend on the
// scalars). That is right for verification only: s, e, the key and the
// message are all public. Nothing secret may ever be multiplied here.

const (
	// windowP is the NAF width of the key's two scalars: 8 odd multiples of
	// P per author (512 bytes in the author table).
	windowP = 5
	// windowG is the NAF width of s's halves: two fixed tables of 256 odd
	// multiples (32 KiB, built at the first verification).
	windowG = 10

	oddP = 1 << (windowP - 2)
	oddG = 1 << (windowG - 2)

	// nafDigits holds a NAF of any scalar below 2^256 (the digit of 2^256
	// can be nonzero).
	nafDigits = 257
)

// affinePoint is a finite curve point with z = 1: the tables hold these so
// that each addition is the cheaper mixed one.
type affinePoint struct{ x, y fe }

// generatorTables holds the odd multiples of G and of 2^128·G:
// g[i] = (2i+1)·G, h[i] = (2i+1)·2^128·G.
type generatorTables struct {
	g, h [oddG]affinePoint
}

var (
	genOnce sync.Once
	gen     *generatorTables
)

// genTables builds the generator tables at the first verification (~1 ms).
func genTables() *generatorTables {
	genOnce.Do(func() {
		t := new(generatorTables)
		var g, h secp.JacobianPoint
		var one secp.ModNScalar
		one.SetInt(1)
		secp.ScalarBaseMultNonConst(&one, &g)
		h.Set(&g)
		for range 128 {
			secp.DoubleNonConst(&h, &h)
		}
		g.ToAffine()
		h.ToAffine()
		gx, gy, hx, hy := feFromField(&g.X), feFromField(&g.Y), feFromField(&h.X), feFromField(&h.Y)
		oddMultiples(&gx, &gy, t.g[:])
		oddMultiples(&hx, &hy, t.h[:])
		gen = t
	})
	return gen
}

// oddMultiples fills out with P, 3P, 5P, … in affine coordinates, P = (x, y)
// a point of the curve: 2P made affine (one inversion) so that each step is
// a mixed addition, then all of them made affine with one more. No odd
// multiple below n of a point of prime order n is the point at infinity.
func oddMultiples(x, y *fe, out []affinePoint) {
	d := jac{x: *x, y: *y, z: fe{1}}
	d.double()
	var zi, zi2, zi3, dx, dy fe
	zi.inv(&d.z)
	zi2.sqr(&zi)
	zi3.mul(&zi2, &zi)
	dx.mul(&d.x, &zi2)
	dy.mul(&d.y, &zi3)
	qs := make([]jac, len(out))
	qs[0] = jac{x: *x, y: *y, z: fe{1}}
	for i := 1; i < len(qs); i++ {
		qs[i] = qs[i-1]
		qs[i].addAffine(&dx, &dy)
	}
	batchAffine(qs, out)
}

// batchAffine converts the finite points qs to affine coordinates with one
// inversion (Montgomery's trick): out[i].x first holds z0·…·zi.
func batchAffine(qs []jac, out []affinePoint) {
	n := len(qs)
	out[0].x = qs[0].z
	for i := 1; i < n; i++ {
		out[i].x.mul(&out[i-1].x, &qs[i].z)
	}
	var inv fe // (z0·…·zi)^-1 for the i being worked on
	inv.inv(&out[n-1].x)
	for i := n - 1; i >= 0; i-- {
		var zi fe // 1/zi
		if i > 0 {
			zi.mul(&inv, &out[i-1].x)
			inv.mul(&inv, &qs[i].z)
		} else {
			zi = inv
		}
		var zi2, zi3 fe
		zi2.sqr(&zi)
		zi3.mul(&zi2, &zi)
		out[i].x.mul(&qs[i].x, &zi2)
		out[i].x.normalize()
		out[i].y.mul(&qs[i].y, &zi3)
		out[i].y.normalize()
	}
}

// The endomorphism's constants: λ³ ≡ 1 (mod n), β³ ≡ 1 (mod p), and
// λ·(x, y) = (β·x, y) for every point (the tests check all three against
// independent arithmetic). The lattice (a1, b1), (a2, b2) of vectors with
// a + b·λ ≡ 0 (mod n) is the short basis every secp256k1 implementation
// derives; here b2 = a1, and splitScalar uses −b1, −b2 and
// g1 = ⌊b2·2^320/n⌋, g2 = ⌊−b1·2^320/n⌋ (also checked by the tests).
var (
	endoBeta     = fieldHex("7ae96a2b657c07106e64479eac3434e99cf0497512f58995c1396c28719501ee")
	endoBetaFe   = feFromField(&endoBeta)
	endoLambda   = scalarHex("5363ad4cc05c30e0a5261c028812645a122e22ea20816678df02967c1b23bd72")
	endoNegB1    = scalarHex("e4437ed6010e88286f547fa90abfe4c3")
	endoB2       = scalarHex("3086d221a7d46bcde86c90e49284eb15")
	endoG1       = [3]uint64{0x3daa8a1471e8ca7f, 0xe86c90e49284eb15, 0x3086d221a7d46bcd}
	endoG2       = [3]uint64{0x221208ac9df506c6, 0x6f547fa90abfe4c4, 0xe4437ed6010e8828}
	endoNegB2    = negated(endoB2)
	endoNegLambd = negated(endoLambda)
)

func fieldHex(h string) secp.FieldVal {
	var b [32]byte
	decodeHexRight(b[:], h)
	var f secp.FieldVal
	if f.SetBytes(&b) != 0 {
		panic("sigcheck: field constant out of range")
	}
	return f
}

func scalarHex(h string) secp.ModNScalar {
	var b [32]byte
	decodeHexRight(b[:], h)
	var s secp.ModNScalar
	if s.SetBytes(&b) != 0 {
		panic("sigcheck: scalar constant out of range")
	}
	return s
}

// decodeHexRight decodes h into the last len(h)/2 bytes of dst.
func decodeHexRight(dst []byte, h string) {
	if !decodeHex(dst[len(dst)-len(h)/2:], h) {
		panic("sigcheck: bad hex constant " + h)
	}
}

func negated(s secp.ModNScalar) secp.ModNScalar {
	s.Negate()
	return s
}

// mulShift320 is round(k·g / 2^320) for a 256-bit k and a 192-bit g: the
// estimate of k·b/n (k·g ≈ k·b·2^320/n) that makes the split short. Any
// value would keep the split exact; rounding keeps it ~128 bits.
func mulShift320(k *[4]uint64, g *[3]uint64) secp.ModNScalar {
	var t [7]uint64
	for i := range 3 {
		var carry uint64
		for j := range 4 {
			hi, lo := bits.Mul64(g[i], k[j])
			var c uint64
			lo, c = bits.Add64(lo, t[i+j], 0)
			hi += c
			lo, c = bits.Add64(lo, carry, 0)
			hi += c
			t[i+j] = lo
			carry = hi
		}
		t[i+4] = carry
	}
	// bits 320 and up are t[5], t[6]; bit 319 rounds.
	lo, c := bits.Add64(t[5], t[4]>>63, 0)
	hi, c2 := bits.Add64(t[6], 0, c)
	var b [32]byte
	binary.BigEndian.PutUint64(b[8:], c2)
	binary.BigEndian.PutUint64(b[16:], hi)
	binary.BigEndian.PutUint64(b[24:], lo)
	var s secp.ModNScalar
	s.SetBytes(&b) // below 2^129 < n
	return s
}

// limbs is k as four little-endian 64-bit words.
func limbs(k *secp.ModNScalar) [4]uint64 {
	b := k.Bytes()
	return [4]uint64{
		binary.BigEndian.Uint64(b[24:]), binary.BigEndian.Uint64(b[16:]),
		binary.BigEndian.Uint64(b[8:]), binary.BigEndian.Uint64(b[:8]),
	}
}

// splitScalar returns k1, k2 with k ≡ k1 + k2·λ (mod n), both short (about
// 128 bits) for every k: k2 = −(c1·b1 + c2·b2), k1 = k − k2·λ, with c1, c2
// the rounded coordinates of (k, 0) in the lattice basis.
func splitScalar(k *secp.ModNScalar) (k1, k2 secp.ModNScalar) {
	kl := limbs(k)
	c1 := mulShift320(&kl, &endoG1)
	c2 := mulShift320(&kl, &endoG2)
	c1.Mul(&endoNegB1)
	c2.Mul(&endoNegB2)
	k2.Add2(&c1, &c2)
	k1.Mul2(&k2, &endoNegLambd).Add(k)
	return k1, k2
}

// wnaf writes the width-w NAF of k (little-endian words, below 2^256) into
// d, digit i the coefficient of 2^i (odd or zero, |d[i]| < 2^(w−1)), and
// returns how many digits are used. d must be zero.
func wnaf(d *[nafDigits]int16, k [4]uint64, w uint) int {
	x := [5]uint64{k[0], k[1], k[2], k[3]} // the fifth word holds k − digit's carry
	used, pos := 0, 0
	mask := uint64(1)<<w - 1
	for x != [5]uint64{} {
		if x[0] == 0 {
			x = [5]uint64{x[1], x[2], x[3], x[4]}
			pos += 64
			continue
		}
		if tz := bits.TrailingZeros64(x[0]); tz > 0 {
			shiftRight(&x, uint(tz))
			pos += tz
		}
		v := int64(x[0] & mask)
		if v >= 1<<(w-1) {
			v -= 1 << w
		}
		d[pos] = int16(v)
		used = pos + 1
		// x −= v: x's low w bits become zero
		var c uint64
		if v > 0 {
			x[0], c = bits.Sub64(x[0], uint64(v), 0)
			for i := 1; i < 5 && c != 0; i++ {
				x[i], c = bits.Sub64(x[i], 0, c)
			}
		} else {
			x[0], c = bits.Add64(x[0], uint64(-v), 0)
			for i := 1; i < 5 && c != 0; i++ {
				x[i], c = bits.Add64(x[i], 0, c)
			}
		}
		shiftRight(&x, w)
		pos += int(w)
	}
	return used
}

// shiftRight shifts x right by 0 < s < 64 bits.
func shiftRight(x *[5]uint64, s uint) {
	for i := range 4 {
		x[i] = x[i]>>s | x[i+1]<<(64-s)
	}
	x[4] >>= s
}

// addDigit adds d·T to q, T the point whose odd multiples t holds (t[i] =
// (2i+1)·T), negated when neg is set.
func addDigit(q *jac, t []affinePoint, d int16, neg bool) {
	if d == 0 {
		return
	}
	if d < 0 {
		d, neg = -d, !neg
	}
	e := &t[(d-1)/2]
	if neg {
		var y fe
		y.neg(&e.y)
		q.addAffine(&e.x, &y)
		return
	}
	q.addAffine(&e.x, &e.y)
}

// sumMul sets q to s·G + k·P, P the author's point (odd its odd multiples).
func sumMul(q *jac, s, k *secp.ModNScalar, odd *[oddP]affinePoint) {
	gt := genTables()

	k1, k2 := splitScalar(k)
	neg1 := k1.IsOverHalfOrder() // k1·P = (−k1)·(−P), shorter
	if neg1 {
		k1.Negate()
	}
	neg2 := k2.IsOverHalfOrder()
	if neg2 {
		k2.Negate()
	}
	var phi [oddP]affinePoint // φ(P)'s odd multiples: (β·x, y)
	for i := range odd {
		phi[i].x.mul(&odd[i].x, &endoBetaFe)
		phi[i].y = odd[i].y
	}

	sl := limbs(s)
	var d1, d2, ds1, ds2 [nafDigits]int16
	n1 := wnaf(&d1, limbs(&k1), windowP)
	n2 := wnaf(&d2, limbs(&k2), windowP)
	n3 := wnaf(&ds1, [4]uint64{sl[0], sl[1]}, windowG)
	n4 := wnaf(&ds2, [4]uint64{sl[2], sl[3]}, windowG)
	top := max(n1, n2, n3, n4)

	*q = jac{inf: true}
	for i := top - 1; i >= 0; i-- {
		q.double()
		addDigit(q, odd[:], d1[i], neg1)
		addDigit(q, phi[:], d2[i], neg2)
		addDigit(q, gt.g[:], ds1[i], false)
		addDigit(q, gt.h[:], ds2[i], false)
	}
}
