// Package config owns grasp.toml: the schema, every default, strict decoding
// (an unknown key is an error, except inside a plugin's free-form `config`
// table) and validation that names the offending key with its line and column.
//
// Every timer of the seed designs is a key here with the seed's value as its
// default, so integration tests can shrink them to milliseconds. This package
// only describes configuration; it never opens files other than the config
// itself, starts listeners or creates directories.
package config

import "path/filepath"

// Config is the whole of grasp.toml. The zero value is not useful: start from
// Default() or use Load/Parse, which fill defaults and derived values.
type Config struct {
	Server    Server    `toml:"server"`
	Relay     Relay     `toml:"relay"`
	Store     Store     `toml:"store"`
	Grasp     Grasp     `toml:"grasp"`
	Purgatory Purgatory `toml:"purgatory"`
	Git       Git       `toml:"git"`
	Sync      Sync      `toml:"sync"`
	Health    Health    `toml:"health"`
	Throttle  Throttle  `toml:"throttle"`
	Plugins   Plugins   `toml:"plugins"`
	Log       Log       `toml:"log"`
	Metrics   Metrics   `toml:"metrics"`
}

// Server is the public HTTP origin: relay websocket, git smart HTTP and pages.
type Server struct {
	Listen string `toml:"listen"`
	// PublicURL is how clients reach this server (http:// or https://, no
	// path). Clone URLs and the relay URL derive from it, and announcements
	// must list exactly this host:port. Empty means derived from Listen.
	// In the file it may also be an array of URLs (issue 25 part 5: a
	// clearnet name, a .onion in the http:// form ngit writes, a base-path
	// alias): the first is PublicURL, the canonical one, the others
	// PublicURLAliases; an announcement listing any of them lists this
	// service.
	PublicURL string `toml:"public_url" more:"PublicURLAliases"`
	// PublicURLAliases are public_url's further entries; it has no key of
	// its own.
	PublicURLAliases []string
	DataDir          string `toml:"data_dir"`
	// GitDir is where the bare repositories live; empty means
	// <data_dir>/git. Several instances on one postgres store share one
	// (a network file system), with per-repository locks that hold across
	// them.
	GitDir string `toml:"git_dir"`
	// MemoryLimitMB is a soft limit for the Go runtime (debug.SetMemoryLimit):
	// badger's table builders and compactions, not its caches, set the RSS
	// peak, and only a soft limit bounds them (measured: 457 MiB -> 152 MiB
	// on a 120k-event ingest). Default 768 (defaults.go says why); 0 means
	// no limit.
	MemoryLimitMB int `toml:"memory_limit_mb"`
	// MinFreeMB is the free space the data directory keeps: below it git
	// pushes, held events and event writes are refused with a readable
	// error instead of filling the disk (audit 2026-11, F12). 0 disables
	// the check.
	MinFreeMB int `toml:"min_free_mb"`
	// TrustedProxies lists the reverse proxies (IPs or CIDR prefixes) whose
	// X-Forwarded-For names the client; per-IP limits then count the client
	// behind them, not the proxy (audit 2026-11, F18b). Empty: every client
	// is its socket's peer and X-Forwarded-For is ignored. core/clientip
	// reads it.
	TrustedProxies []string `toml:"trusted_proxies"`
	// ClientPrefixV4 and ClientPrefixV6 are the networks one client owns:
	// every per-IP cap counts a client's whole /ClientPrefixV6, since an
	// IPv6 client picks any address of its /64 (audit 2026-11b, F23).
	// core/clientip cuts addresses to them.
	ClientPrefixV4 int `toml:"client_prefix_v4"`
	ClientPrefixV6 int `toml:"client_prefix_v6"`
}

// Relay is the NIP-11 identity and the NIP-01 limits.
type Relay struct {
	// Name empty means "<host> grasp relay".
	Name        string `toml:"name"`
	Description string `toml:"description"`
	// Pubkey is the operator's key as 64 lowercase hex; an npub in the file is
	// converted on load.
	Pubkey string `toml:"pubkey"`
	// AdminPubkeys (npub or hex; stored as hex) may administer the running
	// relay over NIP-86 besides Pubkey (core/nip86): ban and allow keys and
	// events, kinds, blocked addresses, GRASP-08 members, invite claims,
	// the NIP-11 name, description and icon.
	AdminPubkeys []string `toml:"admin_pubkeys"`
	Contact      string   `toml:"contact"`
	Icon         string   `toml:"icon"`
	Limits       Limits   `toml:"limits"`
}

