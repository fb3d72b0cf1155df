package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Problem is one thing wrong with a config file.
type Problem struct {
	File string
	Line int // 1-based; 0 when the key is not written in the file
	Col  int
	Key  string // e.g. "sync.batch_window" or "plugins.accept[0].timeout"
	Msg  string
}

func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", p.Line, p.Col)
	}
	b.WriteString(": ")
	if p.Key != "" {
		b.WriteString(p.Key)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Error lists every problem found in a config, in file order, one per line.
type Error struct {
	Problems []Problem
}

func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Load reads and parses the config file at path.
func Load(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	cfg, err := Parse(data, path)
	if err != nil {
		return cfg, err
	}
	cfg.resolvePaths(data, filepath.Dir(path))
	return cfg, nil
}

// resolvePaths makes the relative paths written in the file relative to the
// file's directory (where their author sees them), not to wherever the
// process happens to start. Defaults the file does not set stay relative to
// the working directory, as they are without a config file.
func (c *Config) resolvePaths(data []byte, dir string) {
	var raw map[string]map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		return
	}
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	if _, ok := raw["server"]["data_dir"]; ok {
		c.Server.DataDir = abs(c.Server.DataDir)
	}
	if _, ok := raw["server"]["git_dir"]; ok {
		c.Server.GitDir = abs(c.Server.GitDir)
	}
	if _, ok := raw["metrics"]["admin_token_file"]; ok {
		c.Metrics.AdminTokenFile = abs(c.Metrics.AdminTokenFile)
	}
	if _, ok := raw["plugins"]["dir"]; ok {
		c.Plugins.Dir = abs(c.Plugins.Dir)
	}
	if _, ok := raw["throttle"]["files"]; ok {
		for i, f := range c.Throttle.Files {
			c.Throttle.Files[i] = abs(f)
		}
	}
}

// Absolute makes the paths of c absolute against the working directory, so
// that every part and every admin command sees one spelling of them
// (`grasp admin backup` failed on a relative data_dir: issue 26). Load's
// paths are already relative to the config file; the defaults ("./data")
// are relative to where grasp starts, which is what they mean.
func (c *Config) Absolute() error {
	abs := func(p *string) error {
		if *p == "" || filepath.IsAbs(*p) {
			return nil
		}
		a, err := filepath.Abs(*p)
		if err != nil {
			return fmt.Errorf("resolve %s: %w", *p, err)
		}
		*p = a
		return nil
	}
	for _, p := range []*string{&c.Server.DataDir, &c.Server.GitDir, &c.Plugins.Dir, &c.Metrics.AdminTokenFile} {
		if err := abs(p); err != nil {
			return err
		}
	}
	for i := range c.Throttle.Files {
		if err := abs(&c.Throttle.Files[i]); err != nil {
			return err
		}
	}
	return nil
}

// Parse decodes a grasp.toml document strictly, fills defaults and derived
// values, and validates it. name labels problems (usually the file path). On
// error the returned *Error lists every problem found.
func Parse(data []byte, name string) (Config, error) {
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return Config{}, &Error{Problems: []Problem{{
				File: name, Line: pe.Position.Line, Col: pe.Position.Col,
				Key: pe.LastKey, Msg: pe.Message,
			}}}
		}
		return Config{}, &Error{Problems: []Problem{{File: name, Msg: err.Error()}}}
	}
	d := &decoder{}
	cfg := base()
	d.unify(raw, reflect.ValueOf(&cfg).Elem(), "")
	cfg.fillDerived()
	for _, v := range cfg.check() {
		// A value that failed to decode still holds its default or zero;
		// judging that would only repeat the decode problem in other words.
		if !d.covers(v.Key) {
			d.problems = append(d.problems, v)
		}
	}
	if len(d.problems) == 0 {
		return cfg, nil
	}
	return Config{}, Locate(data, name, d.problems)
}

