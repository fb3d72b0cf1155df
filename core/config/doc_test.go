package config

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

const docPath = "../../docs/config.md"

// docRow is one key row of docs/config.md: | `key` | default | on reload | meaning |.
type docRow struct {
	line                 int
	key                  string // dotted path; "entry.<field>" for plugin entry fields
	deflt, reload, means string
}

var (
	docHeading  = regexp.MustCompile(`^#{2,3} `)
	docSection  = regexp.MustCompile("`(\\[\\[?)([a-z_.]+)\\]\\]?`")
	docKeyRow   = regexp.MustCompile("^\\| `([a-z0-9_.]+)` \\|")
	entryPrefix = "entry."
)

// parseConfigDoc reads the key rows of docs/config.md, section by section: a
// heading naming `[section]` starts that section's rows, one naming
// `[[plugins.…]]` the plugin entry fields, "Retired keys" the retired table.
func parseConfigDoc(src []byte) (rows []docRow, retiredRows []docRow) {
	section, inRetired := "", false
	for i, line := range strings.Split(string(src), "\n") {
		if docHeading.MatchString(line) {
			section, inRetired = "", strings.Contains(line, "Retired keys")
			if m := docSection.FindStringSubmatch(line); m != nil {
				section = m[2]
				if m[1] == "[[" {
					section = "entry"
				}
			}
			continue
		}
		m := docKeyRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		r := docRow{line: i + 1, key: m[1]}
		if len(cells) > 1 {
			r.deflt = cells[1]
		}
		if len(cells) > 2 {
			r.reload = cells[2]
		}
		if len(cells) > 3 {
			r.means = strings.Join(cells[3:], " | ")
		}
		switch {
		case inRetired:
			retiredRows = append(retiredRows, r)
		case section != "":
			r.key = section + "." + r.key
			rows = append(rows, r)
		}
	}
	return rows, retiredRows
}

// checkConfigDoc lists every way docs/config.md disagrees with the schema,
// the defaults, Reloadable and the retired keys.
func checkConfigDoc(src []byte) []string {
	var problems []string
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	rows, retiredRows := parseConfigDoc(src)

	keys := leafKeys(reflect.TypeOf(Config{}), "")
	for _, f := range leafKeys(reflect.TypeOf(Plugin{}), "") {
		keys = append(keys, entryPrefix+f)
	}
	seen := map[string]int{}
	defaults := flatten(Default())
	for _, r := range rows {
		seen[r.key]++
		if !slices.Contains(keys, r.key) {
			fail("line %d: %s is not a config key", r.line, r.key)
			continue
		}
		if strings.TrimSpace(r.means) == "" {
			fail("line %d: %s has no meaning", r.line, r.key)
		}
		if field, ok := strings.CutPrefix(r.key, entryPrefix); ok {
			checkEntryRow(r, field, fail)
			continue
		}
		wantReload := "restart"
		if Reloadable(r.key) {
			wantReload = "reload"
		}
		if r.reload != wantReload {
			fail("line %d: %s: on reload %q, want %q", r.line, r.key, r.reload, wantReload)
		}
		section, name := r.key[:strings.LastIndex(r.key, ".")], r.key[strings.LastIndex(r.key, ".")+1:]
		literal := strings.Trim(r.deflt, "`")
		c, err := Parse([]byte(fmt.Sprintf("[%s]\n%s = %s\n", section, name, literal)), "docs/config.md")
		if err != nil {
			fail("line %d: %s: default %s does not decode: %v", r.line, r.key, r.deflt, err)
			continue
		}
		if got := flatten(c)[r.key]; !reflect.DeepEqual(got, defaults[r.key]) {
			fail("line %d: %s: documented default %s is %#v, Default() has %#v", r.line, r.key, r.deflt, got, defaults[r.key])
		}
	}
	for _, k := range keys {
		switch seen[k] {
		case 0:
			fail("%s is not documented", k)
		case 1:
		default:
			fail("%s is documented %d times", k, seen[k])
		}
	}

	documented := map[string]bool{}
	for _, r := range retiredRows {
		documented[r.key] = true
		if _, ok := retired[r.key]; !ok {
			fail("line %d: %s is listed as retired but config does not know it as retired", r.line, r.key)
		}
	}
	var old []string
	for k := range retired {
		old = append(old, k)
	}
	sort.Strings(old)
	for _, k := range old {
		if !documented[k] {
			fail("retired key %s is not listed under Retired keys", k)
		}
	}
	return problems
}

// checkEntryRow checks a [[plugins.<hook>]] field: its per-hook defaults
// must all be named, and a reload applies every one of them.
func checkEntryRow(r docRow, field string, fail func(string, ...any)) {
	if r.reload != "reload" {
		fail("line %d: %s: on reload %q, want \"reload\" (plugin entries are reloaded)", r.line, r.key, r.reload)
	}
	for hook, d := range hookDefaults {
		var want string
		switch field {
		case "timeout":
			want = fmt.Sprintf("%q", Duration(d.timeout).String())
		case "on_error":
			want = fmt.Sprintf("%q", d.onError)
		default:
			continue
		}
		if !strings.Contains(r.deflt, hook) || !strings.Contains(r.deflt, want) {
			fail("line %d: %s: default must name %s's %s", r.line, r.key, hook, want)
		}
	}
}

func readDoc(t *testing.T) []byte {
	t.Helper()
	src, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatalf("read the config doc: %v", err)
	}
	return src
}

// TestConfigDocListsEveryKey keeps docs/config.md, the operator's reference,
// equal to the schema: one row per key with the built-in default and what a
// reload does, and every retired key listed.
func TestConfigDocListsEveryKey(t *testing.T) {
	if problems := checkConfigDoc(readDoc(t)); len(problems) > 0 {
		t.Fatalf("docs/config.md disagrees with core/config:\n%s", strings.Join(problems, "\n"))
	}
}

// TestConfigDocCheckCatchesDrift proves the doc check can fail: a missing
// row, a drifted default, a wrong reload column and a forgotten retired key
// are each reported.
func TestConfigDocCheckCatchesDrift(t *testing.T) {
	src := string(readDoc(t))
	for _, tc := range []struct {
		name, from, to, want string
	}{
		{"missing key", "| `batch_window` |", "| `batch_windw` |", "sync.batch_window is not documented"},
		{"drifted default", "| `consolidate_above` | `70` |", "| `consolidate_above` | `71` |", "sync.consolidate_above: documented default"},
		{"wrong reload", "| `pool_size` | `0` | restart |", "| `pool_size` | `0` | reload |", `plugins.pool_size: on reload "reload", want "restart"`},
		{"retired key", "| `sync.purgatory_register_interval` |", "| `sync.other` |", "retired key sync.purgatory_register_interval is not listed"},
		{"entry default", `accept ` + "`\"50ms\"`", `accept ` + "`\"60ms\"`", `entry.timeout: default must name accept's "50ms"`},
	} {
		mutated := strings.Replace(src, tc.from, tc.to, 1)
		if mutated == src {
			t.Fatalf("%s: %q is no longer in docs/config.md; update the test", tc.name, tc.from)
		}
		problems := strings.Join(checkConfigDoc([]byte(mutated)), "\n")
		if !strings.Contains(problems, tc.want) {
			t.Errorf("%s: want a problem containing %q, got:\n%s", tc.name, tc.want, problems)
		}
	}
}
