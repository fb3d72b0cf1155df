//go:build !libsecp256k1

package sigcheck

import (
	"crypto/sha256"
	"math/big"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"
)

// The tests below check the combined multiplication (strauss.go) against
// independent arithmetic: math/big for the constants, the split and the NAF;
// decred's separate s·G and k·P for the multiplication; btcec's
// schnorr.Verify for the whole verification, on valid signatures and on
// every kind of broken one.

var (
	curveN, _ = new(big.Int).SetString("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141", 16)
	curveP, _ = new(big.Int).SetString("fffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2f", 16)
)

func bigHex(t testing.TB, h string) *big.Int {
	v, ok := new(big.Int).SetString(h, 16)
	if !ok {
		t.Fatalf("bad hex %s", h)
	}
	return v
}

func scalarBig(s *btcec.ModNScalar) *big.Int {
	b := s.Bytes()
	return new(big.Int).SetBytes(b[:])
}

func limbsBig(w []uint64) *big.Int {
	v := new(big.Int)
	for i := len(w) - 1; i >= 0; i-- {
		v.Lsh(v, 64).Or(v, new(big.Int).SetUint64(w[i]))
	}
	return v
}

// TestEndomorphismConstants: λ and β are nontrivial cube roots of one mod n
// and p, λ·G = (β·G.x, G.y) (computed with decred's table multiplication,
// which uses no endomorphism), the lattice vectors are in the kernel of
// a + b·λ with determinant n, and g1, g2 are ⌊b2·2^320/n⌋ and ⌊−b1·2^320/n⌋.
func TestEndomorphismConstants(t *testing.T) {
	lambda, beta := scalarBig(&endoLambda), new(big.Int).SetBytes(endoBeta.Bytes()[:])
	three := big.NewInt(3)
	if new(big.Int).Exp(lambda, three, curveN).Cmp(big.NewInt(1)) != 0 || lambda.Cmp(big.NewInt(1)) == 0 {
		t.Fatal("λ is not a nontrivial cube root of 1 mod n")
	}
	if new(big.Int).Exp(beta, three, curveP).Cmp(big.NewInt(1)) != 0 || beta.Cmp(big.NewInt(1)) == 0 {
		t.Fatal("β is not a nontrivial cube root of 1 mod p")
	}
	lg := affine(&endoLambda)
	g := affine(scalar(1))
	var bx btcec.FieldVal
	bx.Mul2(&g.X, &endoBeta).Normalize()
	if !lg.X.Equals(&bx) || !lg.Y.Equals(&g.Y) {
		t.Fatal("λ·G is not (β·G.x, G.y)")
	}
	a1 := bigHex(t, "3086d221a7d46bcde86c90e49284eb15")
	b1 := new(big.Int).Neg(bigHex(t, "e4437ed6010e88286f547fa90abfe4c3"))
	a2 := bigHex(t, "114ca50f7a8e2f3f657c1108d9d44cfd8")
	b2 := new(big.Int).Set(a1)
	for _, v := range [][2]*big.Int{{a1, b1}, {a2, b2}} {
		r := new(big.Int).Mul(v[1], lambda)
		r.Add(r, v[0]).Mod(r, curveN)
		if r.Sign() != 0 {
			t.Fatalf("(%x, %x) is not in the lattice", v[0], v[1])
		}
	}
	det := new(big.Int).Sub(new(big.Int).Mul(a1, b2), new(big.Int).Mul(a2, b1))
	if det.Cmp(curveN) != 0 {
		t.Fatalf("the basis' determinant is %x, not n", det)
	}
	if scalarBig(&endoNegB1).Cmp(new(big.Int).Neg(b1)) != 0 || scalarBig(&endoB2).Cmp(b2) != 0 {
		t.Fatal("−b1 or b2 differ from the lattice")
	}
	for _, c := range []struct {
		got []uint64
		b   *big.Int
	}{{endoG1[:], b2}, {endoG2[:], new(big.Int).Neg(b1)}} {
		want := new(big.Int).Lsh(c.b, 320)
		want.Div(want, curveN)
		if limbsBig(c.got).Cmp(want) != 0 {
			t.Fatalf("g = %x, want %x", limbsBig(c.got), want)
		}
	}
}

