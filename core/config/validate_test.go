package config

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/core/nip34"
)

// nip19Hex/nip19Npub is the npub example of NIP-19.
const (
	nip19Hex  = "7e7e9c42a91bfef19fa929e5fda1b72e0ebc1a4c1141673e2794234d86addf4e"
	nip19Npub = "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg"
)

// TestEveryValidationRule gives each rule a file that breaks only it and
// checks the one problem names the key, its line and the reason.
func TestEveryValidationRule(t *testing.T) {
	cases := []struct {
		name, src, key, msg string
	}{
		{"listen not host:port", "[server]\nlisten = \"7334\"", "server.listen", "want host:port"},
		{"listen bad port", "[server]\nlisten = \"127.0.0.1:http\"", "server.listen", "not a number"},
		{"listen port range", "[server]\nlisten = \"127.0.0.1:70000\"", "server.listen", "not a number"},
		{"public_url scheme", "[server]\npublic_url = \"ftp://x\"", "server.public_url", "scheme must be http or https"},
		{"public_url no host", "[server]\npublic_url = \"https://\"", "server.public_url", "has no host"},
		{"public_url query", "[server]\npublic_url = \"https://x?a=b\"", "server.public_url", "query"},
		{"public_url dot segment", "[server]\npublic_url = \"https://x/git/../y\"", "server.public_url", "segment"},
		{"public_url npub segment", "[server]\npublic_url = \"https://x/npub1abc\"", "server.public_url", "reads as an npub"},
		{"public_url odd path", "[server]\npublic_url = \"https://x/g%20it\"", "server.public_url", "only letters"},
		{"data_dir empty", "[server]\ndata_dir = \"\"", "server.data_dir", "must not be empty"},
		{"pubkey short", "[relay]\npubkey = \"abcd\"", "relay.pubkey", "64 hex"},
		{"pubkey not hex", "[relay]\npubkey = \"" + strings.Repeat("zz", 32) + "\"", "relay.pubkey", "64 hex"},
		{"pubkey bad npub", "[relay]\npubkey = \"" + nip19Npub[:len(nip19Npub)-1] + "q\"", "relay.pubkey", "checksum"},
		{"icon", "[relay]\nicon = \"icon.png\"", "relay.icon", "http(s) URL"},
		{"limit zero", "[relay.limits]\nmax_event_tags = 0", "relay.limits.max_event_tags", "greater than 0"},
		{"limit negative", "[relay.limits]\nmax_subscriptions = -1", "relay.limits.max_subscriptions", "greater than 0"},
		{"created_at zero", "[relay.limits]\ncreated_at_upper_limit = \"0s\"", "relay.limits.created_at_upper_limit", "positive duration"},
		{"event > message", "[relay.limits]\nmax_event_bytes = 3000000", "relay.limits.max_event_bytes", "exceeds max_message_bytes"},
		{"content > event", "[relay.limits]\nmax_content_bytes = 2000000", "relay.limits.max_content_bytes", "exceeds max_event_bytes"},
		{"tag value beyond the store", "[relay.limits]\nmax_tag_value_bytes = 70000", "relay.limits.max_tag_value_bytes", "exceeds 65535"},
		{"negentropy frame", "[relay.limits]\nnegentropy_frame_bytes = 100", "relay.limits.negentropy_frame_bytes", "at least 4096"},
		{"client timeout vs ping", "[relay.limits]\nclient_timeout = \"10s\"", "relay.limits.client_timeout", "must exceed ping_interval"},
		{"default > max limit", "[relay.limits]\ndefault_limit = 501", "relay.limits.default_limit", "exceeds max_limit"},
		{"subid < 64", "[relay.limits]\nmax_subid_length = 10", "relay.limits.max_subid_length", "at least 64"},
		{"negentropy idle", "[relay.limits]\nnegentropy_idle_timeout = \"-1s\"", "relay.limits.negentropy_idle_timeout", "positive duration"},
		{"negentropy open", "[relay.limits]\nnegentropy_open_timeout = \"-1s\"", "relay.limits.negentropy_open_timeout", "positive duration"},
		{"backend", "[store]\nbackend = \"lmdb\"", "store.backend", "not one of badger, postgres"},
		{"postgres needs url", "[store]\nbackend = \"postgres\"", "store.postgres_url", "required"},
		{"postgres url scheme", "[store]\nbackend = \"postgres\"\npostgres_url = \"mysql://u:secret@h/db\"", "store.postgres_url", "postgres://"},
		{"memtable", "[store]\nmemtable_mb = 0", "store.memtable_mb", "greater than 0"},
		{"block cache", "[store]\nblock_cache_mb = -1", "store.block_cache_mb", "must not be negative"},
		{"archive_whitelist bare identifier", "[grasp]\narchive_whitelist = [\"x\"]", "grasp.archive_whitelist[0]", "bare identifier"},
		{"archive_whitelist bad coordinate", "[grasp]\narchive_whitelist = [\"30617:abc:x\"]", "grasp.archive_whitelist[0]", "64 lowercase hex"},
		{"archive_hosts path", "[grasp]\narchive_hosts = [\"https://relay.example/some/path\"]", "grasp.archive_hosts[0]", "not a path"},
		{"archive_hosts junk", "[grasp]\narchive_hosts = [\"a b\"]", "grasp.archive_hosts[0]", "host name"},
		{"archive_all with a list", "[grasp]\narchive_all = true\narchive_hosts = [\"relay.example\"]", "grasp.archive_all", "leave archive_whitelist and archive_hosts empty"},
		{"archive private", "[grasp]\nprivate = true\narchive_whitelist = [\"" + nip19Npub + "\"]", "grasp.archive_whitelist", "private service"},
		{"archive without sync", "[grasp]\narchive_all = true\n[sync]\nenabled = false", "sync.enabled", "needs GRASP-02 sync"},
		{"grasp06 private", "[grasp]\ngrasp06 = true\nprivate = true", "grasp.grasp06", "not offered by a private service"},
		{"whitelist entry", "[grasp]\nrepository_whitelist = [\"" + nip19Hex + "/\"]", "grasp.repository_whitelist[0]", "owner/identifier"},
		{"blacklist entry", "[grasp]\nrepository_blacklist = [\"ok\", \"\"]", "grasp.repository_blacklist[1]", "empty entry"},
		{"event blacklist", "[grasp]\nevent_blacklist = [\"alice\"]", "grasp.event_blacklist[0]", "64 hex"},
		{"max repos", "[grasp]\nmax_repos_per_pubkey = -1", "grasp.max_repos_per_pubkey", "must not be negative"},
		{"purgatory ttl", "[purgatory]\nttl = \"0s\"", "purgatory.ttl", "positive duration"},
		{"hunt delay negative", "[purgatory]\nuser_fetch_delay = \"-1s\"", "purgatory.user_fetch_delay", "must not be negative"},
		{"fetch backoff order", "[purgatory]\nfetch_backoff_base = \"5m\"", "purgatory.fetch_backoff_base", "exceeds fetch_backoff_max"},
		{"sweep", "[purgatory]\nsweep_interval = \"0s\"", "purgatory.sweep_interval", "positive duration"},
		{"health order", "[health]\nbase_backoff = \"2h\"", "health.base_backoff", "exceeds max_backoff"},
		{"dead retry", "[health]\ndead_retry = \"0s\"", "health.dead_retry", "positive duration"},
		{"bootstrap scheme", "[sync]\nbootstrap_relays = [\"https://relay.example\"]", "sync.bootstrap_relays[0]", "ws or wss"},
		{"batch window", "[sync]\nbatch_window = \"0s\"", "sync.batch_window", "positive duration"},
		{"consolidate", "[sync]\nconsolidate_above = 0", "sync.consolidate_above", "greater than 0"},
		{"tags per filter", "[sync]\ntags_per_filter = 0", "sync.tags_per_filter", "greater than 0"},
		{"daily order", "[sync]\ndaily_max = \"1h\"", "sync.daily_min", "exceeds daily_max"},
		{"cooldown", "[sync]\nrate_limit_cooldown = \"0s\"", "sync.rate_limit_cooldown", "positive duration"},
		{"throttle cap", "[throttle]\nconcurrent = 40", "throttle.concurrent", "hard cap"},
		{"throttle rate cap", "[throttle]\nmax_per_minute = 10", "throttle.per_minute", "hard cap"},
		{"throttle zero", "[throttle]\nper_minute = 0", "throttle.per_minute", "greater than 0"},
		{"throttle glob", "[throttle]\nfiles = [\"throttle.d/[.toml\"]", "throttle.files[0]", "not a valid glob"},
		{"pool size", "[plugins]\npool_size = -2", "plugins.pool_size", "must not be negative"},
		{"call stack", "[plugins]\nmax_call_stack = 0", "plugins.max_call_stack", "greater than 0"},
		{"plugin name", "[[plugins.accept]]\nfile = \"a.js\"", "plugins.accept[0].name", "required"},
		{"plugin file", "[[plugins.throttle]]\nname = \"a\"", "plugins.throttle[0].file", "required"},
		{"plugin escapes dir", "[[plugins.accept]]\nname = \"a\"\nfile = \"../etc/a.js\"", "plugins.accept[0].file", "inside plugins.dir"},
		{"plugin absolute", "[[plugins.accept]]\nname = \"a\"\nfile = \"/etc/a.js\"", "plugins.accept[0].file", "inside plugins.dir"},
		{"plugin duplicate", "[[plugins.relay_selection]]\nname = \"a\"\nfile = \"a.js\"\n[[plugins.relay_selection]]\nname = \"a\"\nfile = \"b.js\"", "plugins.relay_selection[1].name", "used twice"},
		{"plugin on_error", "[[plugins.accept]]\nname = \"a\"\nfile = \"a.js\"\non_error = \"ignore\"", "plugins.accept[0].on_error", "not one of reject, skip"},
		{"plugin timeout", "[[plugins.accept]]\nname = \"a\"\nfile = \"a.js\"\ntimeout = \"-1ms\"", "plugins.accept[0].timeout", "positive duration"},
		{"plugins dir", "[plugins]\ndir = \"\"\n[[plugins.accept]]\nname = \"a\"\nfile = \"a.js\"", "plugins.dir", "must not be empty"},
		{"log format", "[log]\nformat = \"xml\"", "log.format", "not one of text, json"},
		{"metrics listen", "[metrics]\nlisten = \"nope\"", "metrics.listen", "want host:port"},
		{"metrics on public port", "[server]\nlisten = \"0.0.0.0:8080\"\n[metrics]\nlisten = \"127.0.0.1:8080\"", "metrics.listen", "own listener"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := parseErr(t, tc.src)
			if len(e.Problems) != 1 {
				t.Fatalf("want exactly one problem, got:\n%v", e)
			}
			p := e.Problems[0]
			if p.Key != tc.key || !strings.Contains(p.Msg, tc.msg) {
				t.Fatalf("got %q, want key %s and message containing %q", p.String(), tc.key, tc.msg)
			}
			if p.Line == 0 {
				t.Fatalf("no line for %q", p.String())
			}
		})
	}
}