// Locate places problems at their keys' positions in data (the file name),
// in file order: problems found outside Parse, such as a check of a
// plugin's free-form config table, read like Parse's own.
func Locate(data []byte, name string, problems []Problem) *Error {
	pos := scanPositions(data)
	for i := range problems {
		p := &problems[i]
		p.File = name
		where := pos.lookup(p.Key)
		p.Line, p.Col = where.Line, where.Col
	}
	sort.SliceStable(problems, func(i, j int) bool {
		a, b := problems[i], problems[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	return &Error{Problems: problems}
}

// Validate checks a Config built in code (tests, embedders) with the same
// rules Parse applies. It fills derived values and normalises (npub to hex,
// bare relay hosts to wss://) in place, which is why it takes a pointer.
func (c *Config) Validate() error {
	c.fillDerived()
	problems := c.check()
	if len(problems) == 0 {
		return nil
	}
	for i := range problems {
		problems[i].File = "config"
	}
	return &Error{Problems: problems}
}

// decoder walks the generic TOML tree into the Config struct itself, rather
// than letting toml.Decode do it, because toml.Decode stops at the first bad
// value and we want to report all of them at once.
type decoder struct {
	problems []Problem
}

func (d *decoder) fail(key, format string, args ...any) {
	d.problems = append(d.problems, Problem{Key: key, Msg: fmt.Sprintf(format, args...)})
}

// covers reports whether a decode problem was already reported for key, one
// of its ancestors or one of its descendants.
func (d *decoder) covers(key string) bool {
	for _, p := range d.problems {
		if related(p.Key, key) || related(key, p.Key) {
			return true
		}
	}
	return false
}

// related reports whether path a is b or an ancestor of b.
func related(a, b string) bool {
	return a == b || strings.HasPrefix(b, a) && (b[len(a)] == '.' || b[len(a)] == '[')
}

var (
	durationType = reflect.TypeOf(Duration(0))
	anyMapType   = reflect.TypeOf(map[string]any(nil))
)

func (d *decoder) unify(v any, rv reflect.Value, key string) {
	switch {
	case rv.Type() == durationType:
		s, ok := v.(string)
		if !ok {
			d.fail(key, "want a duration string like \"15m\", \"500ms\" or \"7d\", got %s", tomlType(v))
			return
		}
		dur, err := ParseDuration(s)
		if err != nil {
			d.fail(key, "%v", err)
			return
		}
		rv.Set(reflect.ValueOf(dur))
	case rv.Type() == anyMapType:
		m, ok := v.(map[string]any)
		if !ok {
			d.fail(key, "want a table, got %s", tomlType(v))
			return
		}
		rv.Set(reflect.ValueOf(m))
	case rv.Kind() == reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			d.fail(key, "want a table, got %s", tomlType(v))
			return
		}
		d.unifyStruct(m, rv, key)
	case rv.Kind() == reflect.String:
		s, ok := v.(string)
		if !ok {
			d.fail(key, "want a string, got %s", tomlType(v))
			return
		}
		rv.SetString(s)
	case rv.Kind() == reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			d.fail(key, "want true or false, got %s", tomlType(v))
			return
		}
		rv.SetBool(b)
	case rv.Kind() == reflect.Int:
		n, ok := v.(int64)
		if !ok {
			d.fail(key, "want an integer, got %s", tomlType(v))
			return
		}
		if n > math.MaxInt || n < math.MinInt {
			d.fail(key, "integer %d out of range", n)
			return
		}
		rv.SetInt(n)
	case rv.Kind() == reflect.Slice:
		d.unifySlice(v, rv, key)
	default:
		// Only reachable if a field of an unsupported type is added to Config;
		// TestEveryFieldDecodes walks the struct to catch that.
		d.fail(key, "config field of unsupported Go type %s", rv.Type())
	}
}

func (d *decoder) unifyStruct(m map[string]any, rv reflect.Value, key string) {
	fields := map[string]int{}
	for i := 0; i < rv.NumField(); i++ {
		if tag := rv.Type().Field(i).Tag.Get("toml"); tag != "" {
			fields[tag] = i
		}
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		sub := joinPath(key, []string{k})
		i, ok := fields[k]
		if !ok {
			d.fail(sub, "%s", unknownKeyMsg(retired, sub))
			continue
		}
		if more := rv.Type().Field(i).Tag.Get("more"); more != "" {
			if items, isList := m[k].([]any); isList {
				// A key that takes one value or a list (server.public_url):
				// the first is the field's, the rest go to the field named
				// by the tag, which has no key of its own.
				if len(items) == 0 {
					d.fail(sub, "want a string or a non-empty array of strings, got an empty array")
					continue
				}
				d.unify(items[0], rv.Field(i), sub+"[0]")
				if len(items) > 1 {
					d.unifySlice(items[1:], rv.FieldByName(more), sub)
				}
				continue
			}
		}
		d.unify(m[k], rv.Field(i), sub)
	}
}

func (d *decoder) unifySlice(v any, rv reflect.Value, key string) {
	var items []any
	switch x := v.(type) {
	case []any:
		items = x
	case []map[string]any:
		for _, m := range x {
			items = append(items, m)
		}
	default:
		d.fail(key, "want an array, got %s", tomlType(v))
		return
	}
	if len(items) == 0 {
		// nil, not empty: "files = []" in a file means the same as the
		// default, and the two compare equal.
		rv.Set(reflect.Zero(rv.Type()))
		return
	}
	out := reflect.MakeSlice(rv.Type(), len(items), len(items))
	for i, item := range items {
		d.unify(item, out.Index(i), key+"["+strconv.Itoa(i)+"]")
	}
	rv.Set(out)
}

// TypeName names a decoded TOML value's type the way problems do ("a
// string", "an array"), for checks of free-form tables made elsewhere.
func TypeName(v any) string { return tomlType(v) }

func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case time.Time:
		return "a datetime"
	case []any, []map[string]any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return fmt.Sprintf("%T", v)
}
