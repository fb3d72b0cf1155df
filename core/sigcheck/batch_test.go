//go:build !libsecp256k1

package sigcheck

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/internal/testkit"
)

// brokenProof is a signature broken in one of the ways BIP-340 names (or
// valid, kind 0), built from a fresh valid one; want is what btcec says.
func brokenProof(t testing.TB, r *rand.Rand, kind int) (p proof, want bool) {
	t.Helper()
	for {
		d, k := randomScalar(r), randomScalar(r)
		if d.IsZero() || k.IsZero() {
			continue
		}
		for i := range p.id {
			p.id[i] = byte(r.Uint32())
		}
		flip := func(b []byte) { b[r.IntN(len(b))] ^= 1 << r.IntN(8) }
		b := none
		switch kind {
		case 5:
			b = nonceParity
		case 6:
			b = keyParity
		case 7:
			b = infinity
		case 8:
			b = wrongMessage
		}
		p.pk, p.sig = signRaw(d, k, p.id, b)
		switch kind {
		case 1:
			flip(p.sig[32:])
		case 2:
			flip(p.sig[:32])
		case 3:
			flip(p.id[:])
		case 4:
			flip(p.pk[:])
		case 9: // s ≥ n
			sv := new(big.Int).SetBytes(p.sig[32:])
			if sv.Add(sv, curveN); sv.BitLen() > 256 {
				sv.Add(curveN, big.NewInt(int64(r.IntN(1000))))
			}
			sv.FillBytes(p.sig[32:])
		case 10: // r ≥ p
			new(big.Int).Add(curveP, big.NewInt(int64(r.IntN(0x3d0)))).FillBytes(p.sig[:32])
		case 11: // a key that is no curve point
			for {
				for i := range p.pk {
					p.pk[i] = byte(r.Uint32())
				}
				var x, y btcec.FieldVal
				if x.SetBytes(&p.pk) == 0 && !btcec.DecompressY(&x, false, &y) {
					break
				}
			}
		case 12: // an r that is no curve point's x
			for {
				var x, y btcec.FieldVal
				for i := range 32 {
					p.sig[i] = byte(r.Uint32())
				}
				if x.SetByteSlice(p.sig[:32]) || !btcec.DecompressY(&x, false, &y) {
					break
				}
			}
		}
		return p, btcecVerify(&p.id, &p.pk, &p.sig)
	}
}

const brokenKinds = 13

// TestBatchAgreesWithSingleChecks: a batch of signatures verifies together
// exactly when each verifies alone (and btcec agrees), for batches of 2 to
// 40 valid signatures with none, one or two broken in each of BIP-340's
// ways, anywhere in the batch.
func TestBatchAgreesWithSingleChecks(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	var valid, refused int
	for round := range differentialRounds / 4 {
		n := 2 + r.IntN(39)
		batch := make([]proof, n)
		all := true
		for i := range batch {
			kind := 0
			if r.IntN(n) < 2 && round%3 != 0 { // a third of the batches all valid
				kind = r.IntN(brokenKinds)
			}
			var want bool
			batch[i], want = brokenProof(t, r, kind)
			if got := verifySchnorr(&batch[i].id, &batch[i].pk, &batch[i].sig); got != want {
				t.Fatalf("round %d: single check %v, btcec %v (kind %d)", round, got, want, kind)
			}
			all = all && want
		}
		if got := verifyBatch(batch); got != all {
			t.Fatalf("round %d: batch of %d verifies %v, single checks say %v", round, n, got, all)
		}
		if all {
			valid++
		} else {
			refused++
		}
	}
	if valid < differentialRounds/20 || refused < differentialRounds/20 {
		t.Fatalf("%d valid and %d refused batches: the cases do not cover both answers", valid, refused)
	}
}

// TestEventsAnswersAsEvent: Events gives each event of a list the answer
// Event gives it (ids, keys and signatures changed in places, repeats and
// events the table already holds included), and fills the table as Event
// does.
func TestEventsAnswersAsEvent(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	signers := []testkit.Key{testkit.NewKey(t), testkit.NewKey(t), testkit.NewKey(t)}
	for round := range 40 {
		Forget()
		evts := make([]*nostr.Event, 1+r.IntN(40))
		var prev *nostr.Event
		for i := range evts {
			k := signers[r.IntN(len(signers))]
			evts[i] = k.Event(t, 1617, nostr.Timestamp(1_700_000_000+r.IntN(1000)), nil, randomText(r))
			if prev != nil && r.IntN(8) == 0 {
				evts[i] = mutate(r, evts[i], prev)
			}
			if r.IntN(10) == 0 {
				Event(evts[i]) // already verified
			}
			prev = evts[i]
		}
		got := make([]Result, len(evts))
		Events(evts, got)
		for i, e := range evts {
			if want := EventUncached(e); got[i] != want {
				t.Fatalf("round %d, event %d of %d: Events %d, Event %d", round, i, len(evts), got[i], want)
			}
			before := Verifications()
			if Event(e) == Valid && Verifications() != before {
				t.Fatalf("round %d: a valid event Events checked was not remembered", round)
			}
		}
	}
}

