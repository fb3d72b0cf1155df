package throttle

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/grasp-dev/grasp/core/env"
)

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// tunerFunc adapts a func to Tuner.
type tunerFunc func(domain string, cur Limits) (Limits, error)

func (f tunerFunc) Throttle(_ context.Context, d string, cur Limits) (Limits, error) {
	return f(d, cur)
}

func TestLoadFilesReadsDomains(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "throttle.d/forges.toml", `
[domains."codeberg.org"]
concurrent = 4
per_minute = 60

[domains."*.sr.ht"]
per_minute = 15
`)
	tab, err := LoadFiles([]string{filepath.Join(dir, "throttle.d/*.toml")})
	if err != nil {
		t.Fatal(err)
	}
	e, ok := tab.Lookup("codeberg.org")
	if !ok || *e.Concurrent != 4 || *e.PerMinute != 60 {
		t.Fatalf("codeberg entry = %+v, %v", e, ok)
	}
	e, ok = tab.Lookup("git.sr.ht")
	if !ok || e.Concurrent != nil || *e.PerMinute != 15 {
		t.Fatalf("wildcard entry = %+v, %v", e, ok)
	}
	if _, ok := tab.Lookup("sr.ht"); ok {
		t.Fatal("a wildcard must not match its own suffix")
	}
}

func TestLoadFilesEmptyGlobIsFine(t *testing.T) {
	tab, err := LoadFiles([]string{filepath.Join(t.TempDir(), "*.toml")})
	if err != nil || len(tab) != 0 {
		t.Fatalf("got %v, %v", tab, err)
	}
}

func TestLoadFilesDuplicateDomainNamesBothFiles(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "a.toml", "[domains.\"github.com\"]\nconcurrent = 2\n")
	b := writeFile(t, dir, "b.toml", "[domains.\"github.com\"]\nper_minute = 20\n")
	_, err := LoadFiles([]string{filepath.Join(dir, "*.toml")})
	if err == nil {
		t.Fatal("duplicate domain across files was accepted")
	}
	if !strings.Contains(err.Error(), a) || !strings.Contains(err.Error(), b) || !strings.Contains(err.Error(), "github.com") {
		t.Fatalf("error does not name both files and the domain: %v", err)
	}
}

func TestLoadFilesStrictDecoding(t *testing.T) {
	cases := map[string]string{
		"unknown key":      "[domains.\"a.org\"]\nconcurent = 2\n",
		"unknown table":    "[domain.\"a.org\"]\nconcurrent = 2\n",
		"zero concurrent":  "[domains.\"a.org\"]\nconcurrent = 0\n",
		"negative rate":    "[domains.\"a.org\"]\nper_minute = -1\n",
		"bad domain":       "[domains.\"https://a.org/\"]\nper_minute = 1\n",
		"upper-case":       "[domains.\"A.org\"]\nper_minute = 1\n",
		"syntax error":     "[domains.\"a.org\"\nper_minute = 1\n",
		"wrong value type": "[domains.\"a.org\"]\nper_minute = \"fast\"\n",
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), "x.toml", body)
			_, err := LoadFiles([]string{p})
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), p) {
				t.Fatalf("error does not name the file: %v", err)
			}
		})
	}
}

func TestPrecedenceDefaultsPluginsTuningFiles(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "t.toml", "[domains.\"github.com\"]\nper_minute = 20\n")
	tab, err := LoadFiles([]string{filepath.Join(dir, "t.toml")})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	plugin1 := tunerFunc(func(d string, cur Limits) (Limits, error) {
		order = append(order, "p1")
		if cur != (Limits{Concurrency: 3, PerMinute: 10}) {
			t.Errorf("first tuner saw %+v, want the defaults", cur)
		}
		return Limits{Concurrency: 8, PerMinute: 100}, nil
	})
	plugin2 := tunerFunc(func(d string, cur Limits) (Limits, error) {
		order = append(order, "p2")
		if cur.Concurrency != 8 {
			t.Errorf("second tuner saw %+v, want the first tuner's output", cur)
		}
		cur.Concurrency++
		return cur, nil
	})
	opts := Options{
		Defaults: Limits{Concurrency: 3, PerMinute: 10},
		Tuners:   []Tuner{plugin1, plugin2},
		Table:    tab,
	}
	got := Fold(context.Background(), "github.com", opts, nil)
	// Tuning file sets per_minute (beats plugins); concurrency comes from the plugins.
	if want := (Limits{Concurrency: 9, PerMinute: 20}); got != want {
		t.Fatalf("github.com = %+v, want %+v", got, want)
	}
	if strings.Join(order, ",") != "p1,p2" {
		t.Fatalf("tuner order %v", order)
	}
	got = Fold(context.Background(), "example.org", Options{Defaults: opts.Defaults}, nil)
	if got != opts.Defaults {
		t.Fatalf("no tuners: %+v, want defaults", got)
	}
}