// Limits bound what one client or peer may send and what one connection may
// cost, before any policy runs; NIP-11 `limitation` advertises them. This is
// the one Limits type of grasp: the websocket gate, the relay, the event
// store and the sync connections all take it, and none has defaults of its
// own. Each default and the reason for it is in defaults.go; a part built
// without a config file (a test) gets them through WithDefaults.
type Limits struct {
	MaxMessageBytes  int `toml:"max_message_bytes"`
	MaxEventBytes    int `toml:"max_event_bytes"`
	MaxContentBytes  int `toml:"max_content_bytes"`
	MaxEventTags     int `toml:"max_event_tags"`
	MaxTagValueBytes int `toml:"max_tag_value_bytes"`
	// CreatedAtLowerLimit: events older than now minus this are rejected;
	// 0 (the default) means no lower bound, because a GRASP server syncs
	// repository history that is as old as the repository.
	CreatedAtLowerLimit Duration `toml:"created_at_lower_limit"`
	// CreatedAtUpperLimit: events newer than now plus this are rejected.
	CreatedAtUpperLimit Duration `toml:"created_at_upper_limit"`
	MaxFiltersPerReq    int      `toml:"max_filters_per_req"`
	MaxTagsPerFilter    int      `toml:"max_tags_per_filter"`
	// MaxFilterItems bounds the ids, authors, kinds, or values of one tag,
	// that one filter may list.
	MaxFilterItems          int `toml:"max_filter_items"`
	MaxSubscriptions        int `toml:"max_subscriptions"`
	MaxSubIDLength          int `toml:"max_subid_length"`
	MaxLimit                int `toml:"max_limit"`
	DefaultLimit            int `toml:"default_limit"`
	MaxPendingOutboundBytes int `toml:"max_pending_outbound_bytes"`
	// PingInterval is how often a client is pinged; ClientTimeout drops a
	// client from which nothing, not even a pong, arrived for that long.
	PingInterval  Duration `toml:"ping_interval"`
	ClientTimeout Duration `toml:"client_timeout"`
	// MaxPeerMessageBytes bounds one frame read from a sync peer.
	MaxPeerMessageBytes int `toml:"max_peer_message_bytes"`
	NegentropyMaxEvents int `toml:"negentropy_max_events"`
	// NegentropyMaxSessions is relay-wide; NegentropySessionsPerConn is per
	// connection.
	NegentropyMaxSessions     int      `toml:"negentropy_max_sessions"`
	NegentropySessionsPerConn int      `toml:"negentropy_sessions_per_conn"`
	NegentropyFrameBytes      int      `toml:"negentropy_frame_bytes"`
	NegentropyIdleTimeout     Duration `toml:"negentropy_idle_timeout"`
	// NegentropyOpenTimeout bounds the work of one NEG-OPEN: building the
	// set it reconciles. Past it the client gets NEG-ERR, never a silent
	// drop (issue 27).
	NegentropyOpenTimeout Duration `toml:"negentropy_open_timeout"`
	// NegentropySessionsPerIP bounds one client address's sessions across
	// its connections, so one client cannot hold the relay-wide slots
	// (audit F07).
	NegentropySessionsPerIP int `toml:"negentropy_sessions_per_ip"`
	// MaxConnections and MaxConnectionsPerIP bound websocket connections
	// relay-wide and per client address (audit F17); beyond them the
	// upgrade is answered 429.
	MaxConnections      int `toml:"max_connections"`
	MaxConnectionsPerIP int `toml:"max_connections_per_ip"`
	// MaxUnanswered bounds the EVENTs, REQ queries and COUNTs one
	// connection has in flight: beyond it the gate stops reading that
	// socket until one is answered (audit F05).
	MaxUnanswered int `toml:"max_unanswered"`
	// MaxInflightEventBytes bounds the bytes of EVENT frames being handled
	// across every connection; above it readers wait before taking more
	// (audit F05).
	MaxInflightEventBytes int `toml:"max_inflight_event_bytes"`
	// MaxTotalOutboundBytes bounds the bytes queued to every client
	// together, beside max_pending_outbound_bytes per connection (audit
	// F06): above it stored results wait and live events to a connection
	// holding more than 1 MiB drop it as a slow reader.
	MaxTotalOutboundBytes int `toml:"max_total_outbound_bytes"`
}