// edgeScalars are the scalars where carries, signs and lengths change.
func edgeScalars(t testing.TB) []*btcec.ModNScalar {
	var out []*btcec.ModNScalar
	for _, h := range []string{
		"0", "1", "2", "3", "f", "10", "1f",
		"ffffffffffffffffffffffffffffffff", "100000000000000000000000000000000", "100000000000000000000000000000001",
		"7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0", // (n−1)/2
		"7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a1", // (n+1)/2
		"fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364140", // n−1
		"fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd036413f",
		"5363ad4cc05c30e0a5261c028812645a122e22ea20816678df02967c1b23bd72", // λ
		"ac9c52b33fa3cf1f5ad9e3fd77ed9ba4a880b9fc8ec739c2e0cfc810b51283cf", // n−λ
		"3086d221a7d46bcde86c90e49284eb15", "e4437ed6010e88286f547fa90abfe4c3",
	} {
		var b [32]byte
		v := bigHex(t, h)
		v.FillBytes(b[:])
		var s btcec.ModNScalar
		if s.SetBytes(&b) != 0 {
			t.Fatalf("%s ≥ n", h)
		}
		out = append(out, &s)
	}
	return out
}

func randomScalar(r *rand.Rand) *btcec.ModNScalar {
	var b [32]byte
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	switch r.IntN(4) { // short scalars too
	case 0:
		clear(b[:16])
	case 1:
		clear(b[:31])
	}
	var s btcec.ModNScalar
	s.SetBytes(&b)
	return &s
}

// TestSplitScalarIsExactAndShort: k ≡ k1 + k2·λ (mod n) for edge and random
// k, and both halves, negated when over n/2, are below 2^129.
func TestSplitScalarIsExactAndShort(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	ks := edgeScalars(t)
	for range 3000 {
		ks = append(ks, randomScalar(r))
	}
	lambda := scalarBig(&endoLambda)
	for _, k := range ks {
		k1, k2 := splitScalar(k)
		sum := new(big.Int).Mul(scalarBig(&k2), lambda)
		sum.Add(sum, scalarBig(&k1)).Mod(sum, curveN)
		if sum.Cmp(scalarBig(k)) != 0 {
			t.Fatalf("k = %x: k1 + k2·λ = %x", scalarBig(k), sum)
		}
		for _, h := range []btcec.ModNScalar{k1, k2} {
			if h.IsOverHalfOrder() {
				h.Negate()
			}
			if scalarBig(&h).BitLen() > 129 {
				t.Fatalf("k = %x: a half of %d bits", scalarBig(k), scalarBig(&h).BitLen())
			}
		}
	}
}

// TestWNAF: the digits sum to k, each is odd or zero and below 2^(w−1) in
// size, and w−1 zeros follow each nonzero one, for k up to 2^256 − 1.
func TestWNAF(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	ks := [][4]uint64{{}, {1}, {^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}, {0, 0, 0, 1 << 63}, {0, 1}}
	for range 2000 {
		k := [4]uint64{r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64()}
		for i := range k { // runs of zeros and ones
			switch r.IntN(4) {
			case 0:
				k[i] = 0
			case 1:
				k[i] = ^uint64(0)
			}
		}
		ks = append(ks, k)
	}
	for _, w := range []uint{windowP, windowG} {
		for _, k := range ks {
			var d [nafDigits]int16
			n := wnaf(&d, k, w)
			sum := new(big.Int)
			last := -int(w)
			for i := nafDigits - 1; i >= 0; i-- {
				sum.Lsh(sum, 1).Add(sum, big.NewInt(int64(d[i])))
			}
			for i, v := range d {
				if v == 0 {
					continue
				}
				if v%2 == 0 || v >= 1<<(w-1) || v <= -(1<<(w-1)) || i-last < int(w) || i >= n {
					t.Fatalf("w %d, k %x: digit %d at %d (last %d, used %d)", w, k, v, i, last, n)
				}
				last = i
			}
			if sum.Cmp(limbsBig(k[:])) != 0 || (n > 0 && d[n-1] == 0) {
				t.Fatalf("w %d: the digits of %x sum to %x (used %d)", w, k, sum, n)
			}
		}
	}
}

