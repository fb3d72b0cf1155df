package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/internal/jsinterop"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// Issue 15 ("What it must show"): NIP-77 clients that users actually run,
// nostr-tools' and NDK's, reconcile with the gate. The clients are the npm
// packages pinned in internal/jsinterop (its clients/package-lock.json),
// run by node.

type jsItem struct {
	CreatedAt int64  `json:"created_at"`
	ID        string `json:"id"`
}

// runJSClient runs script (a file of internal/jsinterop/clients) against url with
// local as the client's set, and returns the ids it reports it has that the
// relay lacks (have) and the ids the relay has that it lacks (need).
func runJSClient(t *testing.T, script, url string, filter nostr.Filter, local []*nostr.Event) (have, need []string) {
	t.Helper()
	dir := jsinterop.Dir(t)
	in := struct {
		Filter nostr.Filter `json:"filter"`
		Items  []jsItem     `json:"items"`
	}{Filter: filter}
	for _, evt := range local {
		in.Items = append(in.Items, jsItem{int64(evt.CreatedAt), evt.ID})
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatalf("marshal client items: %v", err)
	}
	items := filepath.Join(t.TempDir(), "items.json")
	if err := os.WriteFile(items, b, 0o644); err != nil {
		t.Fatalf("write client items: %v", err)
	}
	ctx := testwait.Context(t)
	cmd := exec.CommandContext(ctx, "node", script, url, items)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Fatalf("node %s did not finish within %v:\n%s", script, testwait.Limit(t), stderr.String())
		}
		t.Fatalf("node %s: %v\nstderr:\n%s\nstdout:\n%s", script, err, stderr.String(), stdout.String())
	}
	if stderr.Len() > 0 {
		t.Logf("node %s stderr:\n%s", script, stderr.String())
	}
	var out struct {
		Have []string `json:"have"`
		Need []string `json:"need"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &out); err != nil {
		t.Fatalf("node %s printed %q, not {have, need}: %v\nstderr:\n%s", script, stdout.String(), err, stderr.String())
	}
	return out.Have, out.Need
}

// jsInteropSync stores 300 events in the relay and lets the JS client, which
// holds 220 of them plus 70 the relay lacks, reconcile; the client must name
// exactly the 80 it lacks as needed and its 70 extras as had. Timestamps
// fall in a 5,000 s window, so some share a second and order by id.
func jsInteropSync(t *testing.T, e *testEnv, script string, filter nostr.Filter) {
	t.Helper()
	relaySet := make([]*nostr.Event, 300)
	for i := range relaySet {
		relaySet[i] = fakeEvent(1_700_000_000 + int64(rand.IntN(5000)))
		if err := e.store.SaveEvent(context.Background(), relaySet[i]); err != nil {
			t.Fatalf("seed store: %v", err)
		}
	}
	var missing, local, extra []*nostr.Event
	for j, k := range rand.Perm(len(relaySet)) {
		if j < 80 {
			missing = append(missing, relaySet[k])
		} else {
			local = append(local, relaySet[k])
		}
	}
	for range 70 {
		extra = append(extra, fakeEvent(1_700_000_000+int64(rand.IntN(5000))))
	}
	local = append(local, extra...)

	have, need := runJSClient(t, script, e.url, filter, local)
	if !sameSet(need, ids(missing)) {
		t.Errorf("%s: client needs %d ids (%d of them among the %d it lacks), want exactly those %d",
			script, len(need), countIn(need, missing), len(missing), len(missing))
	}
	if !sameSet(have, ids(extra)) {
		t.Errorf("%s: client has %d ids to give (%d of them among its %d extras), want exactly those %d",
			script, len(have), countIn(have, extra), len(extra), len(extra))
	}
	// The answer came from a NIP-77 session, not a fallback to REQ.
	if got := e.counter("grasp_gate_negentropy_sessions_total"); got != 1 {
		t.Errorf("%s: %v NIP-77 sessions opened, want 1", script, got)
	}
	if got := e.counter("grasp_gate_negentropy_errors_total"); got != 0 {
		t.Errorf("%s: %v NEG-ERR replies, want 0", script, got)
	}
}

func countIn(got []string, want []*nostr.Event) int {
	set := map[string]bool{}
	for _, evt := range want {
		set[evt.ID] = true
	}
	n := 0
	for _, id := range got {
		if set[id] {
			n++
		}
	}
	return n
}

// The two stores behind NEG-OPEN: the negentropy index (core/negindex), and
// the scan of a query's results when there is no index.
var jsInteropEnvs = []struct {
	name string
	env  func(*testing.T, config.Limits) *testEnv
}{
	{"index", newEnvIndexed},
	{"scan", newEnv},
}

// TestR2_NIP77Interop_NostrTools reconciles with nostr-tools' NegentropySync
// (its filter sent as one object).
func TestR2_NIP77Interop_NostrTools(t *testing.T) {
	for _, c := range jsInteropEnvs {
		t.Run(c.name, func(t *testing.T) {
			jsInteropSync(t, c.env(t, config.Limits{}), "nostrtools.mjs", nostr.Filter{Kinds: []int{1}})
		})
	}
}

// TestR2_NIP77Interop_NDK reconciles with NDK's NDKSync
// (@nostr-dev-kit/sync), whose NEG-OPEN carries its filters in an array.
func TestR2_NIP77Interop_NDK(t *testing.T) {
	for _, c := range jsInteropEnvs {
		t.Run(c.name, func(t *testing.T) {
			jsInteropSync(t, c.env(t, config.Limits{}), "ndk.mjs", nostr.Filter{Kinds: []int{1}})
		})
	}
}
