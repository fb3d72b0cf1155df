package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/purgatory"
	"github.com/grasp-dev/grasp/core/purgatory/hunt"
	"github.com/grasp-dev/grasp/core/relaysync"
)

// StatusPath is where the metrics listener serves the report.
const StatusPath = "/admin/status"

// Sources are the read-only views the report is built from; nil fields
// are parts this server does not run (sync disabled).
type Sources struct {
	Repos func(ctx context.Context) ([]nip34.RepoRef, error)
	// Private counts the private repositories (GRASP-08): the report names
	// no repository, and counts these apart.
	Private      func() int
	Held         func() []purgatory.Entry
	Placeholders func() int
	Sync         func(ctx context.Context) (relaysync.Snapshot, error)
	Health       func(url string) string // "healthy" | "backoff" | "dead"
	Hunter       func() hunt.Stats
	Clock        clock.Clock
}

// Status is the report, as JSON on the wire.
type Status struct {
	Repos        int                 `json:"repos"`
	PrivateRepos int                 `json:"private_repos"`
	Held         map[string]HeldKind `json:"held"` // by kind label ("30617", "30618", "1618", ...)
	Placeholders int                 `json:"placeholders"`
	Sync         *SyncStatus         `json:"sync,omitempty"`
	Hunter       HunterStatus        `json:"hunter"`
	Generated    time.Time           `json:"generated"`
}

// HeldKind counts purgatory entries of one kind and the age of the oldest.
type HeldKind struct {
	Count     int           `json:"count"`
	OldestAge time.Duration `json:"oldest_age_ns"`
}

// SyncStatus lists the relays the sync manager follows, by health.
type SyncStatus struct {
	Repos  int                 `json:"repos"`
	Relays map[string][]string `json:"relays"` // health -> URLs (sorted)
}

// HunterStatus is the git-data hunter's queue and throttles.
type HunterStatus struct {
	Queued     int            `json:"queued"`
	Hunting    int            `json:"hunting"`
	Waiting    int            `json:"waiting_for_throttle"`
	NeededOIDs int            `json:"needed_objects"`
	InFlight   map[string]int `json:"in_flight"` // per domain
	Naughty    []string       `json:"skipped_hosts"`
	Fetches    uint64         `json:"fetches"`
}

// Build gathers the report.
func Build(ctx context.Context, src Sources) (Status, error) {
	clk := src.Clock
	if clk == nil {
		clk = clock.New()
	}
	now := clk.Now()
	st := Status{Held: map[string]HeldKind{}, Generated: now}
	if src.Repos != nil {
		repos, err := src.Repos(ctx)
		if err != nil {
			return Status{}, fmt.Errorf("list repositories: %w", err)
		}
		st.Repos = len(repos)
	}
	if src.Private != nil {
		st.PrivateRepos = src.Private()
	}
	if src.Held != nil {
		for _, e := range src.Held() {
			k := strconv.Itoa(e.Event.Kind)
			h := st.Held[k]
			h.Count++
			if age := now.Sub(e.HeldAt); age > h.OldestAge {
				h.OldestAge = age
			}
			st.Held[k] = h
		}
	}
	if src.Placeholders != nil {
		st.Placeholders = src.Placeholders()
	}
	if src.Sync != nil {
		snap, err := src.Sync(ctx)
		if err != nil {
			return Status{}, err
		}
		ss := &SyncStatus{Repos: snap.Repos, Relays: map[string][]string{}}
		for _, r := range snap.Relays {
			h := "unknown"
			if src.Health != nil {
				h = src.Health(r.URL)
			}
			ss.Relays[h] = append(ss.Relays[h], r.URL)
		}
		st.Sync = ss
	}
	if src.Hunter != nil {
		h := src.Hunter()
		st.Hunter = HunterStatus{Queued: h.Repos, Hunting: h.Hunting, Waiting: h.Waiting, NeededOIDs: h.NeededOIDs,
			InFlight: h.InFlight, Naughty: h.Naughty, Fetches: h.Fetches}
	}
	return st, nil
}

// Handler serves the report as JSON on GET StatusPath.
func Handler(src Sources) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "GET only", http.StatusMethodNotAllowed)
			return
		}
		st, err := Build(r.Context(), src)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(st)
	})
}

// Write renders the report for a terminal.
func (st Status) Write(w io.Writer) {
	fmt.Fprintf(w, "repositories: %d (private, GRASP-08: %d)\n", st.Repos, st.PrivateRepos)
	if len(st.Held) == 0 {
		fmt.Fprintln(w, "purgatory: empty")
	} else {
		fmt.Fprintln(w, "purgatory:")
		for _, k := range sortedKeys(st.Held) {
			h := st.Held[k]
			fmt.Fprintf(w, "  kind %s: %d held, oldest %s\n", k, h.Count, h.OldestAge.Round(time.Second))
		}
	}
	fmt.Fprintf(w, "placeholders (refs/nostr/<id> awaiting their PR): %d\n", st.Placeholders)
	if st.Sync == nil {
		fmt.Fprintln(w, "sync: disabled")
	} else {
		fmt.Fprintf(w, "sync: %d repositories followed\n", st.Sync.Repos)
		for _, h := range sortedKeys(st.Sync.Relays) {
			urls := st.Sync.Relays[h]
			sort.Strings(urls)
			fmt.Fprintf(w, "  %-8s %d: %s\n", h, len(urls), strings.Join(urls, " "))
		}
	}
	hs := st.Hunter
	fmt.Fprintf(w, "hunter: %d queued, %d hunting, %d waiting for a throttle slot, %d objects missing, %d fetches so far\n",
		hs.Queued, hs.Hunting, hs.Waiting, hs.NeededOIDs, hs.Fetches)
	for _, d := range sortedKeys(hs.InFlight) {
		fmt.Fprintf(w, "  %s: %d in flight\n", d, hs.InFlight[d])
	}
	if len(hs.Naughty) > 0 {
		fmt.Fprintf(w, "  skipped hosts: %s\n", strings.Join(hs.Naughty, " "))
	}
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