// separate is s·G + k·P with decred's own two multiplications.
func separate(s, k *btcec.ModNScalar, P *btcec.JacobianPoint) btcec.JacobianPoint {
	var sG, kP, R btcec.JacobianPoint
	btcec.ScalarBaseMultNonConst(s, &sG)
	btcec.ScalarMultNonConst(k, P, &kP)
	btcec.AddNonConst(&sG, &kP, &R)
	return R
}

// toField is an affine table entry as decred's point (z = 1).
func toField(a *affinePoint) btcec.JacobianPoint {
	var p btcec.JacobianPoint
	xb, yb := a.x.bytes(), a.y.bytes()
	p.X.SetBytes(&xb)
	p.Y.SetBytes(&yb)
	p.Z.SetInt(1)
	return p
}

// toDecred is q as decred's point (z = 0 for the point at infinity).
func toDecred(q *jac) btcec.JacobianPoint {
	var p btcec.JacobianPoint
	if q.inf {
		return p
	}
	xb, yb, zb := q.x.bytes(), q.y.bytes(), q.z.bytes()
	p.X.SetBytes(&xb)
	p.Y.SetBytes(&yb)
	p.Z.SetBytes(&zb)
	return p
}

func sameAffine(a, b btcec.JacobianPoint) bool {
	ai := (a.X.IsZero() && a.Y.IsZero()) || a.Z.IsZero()
	bi := (b.X.IsZero() && b.Y.IsZero()) || b.Z.IsZero()
	if ai || bi {
		return ai == bi
	}
	a.ToAffine()
	b.ToAffine()
	return a.X.Equals(&b.X) && a.Y.Equals(&b.Y)
}

// TestSumMulMatchesSeparateProducts: s·G + k·P by the combined
// multiplication equals decred's s·G plus its k·P, for every pair of edge
// scalars and random ones, keys of both parities' secrets, P = G and
// sums that are the point at infinity.
func TestSumMulMatchesSeparateProducts(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	edges := edgeScalars(t)
	for round := range 40 {
		d := randomScalar(r)
		if round == 0 {
			d = scalar(1) // P = G: the generator tables and the author's coincide
		}
		if d.IsZero() {
			continue
		}
		P := affine(d)
		pk := P.X.Bytes()
		if P.Y.IsOdd() { // the table holds the even lift
			P.Y.Negate(1).Normalize()
		}
		a, ok := pubkey(pk)
		if !ok {
			t.Fatal("a curve point's x does not lift")
		}
		pairs := [][2]*btcec.ModNScalar{}
		for _, s := range edges {
			pairs = append(pairs, [2]*btcec.ModNScalar{s, edges[r.IntN(len(edges))]}, [2]*btcec.ModNScalar{s, randomScalar(r)})
		}
		for range 30 {
			pairs = append(pairs, [2]*btcec.ModNScalar{randomScalar(r), randomScalar(r)})
		}
		// s·G − k·P = ∞ for k = s/d' (d' the even lift's secret)
		dd := *d
		if P0 := affine(d); P0.Y.IsOdd() {
			dd.Negate()
		}
		s := randomScalar(r)
		var k btcec.ModNScalar
		k.InverseValNonConst(&dd).Mul(s).Negate()
		pairs = append(pairs, [2]*btcec.ModNScalar{s, &k})
		for _, p := range pairs {
			var got jac
			sumMul(&got, p[0], p[1], &a.odd)
			if !sameAffine(toDecred(&got), separate(p[0], p[1], &P)) {
				t.Fatalf("d %x, s %x, k %x: the combined multiplication differs", scalarBig(d), scalarBig(p[0]), scalarBig(p[1]))
			}
		}
		var inf jac
		sumMul(&inf, s, &k, &a.odd)
		if !inf.inf {
			t.Fatal("s·G − (s/d)·P is not the point at infinity")
		}
	}
}