// Store selects the event store. Every key here is startup-only.
type Store struct {
	Backend     string `toml:"backend"` // "badger" | "postgres"
	PostgresURL string `toml:"postgres_url"`
	// Badger's own defaults (64 MiB memtables x5, 256 MiB block cache) cost
	// ~600 MiB RSS on a 20k-event corpus; these budget it instead.
	MemtableMB   int `toml:"memtable_mb"`
	BlockCacheMB int `toml:"block_cache_mb"`
	// ResidentFileMB bounds the file-backed resident memory of the
	// process: badger reads and writes its files through mmap, and every
	// page touched stays resident (1.4 GiB at a million events); above
	// this the pages of its tables and sealed value-log files are dropped
	// from the process's mappings (the page cache keeps them). 0: never.
	ResidentFileMB int `toml:"resident_file_mb"`
	// ParallelLogSync syncs badger's value log and write-ahead logs at the
	// same time after a group commit instead of one after the other: about
	// one device flush per commit instead of two, for a relay whose
	// commits are small (issue 27 part 4); off keeps the value log durable
	// before the log entries that point into it.
	ParallelLogSync bool `toml:"parallel_log_sync"`
	// LeaderLease is how long, with backend postgres, the instance running
	// the singletons (GRASP-02 sync, the hunter, the sweeps) keeps its
	// lease without renewing it; a follower takes over within it after the
	// leader dies.
	LeaderLease Duration `toml:"leader_lease"`
	// PostgresPool is how many PostgreSQL connections one instance opens
	// at most, everything included (audit 2026-11b, F25); 0 derives it
	// from the connections the server allows and PostgresInstances. The
	// sum rule: instances x pool stays below max_connections.
	PostgresPool int `toml:"postgres_pool"`
	// PostgresInstances is how many grasp instances share the database:
	// the derived pool is what PostgreSQL allows divided by it.
	PostgresInstances int `toml:"postgres_instances"`
	// PostgresQueriesPerIP bounds the stored queries (REQ, COUNT,
	// NEG-OPEN) one client address runs on PostgreSQL at once; the rest
	// wait their turn (F25).
	PostgresQueriesPerIP int `toml:"postgres_queries_per_ip"`
}

// GitRoot is the directory of the bare repositories: server.git_dir, or
// <data_dir>/git when unset.
func (c Config) GitRoot() string {
	if c.Server.GitDir != "" {
		return c.Server.GitDir
	}
	return filepath.Join(c.Server.DataDir, "git")
}