func TestPostgresPasswordNotEchoed(t *testing.T) {
	e := parseErr(t, "[store]\nbackend = \"postgres\"\npostgres_url = \"mysql://u:hunter2@h/db\"")
	if strings.Contains(e.Error(), "hunter2") {
		t.Fatalf("password in error: %v", e)
	}
}

func TestMetricsDisabledMayShareNothing(t *testing.T) {
	mustParse(t, "[server]\nlisten = \"0.0.0.0:8080\"\n[metrics]\nenabled = false\nlisten = \"127.0.0.1:8080\"")
}

func TestPubkeysNormalisedToHex(t *testing.T) {
	src := "[relay]\npubkey = \"" + nip19Npub + "\"\n[grasp]\nevent_blacklist = [\"" + nip19Npub + "\", \"" + strings.ToUpper(nip19Hex) + "\"]\n"
	c := mustParse(t, src)
	if c.Relay.Pubkey != nip19Hex {
		t.Errorf("relay.pubkey = %q", c.Relay.Pubkey)
	}
	if len(c.Grasp.EventBlacklist) != 2 || c.Grasp.EventBlacklist[0] != nip19Hex || c.Grasp.EventBlacklist[1] != nip19Hex {
		t.Errorf("event_blacklist = %q", c.Grasp.EventBlacklist)
	}
}