// btcecVerify is btcec's schnorr.Verify on the bytes: the reference.
func btcecVerify(msg *[32]byte, pk *[32]byte, sig *[64]byte) bool {
	P, err := schnorr.ParsePubKey(pk[:])
	if err != nil {
		return false
	}
	s, err := schnorr.ParseSignature(sig[:])
	if err != nil {
		return false
	}
	return s.Verify(msg[:], P)
}

// differentialRounds bounds TestVerifyAgreesWithBtcec (race_go_test.go
// lowers it under -race, as race_test.go does propertyRounds).
var differentialRounds = 400

// signRaw signs msg with secret d and nonce k by BIP-340's steps, breaking
// rule b (as signEvent does for events).
func signRaw(d, k *btcec.ModNScalar, msg [32]byte, b breaks) (pk [32]byte, sig [64]byte) {
	var dd, kk btcec.ModNScalar
	dd.Set(d)
	kk.Set(k)
	P := affine(&dd)
	if P.Y.IsOdd() && b != keyParity {
		dd.Negate()
	}
	pk = *P.X.Bytes()
	if b == wrongMessage {
		msg[0] ^= 1
	}
	R := affine(&kk)
	if R.Y.IsOdd() && b != nonceParity {
		kk.Negate()
	}
	rb := R.X.Bytes()
	e := challenge(rb[:], pk[:], msg[:])
	var s btcec.ModNScalar
	s.Mul2(e, &dd)
	if b != infinity {
		s.Add(&kk)
	}
	copy(sig[:32], rb[:])
	sb := s.Bytes()
	copy(sig[32:], sb[:])
	return pk, sig
}