// Grasp holds the GRASP acceptance rules (GRASP-01, -05 archive, -06 /prs/).
type Grasp struct {
	// ArchiveAll archives every announcement seen, listing this server or
	// not (GRASP-05; core/archive owns the scope).
	ArchiveAll bool `toml:"archive_all"`
	// ArchiveWhitelist entries are "npub" or hex (repositories that key owns
	// or is a confirmed maintainer of), "npub/identifier", "hex/identifier"
	// or "30617:<hex>:<identifier>".
	ArchiveWhitelist []string `toml:"archive_whitelist"`
	// ArchiveHosts are GRASP server host names (or host:port): repositories
	// announced with a clone or relays URL on one of them are archived.
	ArchiveHosts []string `toml:"archive_hosts"`
	// ArchiveReadOnly refuses pushes to archived repositories and
	// announcements outside the archive scope (G05-2).
	ArchiveReadOnly bool `toml:"archive_read_only"`
	Grasp06         bool `toml:"grasp06"`
	// What GRASP-06 /prs/ repositories may hold (audit 2026-11b, F20):
	// MiB pushed into them and their number, in total, per client IP (what
	// it pushed, the repositories it created) and per npub of the path,
	// whether or not the PR event is known, counted until the repository
	// is removed. PRsTTL removes a /prs/ repository whose last push or PR
	// event is older, unless its PR is merged into a repository hosted
	// here. 0 is unbounded (never, for PRsTTL).
	PRsMaxMB             int      `toml:"prs_max_mb"`
	PRsMaxMBPerIP        int      `toml:"prs_max_mb_per_ip"`
	PRsMaxMBPerPubkey    int      `toml:"prs_max_mb_per_pubkey"`
	PRsMaxRepos          int      `toml:"prs_max_repos"`
	PRsMaxReposPerIP     int      `toml:"prs_max_repos_per_ip"`
	PRsMaxReposPerPubkey int      `toml:"prs_max_repos_per_pubkey"`
	PRsTTL               Duration `toml:"prs_ttl"`
	// RepositoryWhitelist and RepositoryBlacklist take the same entry forms
	// as ArchiveWhitelist; the blacklist beats every whitelist.
	RepositoryWhitelist []string `toml:"repository_whitelist"`
	RepositoryBlacklist []string `toml:"repository_blacklist"`
	// EventBlacklist lists pubkeys (npub or hex; stored as hex) whose events
	// are rejected whatever their kind.
	EventBlacklist    []string `toml:"event_blacklist"`
	MaxReposPerPubkey int      `toml:"max_repos_per_pubkey"` // 0 = unlimited
	// MaxPushMB bounds one git push (the request body, decompressed); a
	// larger push fails and writes nothing. 0 means no bound.
	MaxPushMB int `toml:"max_push_mb"`
	// Private turns on GRASP-08 for the whole service: every event and
	// every repository is served only to authenticated members (NIP-42 on
	// the relay, NIP-98 on git).
	Private bool `toml:"private"`
	// PrivateRepositories offers per-repository privacy (GRASP-08): an
	// announcement with ["private","true"] is accepted and its repository
	// served to its maintainers only, and NIP-11 lists GRASP-08. Off (the
	// default), such an announcement is refused and GRASP-08 is not
	// advertised (ngit treats any server advertising it as private
	// transport); repositories already private stay private either way.
	PrivateRepositories bool `toml:"private_repositories"`
	// PrivateMembers (npub or hex; stored as hex) read everything private
	// here, with the relay's key and each private repository's confirmed
	// maintainers; in service-wide private mode they may also write. A
	// reload (SIGHUP) applies it: removed keys lose access at once.
	PrivateMembers []string `toml:"private_members"`
}

// Purgatory holds the timers of held events and of the git-data hunter.
type Purgatory struct {
	TTL              Duration `toml:"ttl"`
	UserFetchDelay   Duration `toml:"user_fetch_delay"`
	SyncFetchDelay   Duration `toml:"sync_fetch_delay"`
	FetchBackoffBase Duration `toml:"fetch_backoff_base"`
	FetchBackoffMax  Duration `toml:"fetch_backoff_max"`
	NostrRefTTL      Duration `toml:"nostr_ref_ttl"`
	SweepInterval    Duration `toml:"sweep_interval"`
	HuntInterval     Duration `toml:"hunt_interval"`
	RecheckInterval  Duration `toml:"recheck_interval"`
	NaughtyTTL       Duration `toml:"naughty_ttl"`
	// FetchPrivateAddresses lets the git-data hunter fetch from clone URLs
	// on loopback, private and link-local addresses. Off by default: clone
	// URLs come from anyone's announcements (SSRF into the operator's
	// network).
	FetchPrivateAddresses bool     `toml:"fetch_private_addresses"`
	ExpiredMemory         Duration `toml:"expired_memory"`

	// What strangers may park here (audit 2026-11, F13). MaxHeld and
	// MaxHeldPerIP count held events of every kind; the announcement caps
	// count repositories waiting for their first push (each has a bare
	// repository). Per IP counts events from websocket clients only. 0 is
	// unbounded.
	MaxHeld                           int `toml:"max_held"`
	MaxHeldPerIP                      int `toml:"max_held_per_ip"`
	MaxHeldAnnouncements              int `toml:"max_held_announcements"`
	MaxHeldAnnouncementsPerIP         int `toml:"max_held_announcements_per_ip"`
	MaxHeldAnnouncementsPerPubkey     int `toml:"max_held_announcements_per_pubkey"`
	MaxHeldAnnouncementsPerIdentifier int `toml:"max_held_announcements_per_identifier"`
	// Per relay counts events synced from one relay (audit 2026-11b, F26:
	// synced events carried no client address, so one relay an
	// announcement named filled the relay-wide caps).
	MaxHeldPerRelay              int `toml:"max_held_per_relay"`
	MaxHeldAnnouncementsPerRelay int `toml:"max_held_announcements_per_relay"`

	// refs/nostr/<id> placeholders pushed before their PR event, anonymous
	// by design (audit 2026-11, F02): how many may wait for their event, and
	// how many MiB of pushed data they may hold, per repository, per
	// repository owner (pubkey) and per client IP. 0 is unbounded.
	MaxPlaceholdersPerRepo    int `toml:"max_placeholders_per_repo"`
	MaxPlaceholdersPerPubkey  int `toml:"max_placeholders_per_pubkey"`
	MaxPlaceholdersPerIP      int `toml:"max_placeholders_per_ip"`
	MaxPlaceholderMBPerRepo   int `toml:"max_placeholder_mb_per_repo"`
	MaxPlaceholderMBPerPubkey int `toml:"max_placeholder_mb_per_pubkey"`
	MaxPlaceholderMBPerIP     int `toml:"max_placeholder_mb_per_ip"`
}

