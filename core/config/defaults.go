package config

import (
	"reflect"
	"time"

	"github.com/grasp-dev/grasp/core/clientip"
)

const day = 24 * time.Hour

// MinPostgresPool is the smallest store.postgres_pool: the LISTEN
// connection, the leader lease, the repository-lock session and one
// connection for contended locks, three reserved for writes and side
// tables, three for clients' queries (core/store/pg_pool.go splits it).
const MinPostgresPool = 10

// Plugin hook kinds, as named in [[plugins.<kind>]].
const (
	HookAccept         = "accept"
	HookRelaySelection = "relay_selection"
	HookThrottle       = "throttle"
)

// hookDefaults: the accept gate fails closed because a silently disabled spam
// filter is the worse failure; selection and throttle fail open so sync keeps
// running. Timeouts reflect where each hook runs: accept is on the hot path of
// every EVENT, selection and throttle run per repo or domain.
var hookDefaults = map[string]struct {
	timeout time.Duration
	onError string
}{
	HookAccept:         {50 * time.Millisecond, OnErrorReject},
	HookRelaySelection: {500 * time.Millisecond, OnErrorSkip},
	HookThrottle:       {200 * time.Millisecond, OnErrorSkip},
}

// Default returns the configuration used when grasp.toml sets nothing, with
// derived values (public URL, relay name) filled in.
func Default() Config {
	c := base()
	c.fillDerived()
	return c
}