// TestEventsVerifiesEachSignatureOnce: a batch that verifies counts one
// verification per signature, and its events are remembered: checking them
// again costs none.
func TestEventsVerifiesEachSignatureOnce(t *testing.T) {
	Forget()
	k := testkit.NewKey(t)
	evts := make([]*nostr.Event, 20)
	for i := range evts {
		evts[i] = k.Event(t, 1, nostr.Timestamp(1_700_000_000+i), nil, "x")
	}
	before := Verifications()
	out := make([]Result, len(evts))
	Events(evts, out)
	for i, r := range out {
		if r != Valid {
			t.Fatalf("event %d: %d", i, r)
		}
	}
	if n := Verifications() - before; n != int64(len(evts)) {
		t.Fatalf("%d verifications for %d events", n, len(evts))
	}
	Events(evts, out)
	if n := Verifications() - before; n != int64(len(evts)) {
		t.Fatalf("checking them again verified %d more", n-int64(len(evts)))
	}
}

// FuzzBatchAgreesWithSingleChecks: the fuzzer's (message, key, signature)
// joins a batch of valid signatures at a place it picks; the batch verifies
// exactly when the fuzzer's signature verifies alone.
//
//	go test -run '^$' -fuzz FuzzBatchAgreesWithSingleChecks -fuzztime 20000x ./core/sigcheck
func FuzzBatchAgreesWithSingleChecks(f *testing.F) {
	r := rand.New(rand.NewPCG(45, 46))
	valid := make([]proof, 12)
	for i := range valid {
		valid[i], _ = brokenProof(f, r, 0)
	}
	for kind := range brokenKinds {
		p, _ := brokenProof(f, r, kind)
		f.Add(uint8(kind), p.id[:], p.pk[:], p.sig[:])
	}
	f.Fuzz(func(t *testing.T, at uint8, m, pk, sig []byte) {
		if len(m) != 32 || len(pk) != 32 || len(sig) != 64 {
			return
		}
		p := proof{id: [32]byte(m), pk: [32]byte(pk), sig: [64]byte(sig)}
		n := 1 + int(at)%len(valid)
		batch := append([]proof(nil), valid[:n]...)
		batch = append(batch[:int(at)%n], append([]proof{p}, batch[int(at)%n:]...)...)
		want := verifySchnorr(&p.id, &p.pk, &p.sig)
		if got := verifyBatch(batch); got != want {
			t.Fatalf("batch of %d with it at %d: %v; alone %v\nmsg %x\npk %x\nsig %x", len(batch), int(at)%n, got, want, m, pk, sig)
		}
		if want != btcecVerify(&p.id, &p.pk, &p.sig) {
			t.Fatalf("single check and btcec disagree")
		}
	})
}

// BenchmarkVerifyBatch reports a signature's share of a batch of 4, 8 and
// 16 against a single check of the same signatures in the same run (16
// authors, their keys in the table), in the thread's CPU time (schedstat:
// steadier than the wall on a shared machine).
//
//	go test -run '^$' -bench VerifyBatch ./core/sigcheck
func BenchmarkVerifyBatch(b *testing.B) {
	r := rand.New(rand.NewPCG(47, 48))
	ps := make([]proof, 16)
	for i := range ps {
		ps[i], _ = brokenProof(b, r, 0)
	}
	for _, n := range []int{4, 8, 16} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			runtime.LockOSThread() // schedstat is the thread's
			defer runtime.UnlockOSThread()
			var single, batch int64
			for b.Loop() {
				t := testkit.ThreadCPU(b)
				for i := range ps[:n] {
					if !verifySchnorr(&ps[i].id, &ps[i].pk, &ps[i].sig) {
						b.Fatal("a valid signature fails")
					}
				}
				t2 := testkit.ThreadCPU(b)
				single += t2 - t
				if !verifyBatch(ps[:n]) {
					b.Fatal("a valid batch fails")
				}
				batch += testkit.ThreadCPU(b) - t2
			}
			per := float64(b.N * n)
			b.ReportMetric(float64(single)/per/1000, "µs/single")
			b.ReportMetric(float64(batch)/per/1000, "µs/batched")
			b.ReportMetric(float64(batch)/float64(single), "batch/single")
		})
	}
}