// Git bounds what git requests may cost (audit 2026-11, F04, F08): the
// processes they run and how slowly a client may send a request body.
type Git struct {
	// MaxProcesses bounds git processes serving requests at once; a request
	// beyond it waits up to QueueWait for a slot, then is refused (503).
	MaxProcesses int      `toml:"max_processes"`
	QueueWait    Duration `toml:"queue_wait"`
	// MaxProcessesPerIP bounds them per client IP; beyond it a request is
	// refused at once (429).
	MaxProcessesPerIP int `toml:"max_processes_per_ip"`
	// MinBodyBytes must arrive in every BodyRateWindow a request body is
	// waited for, or the request is cut (a trickling client holds a process).
	MinBodyBytes   int      `toml:"min_body_bytes"`
	BodyRateWindow Duration `toml:"body_rate_window"`
	// MaxPushDuration and MaxFetchDuration stop a receive-pack, or an
	// upload-pack, that runs longer.
	MaxPushDuration  Duration `toml:"max_push_duration"`
	MaxFetchDuration Duration `toml:"max_fetch_duration"`
}

// Sync is GRASP-02 proactive event sync.
type Sync struct {
	Enabled bool `toml:"enabled"`
	// BootstrapRelays are always connected and never dropped as empty. A URL
	// without a scheme gets wss://.
	BootstrapRelays         []string `toml:"bootstrap_relays"`
	BatchWindow             Duration `toml:"batch_window"`
	ConsolidateAbove        int      `toml:"consolidate_above"`
	TagsPerFilter           int      `toml:"tags_per_filter"`
	QuickReconnectWindow    Duration `toml:"quick_reconnect_window"`
	DailyMin                Duration `toml:"daily_min"`
	DailyMax                Duration `toml:"daily_max"`
	Negentropy              bool     `toml:"negentropy"`
	DisconnectCheckInterval Duration `toml:"disconnect_check_interval"`
	RateLimitCooldown       Duration `toml:"rate_limit_cooldown"`
	// ConnectPrivateAddresses lets sync connect to relay URLs (taken from
	// anyone's announcements) on loopback, private and link-local
	// addresses. Off by default (SSRF); bootstrap relays are always allowed.
	ConnectPrivateAddresses bool `toml:"connect_private_addresses"`
	// Relay URLs are anyone's: one announcement listing 1000 relays made
	// sync dial all 1000 (audit F14). MaxRelaysPerRepo is how many of a
	// repository's relays are synced (the first it lists, after relay
	// selection); MaxRelays bounds the relays synced in all, bootstrap
	// relays aside, keeping those the most repositories list;
	// MaxHeldRelays bounds, within MaxRelays, the relays connected only for
	// announcements still in purgatory.
	MaxRelaysPerRepo int `toml:"max_relays_per_repo"`
	MaxRelays        int `toml:"max_relays"`
	MaxHeldRelays    int `toml:"max_held_relays"`
	// Outbox is GRASP-03 Sync+: the conversation on accepted issues,
	// patches and PRs is also fetched from the participants' NIP-65 write
	// relays. Participants and their relay lists are anyone's, so each is
	// bounded: OutboxRelaysPerParticipant write relays of one participant,
	// OutboxParticipantsPerRoot participants of one root event, and
	// MaxOutboxRelays relays synced only for outbox (the ones most
	// repositories need are kept), and OutboxEventsPerRelayPerDay events
	// taken from one of them in a UTC day (beyond it the relay is
	// disconnected and backed off until the day ends).
	Outbox                     bool `toml:"outbox"`
	OutboxRelaysPerParticipant int  `toml:"outbox_relays_per_participant"`
	OutboxParticipantsPerRoot  int  `toml:"outbox_participants_per_root"`
	MaxOutboxRelays            int  `toml:"max_outbox_relays"`
	OutboxEventsPerRelayPerDay int  `toml:"outbox_events_per_relay_per_day"`
}