// base is Default before derivation: what decoding starts from, so that a
// file setting only server.listen still derives public_url from that listen.
func base() Config {
	return Config{
		Server: Server{
			Listen:  "127.0.0.1:7334",
			DataDir: "./data",
			// Room for badger's compactions and memtable flushes (tens of
			// MiB each), a few pushes in flight and the operator's own
			// work; small next to any disk grasp should run on.
			MinFreeMB: 1024,
			// A soft limit makes the collector work harder as the Go heap
			// nears it, instead of letting a burst (badger compactions, a
			// flood of large frames, a plugin's allocation: audit F16 and
			// F05-F07 reached 1.6-4.2 GB RSS) grow the heap to twice its
			// live size before the next cycle. It never refuses memory; the
			// collector is held to about half the CPU above it. 768 MiB
			// and resident_file_mb's 192 MiB of mapped store files make
			// the 1 GiB a million-event server is held to, less 64 MiB
			// for what is mapped between two checks (issue 27 part
			// 2): its live heap is ~350 MiB (the negentropy index, sync's
			// root events, badger's caches), so the heap still doubles
			// before each cycle; larger servers raise it (config.md says
			// how).
			MemoryLimitMB: 768,
			// clientip says why: an IPv4 address is one client, an IPv6
			// client owns a /64.
			ClientPrefixV4: clientip.DefaultPrefixV4,
			ClientPrefixV6: clientip.DefaultPrefixV6,
		},
		Relay: Relay{
			Description: "GRASP server: a Nostr relay and git host for NIP-34 repositories",
			Limits:      defaultLimits(),
		},
		Store: Store{
			Backend:      "badger",
			MemtableMB:   16,
			BlockCacheMB: 64,
			// the WALs and the value-log file being written (~112 MiB)
			// and the tables' hot pages (their blocks are cached in the
			// heap anyway); with memory_limit_mb's 768 and 64 MiB for
			// what is mapped between two checks, the 1 GiB a
			// million-event server is held to
			ResidentFileMB: 192,
			// a leader renews every third of it: a few missed round
			// trips are survived, a dead leader replaced within 15 s
			LeaderLease: Duration(15 * time.Second),
			// derived at start from max_connections (see config.md)
			PostgresPool: 0,
			// two instances behind a load balancer, the smallest scale-out
			PostgresInstances: 2,
			// a client runs one stored query per connection at a time; 4
			// leaves room for a NAT of a few users, and a quarter of the
			// smallest query share to everyone else
			PostgresQueriesPerIP: 4,
		},
		Grasp: Grasp{
			ArchiveReadOnly: true,
			// GitHub's limit for one push: any repository GitHub accepts
			// can be pushed here in one go (its first push included), and no
			// single anonymous request can write more (audit F02).
			MaxPushMB: 2048,
			// GRASP-06 /prs/ data is anyone's, and a /prs/ repository
			// starts empty, so a PR's first push carries the whole history
			// of its repository. 1 GiB per address and per npub takes a
			// few PRs of a large repository; 10 GiB in all keeps /prs/
			// from filling a small server's disk (audit F20: 6 rounds of
			// 8 MiB from one address were all kept, without bound).
			PRsMaxMB:          10240,
			PRsMaxMBPerIP:     1024,
			PRsMaxMBPerPubkey: 1024,
			// A contributor has a few PRs open at once per server.
			PRsMaxRepos:          5000,
			PRsMaxReposPerIP:     50,
			PRsMaxReposPerPubkey: 50,
			// A PR under review is pushed to, or updated, within a month;
			// an abandoned one's data goes.
			PRsTTL: Duration(30 * day),
		},
		Purgatory: Purgatory{
			TTL:              Duration(30 * time.Minute),
			UserFetchDelay:   Duration(3 * time.Minute),
			SyncFetchDelay:   Duration(500 * time.Millisecond),
			FetchBackoffBase: Duration(20 * time.Second),
			FetchBackoffMax:  Duration(2 * time.Minute),
			NostrRefTTL:      Duration(20 * time.Minute),
			SweepInterval:    Duration(time.Minute),
			HuntInterval:     Duration(time.Second),
			RecheckInterval:  Duration(time.Hour),
			NaughtyTTL:       Duration(12 * time.Hour),
			ExpiredMemory:    Duration(7 * day),
			// Held events live minutes (ttl): an honest server holds tens.
			// 20,000 entries are ~40 MB of memory; the audit's flood was
			// 10,000.
			MaxHeld: 20000,
			// ngit sends an announcement and a state per repository; 200
			// held events from one address is a migration of many repos.
			MaxHeldPerIP: 200,
			// Each held announcement has a bare repository.
			MaxHeldAnnouncements: 5000,
			// ngit init pushes within seconds of announcing, so a held
			// announcement is released (or expires) quickly: 20 waiting per
			// address, per author and per identifier leaves room for a user
			// creating many repositories at once, and bounds a flood of
			// throwaway keys under one identifier (F03) or from one address.
			MaxHeldAnnouncementsPerIP:         20,
			MaxHeldAnnouncementsPerPubkey:     20,
			MaxHeldAnnouncementsPerIdentifier: 20,
			// A relay is one source like an address: the same room. A
			// GRASP-05 archive taking the network from a few relays raises
			// these with the caps above.
			MaxHeldPerRelay:              200,
			MaxHeldAnnouncementsPerRelay: 20,
			// A PR waits for its event minutes after the push (ngit pushes,
			// then signs): a repository rarely has more than a few waiting.
			// A PR's pack holds only its own commits (the base is here).
			MaxPlaceholdersPerRepo:    50,
			MaxPlaceholdersPerPubkey:  200,
			MaxPlaceholdersPerIP:      20,
			MaxPlaceholderMBPerRepo:   100,
			MaxPlaceholderMBPerPubkey: 500,
			MaxPlaceholderMBPerIP:     100,
		},
		Git: Git{
			// Each git process costs 5-40 MB (audit: 30 clones took
			// 1.1 GB); 32 bounds that to about 1.2 GB while 32 clones at
			// once run. A burst beyond it waits instead of failing.
			MaxProcesses: 32,
			QueueWait:    Duration(30 * time.Second),
			// A client runs one git request at a time (a clone is an
			// advertisement then one or two fetches); 8 leaves room for
			// several clients behind one NAT.
			MaxProcessesPerIP: 8,
			// 16 KiB per 30 s (about 550 B/s) is far below any real link,
			// and cuts a client that trickles a body to hold a process
			// (audit F04, F08: one byte every 5 s).
			MinBodyBytes:   16 << 10,
			BodyRateWindow: Duration(30 * time.Second),
			// A 2 GiB push (max_push_mb) at 1 MiB/s takes 35 minutes; a
			// fetch only sends, and a client that reads too slowly for 30
			// minutes holds a process for nothing.
			MaxPushDuration:  Duration(time.Hour),
			MaxFetchDuration: Duration(30 * time.Minute),
		},
		Sync: Sync{
			Enabled:                 true,
			BatchWindow:             Duration(5 * time.Second),
			ConsolidateAbove:        70,
			TagsPerFilter:           100,
			QuickReconnectWindow:    Duration(15 * time.Minute),
			DailyMin:                Duration(23 * time.Hour),
			DailyMax:                Duration(25 * time.Hour),
			Negentropy:              true,
			DisconnectCheckInterval: Duration(time.Minute),
			RateLimitCooldown:       Duration(65 * time.Second),
			// ngit lists a handful of relays; 10 per repository leaves
			// room for long lists, and 300 in all is an order of magnitude
			// more relays than the NIP-34 ecosystem runs.
			MaxRelaysPerRepo: 10,
			MaxRelays:        300,
			MaxHeldRelays:    50,
			// GRASP-03 is on by default, as in ngit-grasp. NIP-65 advises
			// 2-4 write relays; a conversation rarely has 20 voices; 100
			// outbox relays is a third of max_relays.
			Outbox:                     true,
			OutboxRelaysPerParticipant: 4,
			OutboxParticipantsPerRoot:  20,
			MaxOutboxRelays:            100,
			// The replies to one server's issues and PRs that one
			// participant's relay holds are tens a day; 10,000 leaves room
			// for a fresh sync of years of them and stops a relay that
			// streams without end.
			OutboxEventsPerRelayPerDay: 10000,
		},
		Health: Health{
			BaseBackoff: Duration(5 * time.Second),
			MaxBackoff:  Duration(time.Hour),
			DeadAfter:   Duration(day),
			DeadRetry:   Duration(day),
			// longer than a dead relay's retry interval
			ForgetAfter: Duration(7 * day),
			MaxRecords:  1000,
		},
		Throttle: Throttle{
			Concurrent:    5,
			PerMinute:     30,
			MaxConcurrent: 32,
			MaxPerMinute:  600,
		},
		Plugins: Plugins{
			Dir:          "plugins",
			MaxCallStack: 1000,
		},
		Log: Log{
			Level:  "info",
			Format: "text",
		},
		Metrics: Metrics{
			Enabled: true,
			Listen:  "127.0.0.1:7335",
		},
	}
}

