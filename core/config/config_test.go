package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func mustParse(t *testing.T, src string) Config {
	t.Helper()
	c, err := Parse([]byte(src), "grasp.toml")
	if err != nil {
		t.Fatalf("parse:\n%s\nerror:\n%v", src, err)
	}
	return c
}

func parseErr(t *testing.T, src string) *Error {
	t.Helper()
	_, err := Parse([]byte(src), "grasp.toml")
	if err == nil {
		t.Fatalf("parse of\n%s\nsucceeded, want an error", src)
	}
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %T is not *config.Error: %v", err, err)
	}
	return ce
}

// TestDefaultsAreTheSeedValues pins every timer the seed designs and
// grasp.md §4.3 state, so a changed default is a deliberate act.
func TestDefaultsAreTheSeedValues(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatalf("Default() does not validate: %v", err)
	}
	flat := flatten(c)
	want := map[string]any{
		"server.listen":     "127.0.0.1:7334",
		"server.public_url": "http://127.0.0.1:7334",
		"server.data_dir":   "./data",
		// Audit F16: a soft limit by default (issue 11 part 6).
		"server.memory_limit_mb": 768,
		"relay.name":             "127.0.0.1:7334 grasp relay",
		// Sized for NIP-34 patches, not strfry's social-note values (issue 9
		// part 5): a 1 MiB diff and an 8 KiB commit-pgp-sig must fit.
		"relay.limits.max_message_bytes":          2 << 20,
		"relay.limits.max_event_bytes":            1536 << 10,
		"relay.limits.max_content_bytes":          1 << 20,
		"relay.limits.max_event_tags":             2000,
		"relay.limits.max_tag_value_bytes":        8 << 10,
		"relay.limits.created_at_lower_limit":     Duration(0),
		"relay.limits.created_at_upper_limit":     Duration(900 * time.Second),
		"relay.limits.max_filters_per_req":        200,
		"relay.limits.max_subscriptions":          200,
		"relay.limits.max_subid_length":           64,
		"relay.limits.max_limit":                  500,
		"relay.limits.negentropy_max_events":      1000000,
		"relay.limits.negentropy_max_sessions":    64,
		"relay.limits.max_pending_outbound_bytes": 32 << 20,
		"store.backend":                           "badger",
		"grasp.max_repos_per_pubkey":              0,
		"grasp.grasp06":                           false,
		"purgatory.ttl":                           Duration(30 * time.Minute),
		"purgatory.user_fetch_delay":              Duration(3 * time.Minute),
		"purgatory.sync_fetch_delay":              Duration(500 * time.Millisecond),
		"purgatory.fetch_backoff_base":            Duration(20 * time.Second),
		"purgatory.fetch_backoff_max":             Duration(2 * time.Minute),
		"purgatory.nostr_ref_ttl":                 Duration(20 * time.Minute),
		"purgatory.sweep_interval":                Duration(time.Minute),
		"purgatory.hunt_interval":                 Duration(time.Second),
		"purgatory.recheck_interval":              Duration(time.Hour),
		"purgatory.naughty_ttl":                   Duration(12 * time.Hour),
		"purgatory.expired_memory":                Duration(7 * 24 * time.Hour),
		"sync.enabled":                            true,
		"sync.batch_window":                       Duration(5 * time.Second),
		"sync.consolidate_above":                  70,
		"sync.tags_per_filter":                    100,
		"sync.quick_reconnect_window":             Duration(15 * time.Minute),
		"sync.daily_min":                          Duration(23 * time.Hour),
		"sync.daily_max":                          Duration(25 * time.Hour),
		"sync.negentropy":                         true,
		"sync.disconnect_check_interval":          Duration(60 * time.Second),
		"sync.rate_limit_cooldown":                Duration(65 * time.Second),
		"health.base_backoff":                     Duration(5 * time.Second),
		"health.max_backoff":                      Duration(3600 * time.Second),
		"health.dead_after":                       Duration(24 * time.Hour),
		"health.dead_retry":                       Duration(24 * time.Hour),
		"throttle.concurrent":                     5,
		"throttle.per_minute":                     30,
		"plugins.pool_size":                       0,
		"log.level":                               "info",
		"log.format":                              "text",
		"metrics.enabled":                         true,
		"metrics.listen":                          "127.0.0.1:7335",
	}
	for k, v := range want {
		got, ok := flat[k]
		if !ok {
			t.Errorf("%s: no such key", k)
			continue
		}
		if !reflect.DeepEqual(got, v) {
			t.Errorf("%s = %#v, want %#v", k, got, v)
		}
	}
}