// Health is the relay connection health tracker (backoff, dead relays).
type Health struct {
	BaseBackoff Duration `toml:"base_backoff"`
	MaxBackoff  Duration `toml:"max_backoff"`
	DeadAfter   Duration `toml:"dead_after"`
	DeadRetry   Duration `toml:"dead_retry"`
	// ForgetAfter drops the record of a relay nothing happened with for
	// this long (it is no longer listed, or no longer dialled); MaxRecords
	// bounds the records kept, forgetting the longest idle first.
	ForgetAfter Duration `toml:"forget_after"`
	MaxRecords  int      `toml:"max_records"`
}

// Throttle is the per-domain git fetch limits of the hunter.
type Throttle struct {
	Concurrent    int `toml:"concurrent"`
	PerMinute     int `toml:"per_minute"`
	MaxConcurrent int `toml:"max_concurrent"`
	MaxPerMinute  int `toml:"max_per_minute"`
	// Files are globs of per-domain tuning files.
	Files []string `toml:"files"`
}

// Plugins names the JavaScript plugins and how they are hosted.
type Plugins struct {
	// Dir confines plugin files; written in a file, a relative path is
	// from the file's directory (Load).
	Dir            string   `toml:"dir"`
	Watch          bool     `toml:"watch"`
	PoolSize       int      `toml:"pool_size"` // 0 = GOMAXPROCS
	MaxCallStack   int      `toml:"max_call_stack"`
	Accept         []Plugin `toml:"accept"`
	RelaySelection []Plugin `toml:"relay_selection"`
	Throttle       []Plugin `toml:"throttle"`
}

// Plugin is one entry of a hook's chain; chain order is file order.
type Plugin struct {
	Name    string   `toml:"name"`
	File    string   `toml:"file"` // relative to Plugins.Dir
	Timeout Duration `toml:"timeout"`
	OnError string   `toml:"on_error"` // OnErrorReject | OnErrorSkip
	// Config is passed to the script as is; any keys are allowed here.
	Config map[string]any `toml:"config"`
}

// Plugin failure policies.
const (
	OnErrorReject = "reject" // fail closed
	OnErrorSkip   = "skip"   // fail open
)

// Log configures hclog.
type Log struct {
	Level  string `toml:"level"`  // trace|debug|info|warn|error
	Format string `toml:"format"` // text|json
}

// Metrics is the Prometheus endpoint, on its own listener.
type Metrics struct {
	Enabled bool   `toml:"enabled"`
	Listen  string `toml:"listen"`
	// AdminTokenFile holds the token every admin path of the listener
	// requires (audit 2026-11b, F24); the server creates it, mode 0600,
	// when missing, and `grasp admin` reads it. Empty means
	// <data_dir>/admin.token (AdminToken).
	AdminTokenFile string `toml:"admin_token_file"`
}

// AdminToken is the admin token file metrics.admin_token_file names.
func (c Config) AdminToken() string {
	if c.Metrics.AdminTokenFile != "" {
		return c.Metrics.AdminTokenFile
	}
	return filepath.Join(c.Server.DataDir, AdminTokenName)
}

// AdminTokenName is the admin token file's name in the data dir; backups
// leave it out (a restored server makes its own).
const AdminTokenName = "admin.token"
