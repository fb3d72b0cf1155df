package policy

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/nbd-wtf/go-nostr"
)

// BenchmarkDecide reports the GRASP rules' cost per event as a ratio to the
// cheapest thing a relay must do anyway for the same event: one store
// lookup by id (khatru's duplicate check). Both run in the same process on
// the same 2,000-event store, so the ratio is comparable across machines.
func BenchmarkDecide(b *testing.B) {
	e := newEnv(b, nil)
	e.stored(e.ann(pkA, "r", true))
	var issue *nostr.Event
	for i := 0; i < 2000; i++ {
		issue = e.event(nip34.KindIssue, pkX, []string{"a", coord(pkA, "r")}, []string{"subject", fmt.Sprint(i)})
		e.stored(issue)
	}
	e.git.add(pkA, "r", oid('1'))
	cases := map[string]*nostr.Event{
		"issue":        e.event(nip34.KindIssue, pkB, []string{"a", coord(pkA, "r")}),
		"comment":      e.event(nip34.KindComment, pkB, []string{"E", issue.ID}),
		"state":        e.state(pkA, "r", "refs/heads/main", oid('1')),
		"announcement": e.ann(pkC, "new", true),
	}
	ctx := context.Background()
	baseline := func() time.Duration {
		start := time.Now()
		for i := 0; i < 200; i++ {
			if _, err := e.rules.stored(ctx, nostr.Filter{IDs: []string{issue.ID}}); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start) / 200
	}
	for name, evt := range cases {
		b.Run(name, func(b *testing.B) {
			base := baseline()
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				e.rules.Decide(ctx, evt, Meta{Source: SourceClient})
			}
			per := time.Since(start) / time.Duration(b.N)
			b.ReportMetric(float64(per)/float64(base), "x-id-lookup")
		})
	}
}
