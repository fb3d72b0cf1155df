// Package examples_test checks that the example configurations load: their
// plugin files compile and export what their sections need, their tuning
// files decode, and the policies answer as documented.
package examples_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/throttle"
	"github.com/grasp-dev/grasp/plugins"
)

// The part of the config contract these tests need; core/config owns the
// full, strict schema.
type specTOML struct {
	Name    string         `toml:"name"`
	File    string         `toml:"file"`
	Timeout string         `toml:"timeout"`
	OnError string         `toml:"on_error"`
	Config  map[string]any `toml:"config"`
}

type configTOML struct {
	Plugins struct {
		Dir            string     `toml:"dir"`
		Watch          bool       `toml:"watch"`
		PoolSize       int        `toml:"pool_size"`
		Accept         []specTOML `toml:"accept"`
		RelaySelection []specTOML `toml:"relay_selection"`
		Throttle       []specTOML `toml:"throttle"`
	} `toml:"plugins"`
	Throttle struct {
		Concurrent    int      `toml:"concurrent"`
		PerMinute     int      `toml:"per_minute"`
		MaxConcurrent int      `toml:"max_concurrent"`
		MaxPerMinute  int      `toml:"max_per_minute"`
		Files         []string `toml:"files"`
	} `toml:"throttle"`
}

func load(t *testing.T, path string) (configTOML, plugins.Options) {
	t.Helper()
	var c configTOML
	if _, err := toml.DecodeFile(path, &c); err != nil {
		t.Fatal(err)
	}
	specs := func(in []specTOML) []plugins.Spec {
		out := make([]plugins.Spec, len(in))
		for i, s := range in {
			var d time.Duration
			if s.Timeout != "" {
				var err error
				if d, err = time.ParseDuration(s.Timeout); err != nil {
					t.Fatalf("%s: plugin %s: %v", path, s.Name, err)
				}
			}
			out[i] = plugins.Spec{Name: s.Name, File: s.File, Timeout: d, OnError: s.OnError, Config: s.Config}
		}
		return out
	}
	return c, plugins.Options{
		// Paths in a config file are relative to the file (config.Load).
		Dir: filepath.Join(filepath.Dir(path), c.Plugins.Dir), PoolSize: 1, Domain: "127.0.0.1",
		// A clock that never moves: no wall-clock deadline fires on a loaded machine.
		Clock:  clock.NewFake(time.Unix(1767323045, 0)),
		Accept: specs(c.Plugins.Accept), RelaySelection: specs(c.Plugins.RelaySelection), Throttle: specs(c.Plugins.Throttle),
	}
}

func TestStockExampleLoadsAndFoldsThrottles(t *testing.T) {
	c, opts := load(t, "grasp.toml")
	if err := plugins.Check(opts); err != nil {
		t.Fatal(err)
	}
	if len(opts.Accept) != 4 || len(opts.RelaySelection) != 1 || len(opts.Throttle) != 1 {
		t.Fatalf("unexpected chains: %d/%d/%d", len(opts.Accept), len(opts.RelaySelection), len(opts.Throttle))
	}
	// Relative to examples/grasp.toml, which is the test's directory.
	table, err := throttle.LoadFiles(c.Throttle.Files)
	if err != nil {
		t.Fatal(err)
	}
	h, err := plugins.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	r := throttle.NewResolver(throttle.Options{
		Defaults: throttle.Limits{Concurrency: c.Throttle.Concurrent, PerMinute: c.Throttle.PerMinute},
		Max:      throttle.Limits{Concurrency: c.Throttle.MaxConcurrent, PerMinute: c.Throttle.MaxPerMinute},
		Tuners:   []throttle.Tuner{h},
		Table:    table,
	}, env.Env{})
	// defaults 5/30 < forge plugin (big 8/120, small 2/12) < throttle.d/forges.toml.
	for domain, want := range map[string]throttle.Limits{
		"github.com":   {Concurrency: 4, PerMinute: 60},  // tuning file beats the plugin
		"codeberg.org": {Concurrency: 2, PerMinute: 30},  // tuning file
		"gitlab.com":   {Concurrency: 8, PerMinute: 120}, // plugin only
		"git.sr.ht":    {Concurrency: 8, PerMinute: 20},  // plugin concurrency, wildcard file per_minute
		"git.tiny.org": {Concurrency: 2, PerMinute: 12},  // plugin: small self-hosted
	} {
		if got := r.Limits(context.Background(), domain); got != want {
			t.Errorf("%s: got %+v, want %+v", domain, got, want)
		}
	}
}

func TestCustomPolicyExample(t *testing.T) {
	_, opts := load(t, filepath.Join("custom-policy", "grasp.toml"))
	set, err := plugins.NewSet(opts)
	if err != nil {
		t.Fatal(err)
	}
	events, err := os.ReadFile(filepath.Join("custom-policy", "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	big := `{"id":"06` + strings.Repeat("0", 62) + `","pubkey":"` + strings.Repeat("a", 64) + `","created_at":1767323045,"kind":1617,"tags":[],"content":"` + strings.Repeat("x", 300000) + `","sig":"00"}`
	var out bytes.Buffer
	if _, err := plugins.TestEvents(context.Background(), set, strings.NewReader(string(events)+big+"\n"), &out); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		"01" + strings.Repeat("0", 62) + " accept",
		"02" + strings.Repeat("0", 62) + " reject blocked: this server only stores git collaboration events (NIP-34)",
		"04" + strings.Repeat("0", 62) + " shadowReject",
		"05" + strings.Repeat("0", 62) + " accept",
		"06" + strings.Repeat("0", 62) + " reject invalid: patch too large; push a branch and open a pull request instead",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
