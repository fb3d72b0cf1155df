package testkit

import (
	"testing"
	"time"
)

// Side is one of the two ways a ratio benchmark compares: Run does its
// i-th unit of work.
type Side struct {
	Name string
	Run  func(i int)
}

// AlternateRounds runs b.N units of before and of after in alternating
// rounds of the same run (so that load from other processes falls on both
// alike) and reports each side's ns per unit and after's time over
// before's: the ratio is the figure to read, never a timed assertion.
func AlternateRounds(b *testing.B, unit string, before, after Side) {
	b.Helper()
	sides := [2]Side{before, after}
	var took [2]time.Duration
	const rounds = 8
	b.ResetTimer()
	for r := range rounds {
		from, to := r*b.N/rounds, (r+1)*b.N/rounds
		for k := range sides {
			j := (k + r) % 2
			t0 := time.Now()
			for i := from; i < to; i++ {
				sides[j].Run(i)
			}
			took[j] += time.Since(t0)
		}
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(took[0].Nanoseconds())/n, before.Name+"-ns/"+unit)
	b.ReportMetric(float64(took[1].Nanoseconds())/n, after.Name+"-ns/"+unit)
	b.ReportMetric(float64(took[1])/float64(took[0]), after.Name+"/"+before.Name)
}