// TestVerifyAgreesWithBtcec: over random keys, nonces and messages, the
// verifier answers exactly what btcec's schnorr.Verify answers, for the
// valid signature and for each corruption: a flipped bit in s, r, the
// message or the key, s ≥ n, r ≥ p, R with an odd y, R at infinity, the
// signer's odd-y key, a key that is no curve point or is ≥ p, random bytes.
// Every valid signature verifies and every corruption is refused by both.
func TestVerifyAgreesWithBtcec(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	var agreeValid, agreeBad int
	check := func(what string, msg [32]byte, pk [32]byte, sig [64]byte, want bool) {
		t.Helper()
		got, ref := verifySchnorr(&msg, &pk, &sig), btcecVerify(&msg, &pk, &sig)
		got2 := verifySchnorr(&msg, &pk, &sig) // the key now from the table
		if got != ref || got2 != ref {
			t.Fatalf("%s: verifier %v (again %v), btcec %v\nmsg %x\npk %x\nsig %x", what, got, got2, ref, msg, pk, sig)
		}
		if ref != want {
			t.Fatalf("%s: btcec says %v, the case is built to be %v", what, ref, want)
		}
		if want {
			agreeValid++
		} else {
			agreeBad++
		}
	}
	flip := func(b []byte) { b[r.IntN(len(b))] ^= 1 << r.IntN(8) }
	for range differentialRounds {
		d, k := randomScalar(r), randomScalar(r)
		if d.IsZero() || k.IsZero() {
			continue
		}
		var msg [32]byte
		for i := range msg {
			msg[i] = byte(r.Uint32())
		}
		pk, sig := signRaw(d, k, msg, none)
		check("valid", msg, pk, sig, true)

		s2 := sig
		flip(s2[32:])
		check("bit of s", msg, pk, s2, false)
		r2 := sig
		flip(r2[:32])
		check("bit of r", msg, pk, r2, false)
		m2 := msg
		flip(m2[:])
		check("bit of the message", m2, pk, sig, false)
		p2 := pk
		flip(p2[:])
		check("bit of the key", msg, p2, sig, false)

		sn := sig // s + n when it fits in 32 bytes, else n + a little
		sv := new(big.Int).SetBytes(sig[32:])
		if sv.Add(sv, curveN); sv.BitLen() > 256 {
			sv.Add(curveN, big.NewInt(int64(r.IntN(1000))))
		}
		sv.FillBytes(sn[32:])
		check("s ≥ n", msg, pk, sn, false)
		rp := sig // r ≥ p: x + p when it fits, or p + a little
		rv := new(big.Int).SetBytes(sig[:32])
		if rv.Add(rv, curveP); rv.BitLen() > 256 {
			rv.Add(curveP, big.NewInt(int64(r.IntN(0x3d0))))
		}
		rv.FillBytes(rp[:32])
		check("r ≥ p", msg, pk, rp, false)

		pkO, sigO := signRaw(d, k, msg, nonceParity)
		kR, dP := affine(k), affine(d)
		check("R with odd y", msg, pkO, sigO, !kR.Y.IsOdd())
		pkK, sigK := signRaw(d, k, msg, keyParity)
		check("the signer's odd-y key", msg, pkK, sigK, !dP.Y.IsOdd())
		pkI, sigI := signRaw(d, k, msg, infinity)
		check("R at infinity", msg, pkI, sigI, false)
		pkW, sigW := signRaw(d, k, msg, wrongMessage)
		check("another message", msg, pkW, sigW, false)

		var off [32]byte // an x with no point, and an x ≥ p
		for {
			for i := range off {
				off[i] = byte(r.Uint32())
			}
			var x, y btcec.FieldVal
			if x.SetBytes(&off) == 0 && !btcec.DecompressY(&x, false, &y) {
				break
			}
		}
		check("a key that is no curve point", msg, off, sig, false)
		var over [32]byte
		new(big.Int).Add(curveP, big.NewInt(int64(r.IntN(0x3d0)))).FillBytes(over[:])
		check("a key ≥ p", msg, over, sig, false)
		var junk [64]byte
		for i := range junk {
			junk[i] = byte(r.Uint32())
		}
		check("random bytes", msg, pk, junk, false)
	}
	if agreeValid < differentialRounds || agreeBad < 8*differentialRounds {
		t.Fatalf("%d valid and %d refused cases: the cases do not cover both answers", agreeValid, agreeBad)
	}
}

// TestVerifyConcurrentTables: the generator tables, built once at the first
// verification, come out whole when that first verification is many at once.
func TestVerifyConcurrentTables(t *testing.T) {
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := scalar(uint32(100 + i))
			msg := sha256.Sum256([]byte{byte(i)})
			pk, sig := signRaw(d, scalar(uint32(200+i)), msg, none)
			if !verifySchnorr(&msg, &pk, &sig) {
				t.Errorf("goroutine %d: a valid signature fails", i)
			}
		}()
	}
	wg.Wait()
}