func TestBech32RoundTrip(t *testing.T) {
	for i := 0; i < 64; i++ {
		b := make([]byte, 32)
		for j := range b {
			b[j] = byte(i*31 + j*7)
		}
		npub := nip34.Npub(hex.EncodeToString(b))
		got, err := NormalizePubkey(npub)
		if err != nil || got != hex.EncodeToString(b) {
			t.Fatalf("round trip of %x via %s: %s, %v", b, npub, got, err)
		}
	}
	if got := nip34.Npub(nip19Hex); got != nip19Npub {
		t.Fatalf("encode NIP-19 vector: %s", got)
	}
	if _, err := NormalizePubkey(strings.Replace(nip19Npub, "npub", "nsec", 1)); err == nil {
		t.Fatal("nsec accepted as a pubkey")
	}
	if _, err := NormalizePubkey("npub1" + strings.ToUpper(nip19Npub[5:])); err == nil {
		t.Fatal("mixed-case npub accepted")
	}
}

func TestParseRepoPattern(t *testing.T) {
	cases := []struct {
		in   string
		want RepoPattern
	}{
		{nip19Npub, RepoPattern{Pubkey: nip19Hex}},
		{nip19Hex, RepoPattern{Pubkey: nip19Hex}},
		{nip19Npub + "/ngit", RepoPattern{Pubkey: nip19Hex, Identifier: "ngit"}},
		{"ngit", RepoPattern{Identifier: "ngit"}},
	}
	for _, tc := range cases {
		got, err := ParseRepoPattern(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseRepoPattern(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "npub1abc", "x/y", nip19Npub + "/a/b"} {
		if got, err := ParseRepoPattern(bad); err == nil {
			t.Errorf("ParseRepoPattern(%q) = %+v, want an error", bad, got)
		}
	}
}

func TestNormalizeRelayURL(t *testing.T) {
	cases := map[string]string{
		"relay.example.com":             "wss://relay.example.com",
		"WSS://Relay.Example.com:443/":  "wss://relay.example.com",
		"ws://127.0.0.1:7334":           "ws://127.0.0.1:7334",
		"ws://h:80/sub":                 "ws://h/sub",
		"wss://relay.example.com/nostr": "wss://relay.example.com/nostr",
	}
	for in, want := range cases {
		got, err := nip34.NormalizeRelayURL(in)
		if err != nil || got != want {
			t.Errorf("NormalizeRelayURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	c := mustParse(t, "[sync]\nbootstrap_relays = [\"relay.example.com\"]")
	if c.Sync.BootstrapRelays[0] != "wss://relay.example.com" {
		t.Errorf("bootstrap relay not normalised: %q", c.Sync.BootstrapRelays)
	}
}

// TestArchiveModesAreValid: the three GRASP-05 modes and read-write
// archiving load as written (they were reserved and refused before).
func TestArchiveModesAreValid(t *testing.T) {
	for _, src := range []string{
		"[grasp]\narchive_all = true",
		"[grasp]\narchive_all = true\narchive_read_only = false",
		"[grasp]\narchive_whitelist = [\"" + nip19Npub + "\", \"" + nip19Hex + "\", \"" + nip19Npub + "/repo\", \"30617:" + nip19Hex + ":repo\"]",
		"[grasp]\narchive_hosts = [\"relay.ngit.dev\", \"git.example.com:8443\", \"https://gitnostr.com\"]",
	} {
		c := mustParse(t, src)
		if !c.Grasp.ArchiveReadOnly && !strings.Contains(src, "read_only") {
			t.Fatalf("archive_read_only should default to true:\n%s", src)
		}
	}
}