func TestEmptyFileIsDefault(t *testing.T) {
	if got := mustParse(t, ""); !reflect.DeepEqual(got, Default()) {
		t.Fatalf("empty file:\n%#v\nwant Default():\n%#v", got, Default())
	}
}

func TestPublicURLDerivedFromListen(t *testing.T) {
	cases := []struct{ listen, want string }{
		{"127.0.0.1:7334", "http://127.0.0.1:7334"},
		{"0.0.0.0:8080", "http://127.0.0.1:8080"},
		{":9000", "http://127.0.0.1:9000"},
		{"[::1]:7334", "http://[::1]:7334"},
		{"git.local:80", "http://git.local"},
	}
	for _, tc := range cases {
		c := mustParse(t, "[server]\nlisten = \""+tc.listen+"\"\n[metrics]\nenabled = false\n")
		if c.Server.PublicURL != tc.want {
			t.Errorf("listen %q: public_url %q, want %q", tc.listen, c.Server.PublicURL, tc.want)
		}
	}
}

func TestPublicURLHelpers(t *testing.T) {
	c := mustParse(t, "[server]\npublic_url = \"HTTPS://Git.Example.com:443/\"\n")
	if c.Server.PublicURL != "https://git.example.com" {
		t.Fatalf("public_url not canonical: %q", c.Server.PublicURL)
	}
	if got := c.RelayURL(); got != "wss://git.example.com" {
		t.Errorf("RelayURL() = %q", got)
	}
	if got := c.Host(); got != "git.example.com" {
		t.Errorf("Host() = %q", got)
	}
	if got := c.Relay.Name; got != "git.example.com grasp relay" {
		t.Errorf("derived relay name %q", got)
	}
	if got := c.CloneURL("npub1xyz", "my repo"); got != "https://git.example.com/npub1xyz/my%20repo.git" {
		t.Errorf("CloneURL() = %q", got)
	}
	d := Default()
	if d.RelayURL() != "ws://127.0.0.1:7334" || d.Host() != "127.0.0.1:7334" {
		t.Errorf("default RelayURL %q Host %q", d.RelayURL(), d.Host())
	}
}

// TestBasePath_PublicURLKeepsItsPath: a public URL with a base path is
// accepted, canonicalised without its trailing slash, and every derived URL
// lives under the path (issue 10 part 5).
func TestBasePath_PublicURLKeepsItsPath(t *testing.T) {
	c := mustParse(t, "[server]\npublic_url = \"HTTPS://Example.ORG/git/\"\n")
	if c.Server.PublicURL != "https://example.org/git" {
		t.Fatalf("public_url = %q, want https://example.org/git", c.Server.PublicURL)
	}
	if got := c.RelayURL(); got != "wss://example.org/git" {
		t.Errorf("RelayURL() = %q", got)
	}
	if got := c.CloneURL("npub1xyz", "r"); got != "https://example.org/git/npub1xyz/r.git" {
		t.Errorf("CloneURL() = %q", got)
	}
	if got := c.Host(); got != "example.org" {
		t.Errorf("Host() = %q", got)
	}
}

func TestUnknownKeyReportedWithLineAndColumn(t *testing.T) {
	src := "# comment\n[server]\nlisten = \"127.0.0.1:7334\"\n\n[sync]\nenabled = true\n  batch_windw = \"5s\"\n"
	e := parseErr(t, src)
	if got, want := e.Error(), "grasp.toml:7:3: sync.batch_windw: unknown key"; got != want {
		t.Fatalf("error %q, want %q", got, want)
	}
	p := e.Problems[0]
	if p.Key != "sync.batch_windw" || p.Line != 7 || p.Col != 3 || p.File != "grasp.toml" {
		t.Fatalf("problem %+v", p)
	}
}