// BenchmarkVerify reports the combined multiplication's time per
// verification against today's btcec path (s·G and e·P apart, the
// decompressed key from a table, as verify_btcec.go did) and btcec's
// schnorr.Verify (which also parses the key), all in this run on 16
// authors' signatures; -fresh is an author never seen (its table built).
func BenchmarkVerify(b *testing.B) {
	type sigCase struct {
		msg, pk [32]byte
		sig     [64]byte
		P       btcec.JacobianPoint
	}
	r := rand.New(rand.NewPCG(11, 12))
	var cs []sigCase
	for len(cs) < 16 {
		d, k := randomScalar(r), randomScalar(r)
		if d.IsZero() || k.IsZero() {
			continue
		}
		var c sigCase
		c.msg = sha256.Sum256([]byte{byte(len(cs))})
		c.pk, c.sig = signRaw(d, k, c.msg, none)
		pub, _ := schnorr.ParsePubKey(c.pk[:])
		pub.AsJacobian(&c.P)
		cs = append(cs, c)
	}
	measure := func(f func(*sigCase) bool) float64 {
		start := time.Now()
		for i := range b.N {
			if !f(&cs[i%len(cs)]) {
				b.Fatal("a valid signature fails")
			}
		}
		return float64(time.Since(start).Nanoseconds()) / float64(b.N)
	}
	before := measure(func(c *sigCase) bool { return btcecCached(&c.msg, &c.pk, &c.sig, &c.P) })
	library := measure(func(c *sigCase) bool { return btcecVerify(&c.msg, &c.pk, &c.sig) })
	after := measure(func(c *sigCase) bool { return verifySchnorr(&c.msg, &c.pk, &c.sig) })
	fresh := measure(func(c *sigCase) bool {
		keys.Lock()
		delete(keys.m, c.pk)
		keys.Unlock()
		return verifySchnorr(&c.msg, &c.pk, &c.sig)
	})
	b.ReportMetric(after/1000, "µs/verify")
	b.ReportMetric(fresh/1000, "µs/verify-fresh-author")
	b.ReportMetric(before/1000, "µs/btcec-cached-key")
	b.ReportMetric(library/1000, "µs/btcec-schnorr.Verify")
	b.ReportMetric(before/after, "speedup")
	b.ReportMetric(before/fresh, "speedup-fresh")
	b.ReportMetric(library/after, "speedup-vs-schnorr.Verify")
}

// btcecCached is the verification this package did before the combined
// multiplication (verify_btcec.go up to 0ae9c43): btcec's s·G and e·P apart,
// the decompressed key given.
func btcecCached(msg, pk *[32]byte, sig *[64]byte, P *btcec.JacobianPoint) bool {
	var r btcec.FieldVal
	if r.SetByteSlice(sig[:32]) {
		return false
	}
	var s btcec.ModNScalar
	if s.SetByteSlice(sig[32:]) {
		return false
	}
	var buf [64 + 32 + 32 + 32]byte
	copy(buf[:32], challengeTag[:])
	copy(buf[32:64], challengeTag[:])
	copy(buf[64:96], sig[:32])
	copy(buf[96:128], pk[:])
	copy(buf[128:], msg[:])
	h := sha256.Sum256(buf[:])
	var e btcec.ModNScalar
	e.SetBytes(&h)
	e.Negate()
	var sG, eP, R btcec.JacobianPoint
	btcec.ScalarBaseMultNonConst(&s, &sG)
	btcec.ScalarMultNonConst(&e, P, &eP)
	btcec.AddNonConst(&sG, &eP, &R)
	if (R.X.IsZero() && R.Y.IsZero()) || R.Z.IsZero() {
		return false
	}
	R.ToAffine()
	return !R.Y.IsOdd() && r.Equals(&R.X)
}

// FuzzVerifyAgreesWithBtcec: the open-ended form of TestVerifyAgreesWithBtcec,
// seeded with valid signatures and each kind of broken one:
// `go test -run '^$' -fuzz FuzzVerifyAgreesWithBtcec -fuzztime 20000x ./core/sigcheck`.
// Run as a test it checks the seeds.
func FuzzVerifyAgreesWithBtcec(f *testing.F) {
	r := rand.New(rand.NewPCG(19, 20))
	for i := range 8 {
		d, k := randomScalar(r), randomScalar(r)
		if d.IsZero() || k.IsZero() {
			continue
		}
		msg := sha256.Sum256([]byte{byte(i)})
		for _, b := range []breaks{none, keyParity, nonceParity, infinity, wrongMessage} {
			pk, sig := signRaw(d, k, msg, b)
			f.Add(msg[:], pk[:], sig[:])
		}
	}
	f.Fuzz(func(t *testing.T, m, p, s []byte) {
		if len(m) != 32 || len(p) != 32 || len(s) != 64 {
			return
		}
		msg, pk, sig := [32]byte(m), [32]byte(p), [64]byte(s)
		if got, want := verifySchnorr(&msg, &pk, &sig), btcecVerify(&msg, &pk, &sig); got != want {
			t.Fatalf("verifier %v, btcec %v\nmsg %x\npk %x\nsig %x", got, want, msg, pk, sig)
		}
	})
}