// defaultLimits are chosen for NIP-34 traffic, not social notes. The
// reason for each value is next to it; tests get the same values through
// WithDefaults, so they run the server production runs.
func defaultLimits() Limits {
	return Limits{
		// A patch (kind 1617) is a whole `git format-patch`: real diffs of
		// a few hundred KiB are common (generated files, lock files,
		// vendored code) and strfry's 64 KiB would refuse them. 1 MiB fits
		// all but changes that belong in a push (a PR, kind 1618, carries
		// no diff). The embedded store keeps content above 64 KiB in a
		// side record (core/store/badger_large.go).
		MaxContentBytes: 1 << 20,
		// The content at its limit, JSON-escaped (newlines, tabs and
		// quotes of a diff add about 5-20%), plus its tags.
		MaxEventBytes: 1536 << 10,
		// The largest event, plus room for a client's non-canonical JSON
		// (\u escapes, whitespace) and the envelope. Also what one client
		// frame may make the gate buffer.
		MaxMessageBytes: 2 << 20,
		// A state event (kind 30618) carries one tag per branch and tag of
		// the repository: 2000 refs covers all but the largest monorepos,
		// and is strfry's value.
		MaxEventTags: 2000,
		// A commit-pgp-sig tag holds an armored signature (about 0.9 KiB
		// for RSA-4096, more with embedded key material); 8 KiB leaves a
		// wide margin for it and for descriptions. The embedded store caps
		// a tag value at 64 KiB - 1.
		MaxTagValueBytes: 8 << 10,
		// Repository history is as old as the repository and arrives by
		// sync: no lower bound.
		CreatedAtLowerLimit: 0,
		// Clock skew of honest clients; strfry's value.
		CreatedAtUpperLimit: Duration(15 * time.Minute),
		// strfry's value; GRASP-02 peers consolidate above 70 filters.
		MaxFiltersPerReq: 200,
		// Matching is quadratic in tag conditions (strfry's reason for 3);
		// NIP-34 clients use one or two (#a, #e).
		MaxTagsPerFilter: 3,
		// A GRASP-02 peer lists up to 100 values per tag filter
		// (sync.tags_per_filter); a client fetching a thread by ids lists a
		// few hundred.
		MaxFilterItems: 1000,
		// strfry's value; a client browsing many repos opens tens.
		MaxSubscriptions: 200,
		// NIP-01: ids are at most 64 characters.
		MaxSubIDLength: 64,
		// strfry's cap. NIP-34 clients often send filters without a limit
		// and expect the whole thread or repo, so a filter without a limit
		// gets the cap, not less.
		MaxLimit:     500,
		DefaultLimit: 500,
		// strfry's value: a client that falls this far behind on live
		// events is dropped. Stored results wait for the client instead.
		MaxPendingOutboundBytes: 32 << 20,
		// Pings well inside the idle timeouts of common proxies (60 s); a
		// client silent for two intervals is gone (half-open TCP).
		PingInterval:  Duration(30 * time.Second),
		ClientTimeout: Duration(time.Minute),
		// A peer's frame is an event (up to max_message_bytes) or a NIP-77
		// reply: khatru v0.19.1 sends frames of up to 1 MiB, 2 MiB as hex.
		MaxPeerMessageBytes: 4 << 20,
		// strfry's negentropy.maxSyncEvents; beyond it NEG-ERR "blocked:".
		NegentropyMaxEvents: 1_000_000,
		// Each session holds an id vector of up to NegentropyMaxEvents
		// (40 bytes each): 64 sessions bound that memory relay-wide; a
		// syncing peer needs one or two per connection.
		NegentropyMaxSessions:     64,
		NegentropySessionsPerConn: 4,
		// One NEG-MSG reply before hex encoding: 500 KB reconciles 1M
		// events in about 64 rounds and stays under max_message_bytes of a
		// peer running these defaults.
		NegentropyFrameBytes: 500_000,
		// A reconciling client answers within a round trip; an idle
		// session only holds memory.
		NegentropyIdleTimeout: Duration(time.Minute),
		// A set comes from the in-memory index in milliseconds, on
		// PostgreSQL from one query of (created_at, id) pairs in about a
		// second per million events; a connection's reader serves
		// nothing else meanwhile.
		NegentropyOpenTimeout: Duration(30 * time.Second),
		// A syncing peer needs one or two sessions; 8 lets a few peers
		// share an address (NAT) and leaves 56 of the 64 slots to others.
		NegentropySessionsPerIP: 8,
		// About 10 KB and 2 goroutines per idle connection (gate package
		// doc): 10,000 cost ~100 MB. A client opens one or two; 100 per
		// address leaves room for a NAT or a busy sync peer.
		MaxConnections:      10_000,
		MaxConnectionsPerIP: 100,
		// Enough for pipelined EVENTs to share a group commit.
		MaxUnanswered: 32,
		// 64 MiB of EVENT frames in flight: 32 unanswered max-size events
		// of one connection fit, and 150k small frames (F05's 1.6 GB) do
		// not.
		MaxInflightEventBytes: 64 << 20,
		// Eight connections' worth of max_pending_outbound_bytes.
		MaxTotalOutboundBytes: 64 << 20,
	}
}