func TestFoldFailingTunerKeepsPrevious(t *testing.T) {
	bad := tunerFunc(func(string, Limits) (Limits, error) {
		return Limits{Concurrency: 99, PerMinute: 99}, errors.New("boom")
	})
	got := Fold(context.Background(), "x.org", Options{Tuners: []Tuner{bad}}, nil)
	if got != (Limits{Concurrency: DefaultConcurrent, PerMinute: DefaultPerMinute}) {
		t.Fatalf("got %+v", got)
	}
}

func TestClampToHardCaps(t *testing.T) {
	huge := tunerFunc(func(string, Limits) (Limits, error) {
		return Limits{Concurrency: 1000, PerMinute: -5}, nil
	})
	n := 500
	tab := Table{"big.org": {PerMinute: &n}}
	opts := Options{Max: Limits{Concurrency: 16, PerMinute: 300}, Tuners: []Tuner{huge}, Table: tab}
	if got := Fold(context.Background(), "x.org", opts, nil); got != (Limits{Concurrency: 16, PerMinute: 1}) {
		t.Fatalf("plugin values not clamped: %+v", got)
	}
	if got := Fold(context.Background(), "big.org", opts, nil); got.PerMinute != 300 {
		t.Fatalf("tuning file value not clamped: %+v", got)
	}
}

func TestExactBeatsWildcard(t *testing.T) {
	a, b, c := 1, 2, 3
	tab := Table{"*.example.com": {PerMinute: &a}, "*.git.example.com": {PerMinute: &b}, "x.git.example.com": {PerMinute: &c}}
	for domain, want := range map[string]int{"x.git.example.com": 3, "y.git.example.com": 2, "z.example.com": 1, "X.Git.Example.Com.": 3} {
		e, ok := tab.Lookup(domain)
		if !ok || *e.PerMinute != want {
			t.Errorf("%s: got %v %v, want %d", domain, e.PerMinute, ok, want)
		}
	}
}

// Only a domain a tuning file names itself may label metric series (F14):
// a wildcard matches domains that strangers' clone URLs choose.
func TestF14_NamedOnlyForExactEntries(t *testing.T) {
	a := 1
	r := NewResolver(Options{Table: Table{"*.example.com": {PerMinute: &a}, "forge.example.org": {PerMinute: &a}}}, env.Env{})
	for domain, want := range map[string]bool{"forge.example.org": true, "Forge.Example.Org.": true, "x.example.com": false, "example.com": false, "other.org": false} {
		if got := r.Named(domain); got != want {
			t.Errorf("Named(%q) = %v, want %v", domain, got, want)
		}
	}
	r.Update(Options{})
	if r.Named("forge.example.org") {
		t.Error("a domain stays named after a reload removed its file")
	}
}

func TestResolverMemoisesAndInvalidates(t *testing.T) {
	var calls atomic.Int32
	tuner := tunerFunc(func(_ string, cur Limits) (Limits, error) {
		calls.Add(1)
		return cur, nil
	})
	r := NewResolver(Options{Tuners: []Tuner{tuner}}, env.Env{})
	for i := 0; i < 3; i++ {
		r.Limits(context.Background(), "github.com")
	}
	r.Limits(context.Background(), "GitHub.com")
	if calls.Load() != 1 {
		t.Fatalf("tuner called %d times, want 1 (memoised per domain)", calls.Load())
	}
	r.Invalidate()
	r.Limits(context.Background(), "github.com")
	if calls.Load() != 2 {
		t.Fatalf("tuner called %d times after Invalidate, want 2", calls.Load())
	}
	r.Update(Options{Defaults: Limits{Concurrency: 2, PerMinute: 7}})
	if got := r.Limits(context.Background(), "github.com"); got != (Limits{Concurrency: 2, PerMinute: 7}) {
		t.Fatalf("after Update: %+v", got)
	}
}
