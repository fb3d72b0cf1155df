package negindex

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/bits"

	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
)

// NIP-77's fingerprint of a range is the SHA-256 of the sum of its ids
// (256-bit little-endian integers, modulo 2^256) and its count. Summing
// every id of every range the engine asks about costs a pass over the whole
// snapshot per round when the sets differ everywhere (1 % missing at
// 200,000 events: 26 rounds, 88 % of the server's CPU in the adds; issue 27
// part 3). A snapshot therefore keeps, once a range past sumDirect is
// asked, the running sum at every sumStep-th item: a range's sum is then the
// difference of two of them plus at most 2*sumStep adds. That is 1 B per
// item, built in one pass.
const (
	sumStep   = 32
	sumDirect = 4 * sumStep
)

// sum256 is a 256-bit little-endian integer as four 64-bit limbs, lowest
// first.
type sum256 [4]uint64

func (s *sum256) add(id *[32]byte) {
	var c uint64
	for i := range s {
		s[i], c = bits.Add64(s[i], binary.LittleEndian.Uint64(id[8*i:]), c)
	}
}

func (s *sum256) plus(o *sum256) {
	var c uint64
	for i := range s {
		s[i], c = bits.Add64(s[i], o[i], c)
	}
}

func (s *sum256) minus(o *sum256) {
	var b uint64
	for i := range s {
		s[i], b = bits.Sub64(s[i], o[i], b)
	}
}

func (s *sum256) fingerprint(n int) string {
	var buf [32 + 10]byte
	for i := range s {
		binary.LittleEndian.PutUint64(buf[8*i:], s[i])
	}
	h := sha256.Sum256(append(buf[:32], negentropy.EncodeVarInt(n)...))
	return hex.EncodeToString(h[:negentropy.FingerprintSize])
}

// rangeSum is the sum of the ids in [begin, end).
func (s *Snapshot) rangeSum(begin, end int) sum256 {
	var sum sum256
	if end-begin <= sumDirect {
		s.added += end - begin
		for i := begin; i < end; i++ {
			sum.add(&s.items[i].id)
		}
		return sum
	}
	s.sh.once.Do(func() {
		s.sh.sums = buildSums(s.items)
		s.added += len(s.items)
	})
	sums := s.sh.sums
	b, e := (begin+sumStep-1)/sumStep, end/sumStep
	sum = sums[e]
	sum.minus(&sums[b])
	s.added += b*sumStep - begin + end - e*sumStep
	// the items before the first step and after the last one (addition
	// modulo 2^256 is order-free)
	for i := begin; i < b*sumStep; i++ {
		sum.add(&s.items[i].id)
	}
	for i := e * sumStep; i < end; i++ {
		sum.add(&s.items[i].id)
	}
	return sum
}

// buildSums returns sums with sums[k] the sum of the first k*sumStep items.
func buildSums(items []item) []sum256 {
	sums := make([]sum256, len(items)/sumStep+1)
	var run sum256
	for i := range items {
		if i%sumStep == 0 {
			sums[i/sumStep] = run
		}
		run.add(&items[i].id)
	}
	if len(items)%sumStep == 0 {
		sums[len(items)/sumStep] = run
	}
	return sums
}
