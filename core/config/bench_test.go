package config

import (
	"os"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
)

// BenchmarkParseExample measures strict Parse of grasp.toml.example against
// the baseline of a plain toml.Decode of the same bytes into a map, measured
// in the same run, and reports the ratio (cost of our strictness, positions
// are only computed on error).
func BenchmarkParseExample(b *testing.B) {
	src, err := os.ReadFile(examplePath)
	if err != nil {
		b.Fatal(err)
	}
	const rounds = 200
	baseline := func() time.Duration {
		start := time.Now()
		for i := 0; i < rounds; i++ {
			var m map[string]any
			if _, err := toml.Decode(string(src), &m); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	ours := func() time.Duration {
		start := time.Now()
		for i := 0; i < rounds; i++ {
			if _, err := Parse(src, "example"); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	var base, mine time.Duration
	for i := 0; i < b.N; i++ {
		base += baseline()
		mine += ours()
	}
	b.ReportMetric(float64(mine)/float64(base), "parse/decode-ratio")
	b.ReportMetric(float64(mine.Microseconds())/float64(b.N*rounds), "us/parse")
}
