package policy

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/store"
	"github.com/grasp-dev/grasp/internal/testkit"
)

// TestDecideAllocationIndependentOfRelatedContent: deciding a status of a
// stored patch looks the patch up for its kind, author and tags only, so
// what Decide allocates does not grow with the size of the patch's content
// (issue 27 part 5: decoding related events' packed contents cost ~20 µs an
// accepted event). Measured on the badger store, which honours
// store.WithoutContent.
func TestDecideAllocationIndependentOfRelatedContent(t *testing.T) {
	const n = 150
	perDecision := func(size int) (float64, Outcome) {
		st, err := store.New(store.Options{Dir: t.TempDir()}, env.Env{})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := st.Close(); err != nil {
				t.Error(err)
			}
		}()
		e := newEnv(t, nil)
		opts := Options{Service: e.svc, Events: st.Events(), Held: e.held, Git: e.git}
		if e.rules, err = New(opts, env.Env{}); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		save := func(evt *nostr.Event) {
			if err := st.Events().SaveEvent(ctx, evt); err != nil {
				t.Fatal(err)
			}
		}
		k := testkit.NewKey(t)
		pk := k.PK
		save(testkit.Sign(t, k.SK, e.ann(pk, "repo", true)))
		line := "+\tfmt.Println(\"a line of a patch that is not very different from the next\")\n"
		content := strings.Repeat(line, size/len(line)+1)[:size]
		var statuses []*nostr.Event
		for range n {
			patch := e.event(nip34.KindPatch, pk, []string{"a", coord(pk, "repo")}, []string{"t", "root"})
			patch.Content = content
			save(testkit.Sign(t, k.SK, patch))
			statuses = append(statuses, testkit.Sign(t, k.SK, e.event(nip34.KindStatusMerged, pk, []string{"e", patch.ID, "", "root"}, []string{"a", coord(pk, "repo")})))
		}
		var before, after runtime.MemStats
		var last Outcome
		runtime.GC()
		runtime.ReadMemStats(&before)
		for _, s := range statuses {
			last = e.rules.Decide(ctx, s, Meta{Source: SourceClient}).Outcome
		}
		runtime.ReadMemStats(&after)
		return float64(after.TotalAlloc-before.TotalAlloc) / n, last
	}
	small, o1 := perDecision(300)
	large, o2 := perDecision(16000)
	t.Logf("Decide allocates %.0f B per status of a patch of 300 B, %.0f B of 16,000 B (outcomes %v, %v)", small, large, o1, o2)
	if o1 != Store || o2 != Store {
		t.Fatalf("the statuses are not accepted (%v, %v): the case does not reach the lookup it measures", o1, o2)
	}
	if large-small > 8000 {
		t.Fatalf("Decide allocates %.0f B more per status when the patch's content is 15,700 B longer: it decodes the patch's content", large-small)
	}
}
