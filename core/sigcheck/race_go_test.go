//go:build race && !libsecp256k1

package sigcheck

// Under the race detector each verification costs ~20× its time: the
// comparison with btcec keeps its cases with fewer rounds (the same seed).
func init() { differentialRounds = 60 }
