package config

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// An upgraded server reports the keys an old config still sets, each at its
// line, with what to do (issue 18 part 4, audit F18f).
func TestRemovedKeysReportedWithWhatToDo(t *testing.T) {
	src := "[purgatory]\nttl = \"30m\"\nrejected_hot_ttl = \"2m\"\n  rejected_cold_ttl = \"7d\"\n"
	e := parseErr(t, src)
	want := []string{
		"grasp.toml:3:1: purgatory.rejected_hot_ttl: removed: it never had an effect; rejected events are not kept for re-evaluation; delete it",
		"grasp.toml:4:3: purgatory.rejected_cold_ttl: removed: it never had an effect; rejected event ids are not remembered; delete it",
	}
	wantProblems(t, e, want)
}

func TestRenamedKeyNamesItsReplacement(t *testing.T) {
	saved := retired
	t.Cleanup(func() { retired = saved })
	retired = map[string]retiredKey{
		"sync.window": {To: "sync.batch_window", Why: "same meaning"},
		"scheduler":   {To: "sync", Why: "the section was split"},
	}
	e := parseErr(t, "[sync]\nwindow = \"5s\"\n[scheduler]\nx = 1\n[health]\nbogus = 1\n")
	want := []string{
		"grasp.toml:2:1: sync.window: renamed to sync.batch_window: same meaning; rename it",
		"grasp.toml:3:1: scheduler: renamed to sync: the section was split; rename it",
		"grasp.toml:6:1: health.bogus: unknown key",
	}
	wantProblems(t, e, want)
}

// A retired key must not also be a live one (it would never be reported),
// and a rename must point at a key that exists.
func TestRetiredTableAgreesWithSchema(t *testing.T) {
	live := leafKeys(reflect.TypeOf(Config{}), "")
	isLive := func(k string) bool {
		for _, l := range live {
			if l == k || strings.HasPrefix(l, k+".") {
				return true
			}
		}
		return false
	}
	for old, r := range retired {
		if isLive(old) {
			t.Errorf("%s is listed as retired but is still a config key", old)
		}
		if r.To != "" && !isLive(r.To) {
			t.Errorf("%s is renamed to %s, which is not a config key", old, r.To)
		}
		if r.Why == "" {
			t.Errorf("%s: say why it was retired", old)
		}
	}
}

// Operators read the upgrade table in docs/operations.md before they run
// check-config; every retired key must be there.
func TestRetiredKeysDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for old := range retired {
		if !strings.Contains(string(doc), "| `"+old+"` |") {
			t.Errorf("docs/operations.md (Upgrades) does not list %s", old)
		}
	}
}

func wantProblems(t *testing.T, e *Error, want []string) {
	t.Helper()
	var got []string
	for _, p := range e.Problems {
		got = append(got, p.String())
	}
	if !slices.Equal(got, want) {
		t.Fatalf("problems\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// purgatory.announcement_retention was accepted and validated but nothing
// read it (issue 11 part 6): an old config gets what to do at its line, and
// the key that does apply, purgatory.ttl, is still accepted beside it.
func TestRetired_AnnouncementRetentionReportedWithReplacement(t *testing.T) {
	e := parseErr(t, "[purgatory]\nttl = \"30m\"\nannouncement_retention = \"1d\"\n")
	wantProblems(t, e, []string{
		"grasp.toml:3:1: purgatory.announcement_retention: removed: it never had an effect; an expired announcement is dropped with its repository at purgatory.ttl; delete it",
	})
	// Control: without the retired key the same file loads.
	if _, err := Parse([]byte("[purgatory]\nttl = \"30m\"\n"), "grasp.toml"); err != nil {
		t.Fatalf("purgatory.ttl alone: %v", err)
	}
}
