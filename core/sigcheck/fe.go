//go:build !libsecp256k1

package sigcheck

import (
	"encoding/binary"
	"math/bits"

	secp "github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// fe is an element of secp256k1's field, p = 2^256 − c with c = 2^32 + 977,
// as four little-endian 64-bit words. Values are kept below 2^256 but not
// always below p ("weakly reduced": 2^256 ≡ c lets every operation fold its
// carry back in); normalize gives the unique value below p, which equality,
// parity and bytes use.
//
// It exists for speed only: decred's FieldVal (ten 26-bit words) costs ~3×
// more per multiplication than four 64×64→128-bit products. It serves the
// verifier (strauss.go, verify_go.go): the multiplication loop, the lift of
// keys and their tables; decred keeps the scalars mod n and computes
// 2^128·G once. Variable time, as everything in the verifier: public data
// only.
type fe [4]uint64

// feC is 2^256 − p.
const feC = 0x1000003d1

func feFromBytes(b *[32]byte) fe {
	return fe{
		binary.BigEndian.Uint64(b[24:]), binary.BigEndian.Uint64(b[16:]),
		binary.BigEndian.Uint64(b[8:]), binary.BigEndian.Uint64(b[:8]),
	}
}

// feFromField converts a decred field value (any magnitude it allows).
func feFromField(f *secp.FieldVal) fe {
	var n secp.FieldVal
	n.Set(f).Normalize()
	return feFromBytes(n.Bytes())
}

func (z *fe) bytes() [32]byte {
	n := *z
	n.normalize()
	var b [32]byte
	binary.BigEndian.PutUint64(b[:8], n[3])
	binary.BigEndian.PutUint64(b[8:], n[2])
	binary.BigEndian.PutUint64(b[16:], n[1])
	binary.BigEndian.PutUint64(b[24:], n[0])
	return b
}

// normalize reduces z below p: z ≥ p exactly when z + c carries out of
// 2^256, and then that sum's low 256 bits are z − p.
func (z *fe) normalize() {
	r0, c := bits.Add64(z[0], feC, 0)
	r1, c := bits.Add64(z[1], 0, c)
	r2, c := bits.Add64(z[2], 0, c)
	r3, c := bits.Add64(z[3], 0, c)
	if c != 0 {
		*z = fe{r0, r1, r2, r3}
	}
}

func (z *fe) isZero() bool {
	n := *z
	n.normalize()
	return n == fe{}
}

func (z *fe) equal(a *fe) bool {
	x, y := *z, *a
	x.normalize()
	y.normalize()
	return x == y
}

func (z *fe) isOdd() bool {
	n := *z
	n.normalize()
	return n[0]&1 == 1
}

// add sets z = a + b.
func (z *fe) add(a, b *fe) {
	r0, c := bits.Add64(a[0], b[0], 0)
	r1, c := bits.Add64(a[1], b[1], c)
	r2, c := bits.Add64(a[2], b[2], c)
	r3, c := bits.Add64(a[3], b[3], c)
	if c != 0 { // 2^256 ≡ c
		r0, c = bits.Add64(r0, feC, 0)
		r1, c = bits.Add64(r1, 0, c)
		r2, c = bits.Add64(r2, 0, c)
		r3, c = bits.Add64(r3, 0, c)
		if c != 0 { // wrapped twice: what is left is below c, no carry now
			r0 += feC
		}
	}
	*z = fe{r0, r1, r2, r3}
}

// sub sets z = a − b.
func (z *fe) sub(a, b *fe) {
	r0, c := bits.Sub64(a[0], b[0], 0)
	r1, c := bits.Sub64(a[1], b[1], c)
	r2, c := bits.Sub64(a[2], b[2], c)
	r3, c := bits.Sub64(a[3], b[3], c)
	if c != 0 { // borrowed 2^256: give back c (2^256 − p)
		r0, c = bits.Sub64(r0, feC, 0)
		r1, c = bits.Sub64(r1, 0, c)
		r2, c = bits.Sub64(r2, 0, c)
		r3, c = bits.Sub64(r3, 0, c)
		if c != 0 { // borrowed again: now at least 2^256 − c, no borrow
			r0 -= feC
		}
	}
	*z = fe{r0, r1, r2, r3}
}

// neg sets z = −a.
func (z *fe) neg(a *fe) {
	var zero fe
	z.sub(&zero, a)
}

// mac is a·b + acc + carry as (hi, lo); it cannot overflow 128 bits.
func mac(acc, a, b, carry uint64) (hi, lo uint64) {
	hi, lo = bits.Mul64(a, b)
	var c uint64
	lo, c = bits.Add64(lo, acc, 0)
	hi += c
	lo, c = bits.Add64(lo, carry, 0)
	hi += c
	return hi, lo
}

// mul sets z = a·b (schoolbook, unrolled).
func (z *fe) mul(a, b *fe) {
	a0, a1, a2, a3 := a[0], a[1], a[2], a[3]
	b0, b1, b2, b3 := b[0], b[1], b[2], b[3]
	var t0, t1, t2, t3, t4, t5, t6, t7, c uint64
	c, t0 = mac(0, a0, b0, 0)
	c, t1 = mac(0, a0, b1, c)
	c, t2 = mac(0, a0, b2, c)
	t4, t3 = mac(0, a0, b3, c)
	c, t1 = mac(t1, a1, b0, 0)
	c, t2 = mac(t2, a1, b1, c)
	c, t3 = mac(t3, a1, b2, c)
	t5, t4 = mac(t4, a1, b3, c)
	c, t2 = mac(t2, a2, b0, 0)
	c, t3 = mac(t3, a2, b1, c)
	c, t4 = mac(t4, a2, b2, c)
	t6, t5 = mac(t5, a2, b3, c)
	c, t3 = mac(t3, a3, b0, 0)
	c, t4 = mac(t4, a3, b1, c)
	c, t5 = mac(t5, a3, b2, c)
	t7, t6 = mac(t6, a3, b3, c)
	z.reduce(&[8]uint64{t0, t1, t2, t3, t4, t5, t6, t7})
}

// sqr sets z = a².
func (z *fe) sqr(a *fe) {
	// the six cross products once, doubled, then the four squares
	var t [8]uint64
	var c, hi, lo uint64
	// row a0·(a1, a2, a3)
	t[2], t[1] = bits.Mul64(a[0], a[1])
	hi, lo = bits.Mul64(a[0], a[2])
	t[2], c = bits.Add64(t[2], lo, 0)
	t[3] = hi + c
	hi, lo = bits.Mul64(a[0], a[3])
	t[3], c = bits.Add64(t[3], lo, 0)
	t[4] = hi + c
	// a1·(a2, a3)
	hi, lo = bits.Mul64(a[1], a[2])
	t[3], c = bits.Add64(t[3], lo, 0)
	hi += c
	t[4], c = bits.Add64(t[4], hi, 0)
	t[5] = c
	hi, lo = bits.Mul64(a[1], a[3])
	t[4], c = bits.Add64(t[4], lo, 0)
	hi += c
	t[5], c = bits.Add64(t[5], hi, 0)
	t[6] = c
	// a2·a3
	hi, lo = bits.Mul64(a[2], a[3])
	t[5], c = bits.Add64(t[5], lo, 0)
	hi += c
	t[6], c = bits.Add64(t[6], hi, 0)
	t[7] = c
	// double
	t[7] = t[7]<<1 | t[6]>>63
	t[6] = t[6]<<1 | t[5]>>63
	t[5] = t[5]<<1 | t[4]>>63
	t[4] = t[4]<<1 | t[3]>>63
	t[3] = t[3]<<1 | t[2]>>63
	t[2] = t[2]<<1 | t[1]>>63
	t[1] <<= 1
	// add the squares
	hi, lo = bits.Mul64(a[0], a[0])
	t[0] = lo
	t[1], c = bits.Add64(t[1], hi, 0)
	hi, lo = bits.Mul64(a[1], a[1])
	t[2], c = bits.Add64(t[2], lo, c)
	t[3], c = bits.Add64(t[3], hi, c)
	hi, lo = bits.Mul64(a[2], a[2])
	t[4], c = bits.Add64(t[4], lo, c)
	t[5], c = bits.Add64(t[5], hi, c)
	hi, lo = bits.Mul64(a[3], a[3])
	t[6], c = bits.Add64(t[6], lo, c)
	t[7], _ = bits.Add64(t[7], hi, c)
	z.reduce(&t)
}

// reduce sets z to the 512-bit t mod p (below 2^256): t = lo + hi·2^256 ≡
// lo + hi·c, folded twice.
func (z *fe) reduce(t *[8]uint64) {
	var r0, r1, r2, r3, carry, c uint64
	carry, r0 = mac(t[0], t[4], feC, 0)
	carry, r1 = mac(t[1], t[5], feC, carry)
	carry, r2 = mac(t[2], t[6], feC, carry)
	carry, r3 = mac(t[3], t[7], feC, carry)
	// carry < 2^34: add carry·c (below 2^67)
	hi, lo := bits.Mul64(carry, feC)
	r0, c = bits.Add64(r0, lo, 0)
	r1, c = bits.Add64(r1, hi, c)
	r2, c = bits.Add64(r2, 0, c)
	r3, c = bits.Add64(r3, 0, c)
	if c != 0 { // wrapped: what is left is below 2^67, adding c carries at most into r1
		r0, c = bits.Add64(r0, feC, 0)
		r1 += c
	}
	*z = fe{r0, r1, r2, r3}
}

// sqrN sets z = a^(2^n).
func (z *fe) sqrN(a *fe, n int) {
	*z = *a
	for range n {
		z.sqr(z)
	}
}

// chain returns a^(2^k − 1) for k = 2, 22, 223: the long runs of ones that
// both p − 2 and (p + 1)/4 begin with.
func chain(a *fe) (x2, x22, x223 fe) {
	var x3, x6, x9, x11, x44, x88, x176, x220 fe
	x2.sqr(a)
	x2.mul(&x2, a)
	x3.sqr(&x2)
	x3.mul(&x3, a)
	x6.sqrN(&x3, 3)
	x6.mul(&x6, &x3)
	x9.sqrN(&x6, 3)
	x9.mul(&x9, &x3)
	x11.sqrN(&x9, 2)
	x11.mul(&x11, &x2)
	x22.sqrN(&x11, 11)
	x22.mul(&x22, &x11)
	x44.sqrN(&x22, 22)
	x44.mul(&x44, &x22)
	x88.sqrN(&x44, 44)
	x88.mul(&x88, &x44)
	x176.sqrN(&x88, 88)
	x176.mul(&x176, &x88)
	x220.sqrN(&x176, 44)
	x220.mul(&x220, &x44)
	x223.sqrN(&x220, 3)
	x223.mul(&x223, &x3)
	return x2, x22, x223
}

// inv sets z = a^(p−2) = 1/a (a ≠ 0): p − 2 is 223 ones, a zero, 22 ones,
// then 0000101101.
func (z *fe) inv(a *fe) {
	x2, x22, x223 := chain(a)
	var t fe
	t.sqrN(&x223, 23) // the zero, then room for 22 ones
	t.mul(&t, &x22)
	t.sqrN(&t, 5) // 00001
	t.mul(&t, a)
	t.sqrN(&t, 3) // 011
	t.mul(&t, &x2)
	t.sqrN(&t, 2) // 01
	z.mul(&t, a)
}

// sqrt sets z = a^((p+1)/4), a square root of a when a has one (the caller
// checks z² = a): (p + 1)/4 is 223 ones, a zero, 22 ones, then 00001100.
func (z *fe) sqrt(a *fe) {
	x2, x22, x223 := chain(a)
	var t fe
	t.sqrN(&x223, 23)
	t.mul(&t, &x22)
	t.sqrN(&t, 6) // 000011
	t.mul(&t, &x2)
	z.sqrN(&t, 2) // 00
}

// jac is a point in Jacobian coordinates (x/z², y/z³), or the point at
// infinity.
type jac struct {
	x, y, z fe
	inf     bool
}

// double sets q = 2q (dbl-2009-l for a = 0: 2M + 5S). secp256k1 has no
// point of order two, so a finite q has y ≠ 0 and 2q is finite.
func (q *jac) double() {
	if q.inf {
		return
	}
	var a, b, c, d, e, f, t fe
	a.sqr(&q.x)         // A = X²
	b.sqr(&q.y)         // B = Y²
	c.sqr(&b)           // C = B²
	t.add(&q.x, &b)     //
	t.sqr(&t)           //
	t.sub(&t, &a)       //
	t.sub(&t, &c)       //
	d.add(&t, &t)       // D = 2((X + B)² − A − C)
	e.add(&a, &a)       //
	e.add(&e, &a)       // E = 3A
	f.sqr(&e)           // F = E²
	q.z.mul(&q.y, &q.z) //
	q.z.add(&q.z, &q.z) // Z3 = 2YZ
	q.x.sub(&f, &d)     //
	q.x.sub(&q.x, &d)   // X3 = F − 2D
	t.sub(&d, &q.x)     //
	q.y.mul(&e, &t)     //
	c.add(&c, &c)       //
	c.add(&c, &c)       //
	c.add(&c, &c)       // 8C
	q.y.sub(&q.y, &c)   // Y3 = E(D − X3) − 8C
}

// addAffine sets q = q + (x2, y2), a finite point given in affine
// coordinates (8M + 3S), the equal and opposite cases included.
func (q *jac) addAffine(x2, y2 *fe) {
	if q.inf {
		q.x, q.y, q.z, q.inf = *x2, *y2, fe{1}, false
		return
	}
	var z1z1, u2, s2, h, r fe
	z1z1.sqr(&q.z)
	u2.mul(x2, &z1z1)
	s2.mul(y2, &q.z)
	s2.mul(&s2, &z1z1)
	h.sub(&u2, &q.x)
	r.sub(&s2, &q.y)
	if h.isZero() {
		if r.isZero() { // the same point
			q.double()
		} else { // opposite points
			q.inf = true
		}
		return
	}
	var hh, hhh, v, t fe
	hh.sqr(&h)
	hhh.mul(&h, &hh)
	v.mul(&q.x, &hh)
	q.x.sqr(&r)
	q.x.sub(&q.x, &hhh)
	q.x.sub(&q.x, &v)
	q.x.sub(&q.x, &v) // X3 = R² − H³ − 2V
	t.sub(&v, &q.x)
	t.mul(&r, &t)
	q.y.mul(&q.y, &hhh)
	q.y.sub(&t, &q.y) // Y3 = R(V − X3) − Y1·H³
	q.z.mul(&q.z, &h) // Z3 = Z1·H
}
