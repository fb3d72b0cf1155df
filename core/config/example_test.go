package config

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const examplePath = "../../grasp.toml.example"

// missingFromExample lists the config keys grasp.toml.example does not write.
// Plugin entries are arrays whose default is empty, so the example shows them
// commented out; their keys must appear in that commented block.
func missingFromExample(src []byte) []string {
	written := scanPositions(src)
	var missing []string
	for _, key := range leafKeys(reflect.TypeOf(Config{}), "") {
		if _, ok := written[key]; !ok && !strings.HasPrefix(key, "plugins.") {
			missing = append(missing, key)
		}
	}
	for _, hook := range []string{HookAccept, HookRelaySelection, HookThrottle} {
		key := "plugins." + hook
		if _, ok := written[key]; !ok && !commented(src, `\[\[plugins\.`+hook+`\]\]`) {
			missing = append(missing, key)
		}
	}
	for _, key := range leafKeys(reflect.TypeOf(Plugins{}), "plugins") {
		if _, ok := written[key]; !ok && !slices.Contains([]string{"plugins.accept", "plugins.relay_selection", "plugins.throttle"}, key) {
			missing = append(missing, key)
		}
	}
	for _, field := range leafKeys(reflect.TypeOf(Plugin{}), "") {
		pattern := regexp.QuoteMeta(field) + ` =`
		if field == "config" {
			pattern = `\[plugins\.accept\.config\]`
		}
		if !commented(src, pattern) {
			missing = append(missing, "plugins.accept[]."+field)
		}
	}
	return missing
}

func commented(src []byte, pattern string) bool {
	return regexp.MustCompile(`(?m)^#\s*` + pattern).Match(src)
}

func readExample(t *testing.T) []byte {
	t.Helper()
	src, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatalf("read the example: %v", err)
	}
	return src
}

// TestExampleDecodesToDefaults keeps grasp.toml.example and Default() from
// drifting: the example must decode strictly to exactly the defaults
// (before Load makes its relative paths relative to the file).
func TestExampleDecodesToDefaults(t *testing.T) {
	c, err := Parse(readExample(t), examplePath)
	if err != nil {
		t.Fatalf("the example does not load:\n%v", err)
	}
	want, got := flatten(Default()), flatten(c)
	for _, k := range leafKeys(reflect.TypeOf(Config{}), "") {
		if !reflect.DeepEqual(got[k], want[k]) {
			t.Errorf("%s: example has %#v, Default() has %#v", k, got[k], want[k])
		}
	}
	if !reflect.DeepEqual(c, Default()) {
		t.Errorf("example and Default() differ")
	}
}

func TestExampleListsEveryKey(t *testing.T) {
	if missing := missingFromExample(readExample(t)); len(missing) > 0 {
		t.Fatalf("grasp.toml.example does not list: %s", strings.Join(missing, ", "))
	}
}

// TestExampleCheckCatchesAMissingKey proves the coverage check can fail: drop
// one key line and one commented plugin field, and both are reported.
func TestExampleCheckCatchesAMissingKey(t *testing.T) {
	src := string(readExample(t))
	src = regexp.MustCompile(`(?m)^batch_window = .*\n`).ReplaceAllString(src, "")
	src = regexp.MustCompile(`(?m)^# on_error = .*\n`).ReplaceAllString(src, "")
	missing := missingFromExample([]byte(src))
	if !slices.Equal(missing, []string{"sync.batch_window", "plugins.accept[].on_error"}) {
		t.Fatalf("missing = %v", missing)
	}
}

func TestExampleHasACommentOnEveryKey(t *testing.T) {
	src := readExample(t)
	for i, line := range strings.Split(string(src), "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") || strings.HasPrefix(trimmed, "[") {
			continue
		}
		if !strings.Contains(line, " # ") {
			t.Errorf("line %d has no comment: %q", i+1, line)
		}
	}
}

func TestExampleComparisonCatchesADriftedValue(t *testing.T) {
	src := strings.Replace(string(readExample(t)), "consolidate_above = 70", "consolidate_above = 71", 1)
	c, err := Parse([]byte(src), "drifted")
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(c, Default()) {
		t.Fatal("a changed value in the example still compares equal to Default()")
	}
}

// TestExampleMarksWhatAReloadApplies keeps the "(reload)" marks of
// grasp.toml.example equal to what a reload applies (Reloadable): an
// operator must not believe a key changes on SIGHUP when it needs a restart.
func TestExampleMarksWhatAReloadApplies(t *testing.T) {
	src := readExample(t)
	lines := strings.Split(string(src), "\n")
	for key, pos := range scanPositions(src) {
		if !slices.Contains(leafKeys(reflect.TypeOf(Config{}), ""), key) {
			continue // a table header
		}
		marked := strings.Contains(lines[pos.Line-1], "(reload)")
		if marked != Reloadable(key) {
			t.Errorf("%s (line %d): marked (reload) = %v, but Reloadable = %v", key, pos.Line, marked, Reloadable(key))
		}
	}
	for _, hook := range []string{HookAccept, HookRelaySelection, HookThrottle} {
		if !Reloadable("plugins." + hook) {
			t.Errorf("plugins.%s: the plugin entries must be reloadable", hook)
		}
	}
	if !commented(src, `\(reload\) Each hook`) {
		t.Error("the commented [[plugins.*]] block must say the entries are applied on reload")
	}
}