// DefaultLimits are the limits grasp runs with when grasp.toml sets none.
func DefaultLimits() Limits { return defaultLimits() }

// WithDefaults returns l with every zero field set to its default. It is the
// one way a part built without a config file gets the production values
// (tests set only the limits they exercise). CreatedAtLowerLimit's default
// is 0 (no bound), so a zero there stays zero.
func (l Limits) WithDefaults() Limits {
	d := defaultLimits()
	lv, dv := reflect.ValueOf(&l).Elem(), reflect.ValueOf(d)
	for i := 0; i < lv.NumField(); i++ {
		if f := lv.Field(i); f.IsZero() {
			f.Set(dv.Field(i))
		}
	}
	return l
}

// WithDefaults returns s with every zero number and duration set to its
// default; flags and lists are kept as they are. Load's result needs
// nothing: these keys must be positive.
func (s Sync) WithDefaults() Sync {
	fillZero(&s, Default().Sync)
	return s
}

// WithDefaults is Sync.WithDefaults for [health].
func (h Health) WithDefaults() Health {
	fillZero(&h, Default().Health)
	return h
}

// fillZero sets the zero numeric fields of *v (durations included) to
// those of d.
func fillZero[T any](v *T, d T) {
	lv, dv := reflect.ValueOf(v).Elem(), reflect.ValueOf(d)
	for i := 0; i < lv.NumField(); i++ {
		f := lv.Field(i)
		switch f.Kind() {
		case reflect.Int, reflect.Int64, reflect.Float64:
			if f.IsZero() {
				f.Set(dv.Field(i))
			}
		}
	}
}
