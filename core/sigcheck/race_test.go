//go:build race

package sigcheck

// Under the race detector each check costs ~20× its time: the random
// comparison keeps its coverage with fewer rounds (the same seed, so the
// same first events).
func init() { propertyRounds = 60 }
