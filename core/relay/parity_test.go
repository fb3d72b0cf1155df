package relay

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
)

// reqFrames sends a REQ with filters and returns its events, or the CLOSED
// reason ("" when it reached EOSE).
func reqFrames(t *testing.T, c *client, sub string, filters ...nostr.Filter) (evts int, closed string) {
	t.Helper()
	parts := []any{"REQ", sub}
	for _, f := range filters {
		parts = append(parts, f)
	}
	frame, err := json.Marshal(parts)
	if err != nil {
		t.Fatal(err)
	}
	c.send(string(frame))
	c.readUntil(func(m []json.RawMessage) bool {
		switch {
		case label(m) == "EVENT" && str(m, 1) == sub:
			evts++
		case label(m) == "CLOSED" && str(m, 1) == sub:
			closed = str(m, 2)
			return true
		}
		return label(m) == "EOSE" && str(m, 1) == sub
	})
	if closed == "" {
		c.send(`["CLOSE","` + sub + `"]`)
	}
	return evts, closed
}

// A filter naming ids gets every match up to len(ids) (core/store), so the
// ids per filter and the filters per REQ are what bound such a query: both
// come from config, are advertised in NIP-11 limitation, and are enforced
// with a "blocked:" CLOSED one past the bound (issue 10 part 4).
func TestG10_IDsPerFilterAndFiltersPerREQBoundedAndAdvertised(t *testing.T) {
	tr := startRelay(t, Options{Limits: config.Limits{MaxFilterItems: 600, MaxFiltersPerReq: 3}})
	resp, body := get(t, http.MethodGet, tr.base+"/", nostrJSON)
	if resp.StatusCode != 200 {
		t.Fatalf("NIP-11: status %d", resp.StatusCode)
	}
	var doc struct {
		Limitation map[string]float64 `json:"limitation"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("NIP-11: %v", err)
	}
	if doc.Limitation["max_filter_items"] != 600 || doc.Limitation["max_filters"] != 3 {
		t.Fatalf("NIP-11 limitation = %v, want max_filter_items 600 and max_filters 3", doc.Limitation)
	}

	k := newKey(t)
	c := connect(t, tr.ws)
	stored := k.event(t, 1, 1_700_000_000, nil, "one")
	mustPublish(t, c, stored)
	idList := func(n int) []string {
		out := []string{stored.ID}
		for len(out) < n {
			out = append(out, fmt.Sprintf("%064x", len(out))) // well-formed, stored nowhere
		}
		return out
	}
	// Exactly the bound: served.
	if n, closed := reqFrames(t, c, "at", nostr.Filter{IDs: idList(600)}); closed != "" || n != 1 {
		t.Fatalf("600 ids: %d events, CLOSED %q; want the stored event and EOSE", n, closed)
	}
	// One past it: refused, saying the bound.
	if _, closed := reqFrames(t, c, "over", nostr.Filter{IDs: idList(601)}); !strings.HasPrefix(closed, "blocked:") || !strings.Contains(closed, "600") {
		t.Fatalf("601 ids: CLOSED %q, want blocked: naming 600", closed)
	}
	three := []nostr.Filter{{IDs: []string{stored.ID}}, {Kinds: []int{1}}, {Authors: []string{k.pk}}}
	if _, closed := reqFrames(t, c, "f3", three...); closed != "" {
		t.Fatalf("3 filters: CLOSED %q, want EOSE", closed)
	}
	if _, closed := reqFrames(t, c, "f4", append(three, nostr.Filter{Kinds: []int{7}})...); !strings.HasPrefix(closed, "blocked:") || !strings.Contains(closed, "3") {
		t.Fatalf("4 filters: CLOSED %q, want blocked: naming 3", closed)
	}
}