func TestUnknownSectionAndNestedUnknownKeys(t *testing.T) {
	src := "[scheduler]\nsync_interval = \"5m\"\n[relay.limits]\nmax_events = 3\n"
	e := parseErr(t, src)
	var got []string
	for _, p := range e.Problems {
		got = append(got, p.String())
	}
	want := []string{
		"grasp.toml:1:1: scheduler: unknown key",
		"grasp.toml:4:1: relay.limits.max_events: unknown key",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("problems\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestEveryProblemIsListedInFileOrder(t *testing.T) {
	src := `[server]
listen = 7334
[sync]
batch_window = 5
consolidate_above = "70"
bogus = 1
daily_min = "30h"
[log]
level = "loud"
`
	e := parseErr(t, src)
	want := []string{
		"grasp.toml:2:1: server.listen: want a string, got an integer",
		"grasp.toml:4:1: sync.batch_window: want a duration string like \"15m\", \"500ms\" or \"7d\", got an integer",
		"grasp.toml:5:1: sync.consolidate_above: want an integer, got a string",
		"grasp.toml:6:1: sync.bogus: unknown key",
		"grasp.toml:7:1: sync.daily_min: 1d6h exceeds daily_max 1d1h",
		"grasp.toml:9:1: log.level: \"loud\" is not one of trace, debug, info, warn, error",
	}
	var got []string
	for _, p := range e.Problems {
		got = append(got, p.String())
	}
	if !slices.Equal(got, want) {
		t.Fatalf("problems\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestBadTypes(t *testing.T) {
	cases := []struct{ src, key, msg string }{
		{"[sync]\nenabled = \"yes\"", "sync.enabled", "want true or false, got a string"},
		{"[sync]\nbootstrap_relays = \"wss://a\"", "sync.bootstrap_relays", "want an array, got a string"},
		{"[sync]\nbootstrap_relays = [\"wss://a\", 3]", "sync.bootstrap_relays[1]", "want a string, got an integer"},
		{"sync = 3", "sync", "want a table, got an integer"},
		{"[relay.limits]\nmax_limit = 1.5", "relay.limits.max_limit", "want an integer, got a float"},
		{"[relay]\nname = 1979-05-27", "relay.name", "want a string, got a datetime"},
		{"[purgatory]\nttl = \"thirty minutes\"", "purgatory.ttl", "invalid duration"},
		{"[[plugins.accept]]\nname = \"a\"\nfile = \"a.js\"\ntimeout = 50", "plugins.accept[0].timeout", "want a duration string"},
		{"[[plugins.accept]]\nname = \"a\"\nfile = \"a.js\"\nconfig = 3", "plugins.accept[0].config", "want a table, got an integer"},
		{"[plugins]\naccept = 3", "plugins.accept", "want an array, got an integer"},
	}
	for _, tc := range cases {
		e := parseErr(t, tc.src)
		if len(e.Problems) != 1 || e.Problems[0].Key != tc.key || !strings.Contains(e.Problems[0].Msg, tc.msg) {
			t.Errorf("%q: got %v, want one problem at %s containing %q", tc.src, e, tc.key, tc.msg)
		}
		if e.Problems[0].Line == 0 {
			t.Errorf("%q: problem has no line: %v", tc.src, e)
		}
	}
}

func TestSyntaxErrorHasPosition(t *testing.T) {
	e := parseErr(t, "[server]\nlisten = \"127.0.0.1:7334\n")
	p := e.Problems[0]
	if len(e.Problems) != 1 || p.Line != 2 || p.Col == 0 || !strings.HasPrefix(e.Error(), "grasp.toml:2:") {
		t.Fatalf("syntax error %q (%+v)", e.Error(), p)
	}
}

func TestPluginConfigIsFreeForm(t *testing.T) {
	src := `
[[plugins.accept]]
name = "spam-words"
file = "spam_words.js"
  [plugins.accept.config]
  words = ["casino", "airdrop"]
  anything_at_all = 3
  [plugins.accept.config.nested]
  deep = { x = 1 }

[[plugins.accept]]
name = "second"
file = "sub/second.js"
on_error = "skip"
timeout = "10ms"

[[plugins.relay_selection]]
name = "prefer-healthy"
file = "prefer.js"

[[plugins.throttle]]
name = "forge"
file = "forge.js"
config = { github = 2 }
`
	c := mustParse(t, src)
	acc := c.Plugins.Accept
	if len(acc) != 2 {
		t.Fatalf("%d accept plugins", len(acc))
	}
	if acc[0].Timeout.D() != 50*time.Millisecond || acc[0].OnError != OnErrorReject {
		t.Errorf("accept defaults: %+v", acc[0])
	}
	if acc[1].Timeout.D() != 10*time.Millisecond || acc[1].OnError != OnErrorSkip || acc[1].Config != nil {
		t.Errorf("explicit values lost: %+v", acc[1])
	}
	words, _ := acc[0].Config["words"].([]any)
	nested, _ := acc[0].Config["nested"].(map[string]any)
	if len(words) != 2 || acc[0].Config["anything_at_all"] != int64(3) || nested["deep"] == nil {
		t.Errorf("config table not passed through: %#v", acc[0].Config)
	}
	rs := c.Plugins.RelaySelection[0]
	if rs.Timeout.D() != 500*time.Millisecond || rs.OnError != OnErrorSkip {
		t.Errorf("relay_selection defaults: %+v", rs)
	}
	th := c.Plugins.Throttle[0]
	if th.Timeout.D() != 200*time.Millisecond || th.OnError != OnErrorSkip || th.Config["github"] != int64(2) {
		t.Errorf("throttle defaults or inline config: %+v", th)
	}
}

func TestPluginEntryOutsideConfigIsStrict(t *testing.T) {
	src := "[[plugins.accept]]\nname = \"a\"\nfile = \"a.js\"\n\n[[plugins.accept]]\nname = \"b\"\nfile = \"b.js\"\ntimout = \"1s\"\n"
	e := parseErr(t, src)
	if e.Error() != "grasp.toml:8:1: plugins.accept[1].timout: unknown key" {
		t.Fatalf("got %q", e.Error())
	}
}

func TestLoadReadsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "grasp.toml")
	if err := os.WriteFile(path, []byte("[sync]\nbatch_window = \"200ms\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Sync.BatchWindow.D() != 200*time.Millisecond {
		t.Fatalf("batch_window %v", c.Sync.BatchWindow)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.toml")); err == nil || !strings.Contains(err.Error(), "read config") {
		t.Fatalf("missing file: %v", err)
	}
	if err := os.WriteFile(path, []byte("[sync]\nbatch_windw = \"1s\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.HasPrefix(err.Error(), path+":2:1: ") {
		t.Fatalf("problem not labelled with the path: %v", err)
	}
}

// TestRestartNeeded: a reload applies only the plugin set, so every other
// changed key is named (it keeps its startup value until a restart).
func TestRestartNeeded(t *testing.T) {
	a := Default()
	b := Default()
	b.Server.Listen = "127.0.0.1:9999"
	b.Store.BlockCacheMB = 1
	b.Sync.BatchWindow = Duration(time.Second)
	b.Plugins.PoolSize = 4
	b.Plugins.Watch = true
	b.Log.Level = "debug"
	// applied by a reload: not named
	b.Plugins.Dir = "elsewhere"
	b.Plugins.MaxCallStack = 50
	b.Plugins.Accept = []Plugin{{Name: "x", File: "x.js"}}
	b.Plugins.Throttle = []Plugin{{Name: "y", File: "y.js"}}
	got := RestartNeeded(a, b)
	want := []string{"server.listen", "store.block_cache_mb", "sync.batch_window", "plugins.watch", "plugins.pool_size", "log.level"}
	if !slices.Equal(got, want) {
		t.Fatalf("RestartNeeded = %v, want %v", got, want)
	}
	if got := RestartNeeded(a, Default()); len(got) != 0 {
		t.Fatalf("identical configs: %v", got)
	}
}

func TestValidateProgrammaticConfig(t *testing.T) {
	c := Default()
	c.Server.PublicURL = ""
	c.Server.Listen = "127.0.0.1:0"
	c.Metrics.Listen = "127.0.0.1:0"
	if err := c.Validate(); err != nil {
		t.Fatalf("port-0 test config: %v", err)
	}
	if c.Server.PublicURL != "http://127.0.0.1:0" {
		t.Fatalf("derived %q", c.Server.PublicURL)
	}
	c.Throttle.Concurrent = 0
	err := c.Validate()
	if err == nil || err.Error() != "config: throttle.concurrent: must be greater than 0, got 0" {
		t.Fatalf("got %v", err)
	}
}

// A part built without a config file gets the production limits: a zero
// Limits becomes DefaultLimits, and fields a test sets are kept.
func TestLimitsWithDefaults(t *testing.T) {
	if got := (Limits{}).WithDefaults(); !reflect.DeepEqual(got, Default().Relay.Limits) {
		t.Fatalf("zero Limits with defaults = %+v, want the config defaults %+v", got, Default().Relay.Limits)
	}
	got := Limits{MaxSubscriptions: 3, PingInterval: Duration(time.Second)}.WithDefaults()
	if got.MaxSubscriptions != 3 || got.PingInterval.D() != time.Second {
		t.Fatalf("set fields lost: %+v", got)
	}
	if got.MaxContentBytes != DefaultLimits().MaxContentBytes || got.CreatedAtLowerLimit != 0 {
		t.Fatalf("unset fields not defaulted: %+v", got)
	}
}
