package config

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/grasp-dev/grasp/core/archive"
	"github.com/grasp-dev/grasp/core/clientip"
	"github.com/grasp-dev/grasp/core/logging"
	"github.com/grasp-dev/grasp/core/nip34"
)

// fillDerived fills the values that default from other values: public_url
// from listen, the relay name from the host, and each plugin's timeout and
// on_error from its hook. It is idempotent.
func (c *Config) fillDerived() {
	if c.Server.PublicURL == "" {
		c.Server.PublicURL = derivePublicURL(c.Server.Listen)
	}
	if u, err := url.Parse(c.Server.PublicURL); err == nil && u.Host != "" {
		c.Server.PublicURL = canonicalURL(u)
	}
	for i, a := range c.Server.PublicURLAliases {
		if u, err := url.Parse(a); err == nil && u.Host != "" {
			c.Server.PublicURLAliases[i] = canonicalURL(u)
		}
	}
	if c.Relay.Name == "" {
		if h := c.Host(); h != "" {
			c.Relay.Name = h + " grasp relay"
		}
	}
	for hook, list := range c.Plugins.hooks() {
		for i := range list {
			if list[i].Timeout == 0 {
				list[i].Timeout = Duration(hookDefaults[hook].timeout)
			}
			if list[i].OnError == "" {
				list[i].OnError = hookDefaults[hook].onError
			}
		}
	}
}

// checkPublicURL checks one entry of server.public_url.
func checkPublicURL(k *checker, key, raw string) {
	if raw == "" {
		return
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		k.fail(key, "not a URL: %v", err)
	case u.Scheme != "http" && u.Scheme != "https":
		k.fail(key, "scheme must be http or https, got %q", raw)
	case u.Host == "" || u.Hostname() == "":
		k.fail(key, "has no host: %q", raw)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		k.fail(key, "must not carry user info, query or fragment: %q", raw)
	default:
		if err := checkBasePath(u.EscapedPath()); err != nil {
			k.fail(key, "%v", err)
		}
	}
}

// derivePublicURL turns a listen address into a URL clients on this machine
// can use; an unspecified host (":7334", "0.0.0.0:7334") becomes loopback.
// PublicURLFromWildcard reports whether server.listen is a wildcard address
// and server.public_url was left to be derived from it: the derived URL
// names 127.0.0.1, so announcements naming the machine's real host are all
// refused as not listing this server.
func (c Config) PublicURLFromWildcard() bool {
	host, _, err := net.SplitHostPort(c.Server.Listen)
	if ip := net.ParseIP(host); err != nil || host != "" && (ip == nil || !ip.IsUnspecified()) {
		return false
	}
	return c.Server.PublicURL == derivePublicURL(c.Server.Listen)
}

func derivePublicURL(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 0 || n > 65535 {
		return "" // server.listen reports the problem
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// canonicalURL lower-cases scheme and host and drops a default port, so that
// "HTTPS://Git.Example.com:443/" and "https://git.example.com" are the same
// service when announcements are matched against it.
func canonicalURL(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if scheme == "http" && port == "80" || scheme == "https" && port == "443" {
		port = ""
	}
	hostport := host
	if strings.Contains(host, ":") {
		hostport = "[" + host + "]"
	}
	if port != "" {
		hostport = net.JoinHostPort(host, port)
	}
	out := *u
	out.Scheme, out.Host = scheme, hostport
	// The base path is kept without its trailing slash: clone URLs are
	// <public_url>/<npub>/<id>.git and the relay URL is ws(s)://host<path>.
	out.Path = strings.TrimRight(out.Path, "/")
	out.RawPath = ""
	return out.String()
}

// checkBasePath accepts the path of a public URL served under a base path
// (issue 10 part 5, "https://example.org/git"): plain segments of letters,
// digits and "-._~", none of them "." or "..", so that the path is spelled
// one way in clone URLs, relay URLs and routing, and no segment can be
// mistaken for a repository owner (npub1...).
func checkBasePath(escaped string) error {
	if escaped == "" {
		return nil
	}
	for _, seg := range strings.Split(strings.TrimPrefix(escaped, "/"), "/") {
		switch {
		case seg == "" || seg == "." || seg == "..":
			return fmt.Errorf("base path %q has an empty, \".\" or \"..\" segment", escaped)
		case strings.HasPrefix(seg, "npub1"):
			return fmt.Errorf("base path %q has a segment that reads as an npub", escaped)
		}
		for _, c := range seg {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-._~", c)) {
				return fmt.Errorf("base path %q: segments may hold only letters, digits and \"-._~\"", escaped)
			}
		}
	}
	return nil
}

func (p *Plugins) hooks() map[string][]Plugin {
	return map[string][]Plugin{
		HookAccept:         p.Accept,
		HookRelaySelection: p.RelaySelection,
		HookThrottle:       p.Throttle,
	}
}

// checker collects validation problems keyed by config path.
type checker struct{ problems []Problem }

func (k *checker) fail(key, format string, args ...any) {
	k.problems = append(k.problems, Problem{Key: key, Msg: fmt.Sprintf(format, args...)})
}

func (k *checker) positive(key string, v int) {
	if v <= 0 {
		k.fail(key, "must be greater than 0, got %d", v)
	}
}

func (k *checker) nonNegative(key string, v int) {
	if v < 0 {
		k.fail(key, "must not be negative, got %d", v)
	}
}

func (k *checker) positiveDur(key string, d Duration) {
	if d <= 0 {
		k.fail(key, "must be a positive duration, got %q", d.String())
	}
}

func (k *checker) nonNegativeDur(key string, d Duration) {
	if d < 0 {
		k.fail(key, "must not be negative, got %q", d.String())
	}
}

func (k *checker) oneOf(key, v string, allowed []string) {
	if !slices.Contains(allowed, v) {
		k.fail(key, "%q is not one of %s", v, strings.Join(allowed, ", "))
	}
}

func (k *checker) listen(key, addr string) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		k.fail(key, "want host:port, got %q", addr)
		return
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		k.fail(key, "port %q is not a number from 0 to 65535", port)
	}
	if host != "" && net.ParseIP(host) == nil && strings.ContainsAny(host, "/ ") {
		k.fail(key, "host %q is not an IP address or name", host)
	}
}

// check validates c (after fillDerived) and normalises the values it accepts
// in more than one spelling.
func (c *Config) check() []Problem {
	k := &checker{}
	c.checkServer(k)
	c.checkRelay(k)
	c.checkStore(k)
	c.checkGrasp(k)
	c.checkTimers(k)
	c.checkQuotas(k)
	c.checkSync(k)
	c.checkThrottle(k)
	c.checkPlugins(k)
	k.oneOf("log.level", c.Log.Level, logging.Levels)
	k.oneOf("log.format", c.Log.Format, logging.Formats)
	c.checkMetrics(k)
	return k.problems
}

func (c *Config) checkServer(k *checker) {
	k.listen("server.listen", c.Server.Listen)
	before := len(k.problems)
	if c.Server.PublicURL != "" || len(c.Server.PublicURLAliases) == 0 {
		// "" only when it could not be derived from a bad server.listen,
		// which is reported on its own.
		checkPublicURL(k, "server.public_url", c.Server.PublicURL)
	}
	for i, a := range c.Server.PublicURLAliases {
		key := fmt.Sprintf("server.public_url[%d]", i+1)
		if a == "" {
			k.fail(key, "must not be empty")
			continue
		}
		checkPublicURL(k, key, a)
	}
	if len(c.Server.PublicURLAliases) > 0 && len(k.problems) == before && c.Server.PublicURL != "" {
		if _, err := nip34.ParseService(c.Server.PublicURL, c.Server.PublicURLAliases...); err != nil {
			k.fail("server.public_url", "%v", err)
		}
	}
	if strings.TrimSpace(c.Server.DataDir) == "" {
		k.fail("server.data_dir", "must not be empty")
	}
	if c.Server.MemoryLimitMB < 0 {
		k.fail("server.memory_limit_mb", "must be 0 (no limit) or a positive number of MiB")
	}
	if _, err := clientip.Parse(c.Server.TrustedProxies); err != nil {
		k.fail("server.trusted_proxies", "%v", err)
	}
	if err := clientip.CheckPrefix(false, c.Server.ClientPrefixV4); err != nil {
		k.fail("server.client_prefix_v4", "%v", err)
	}
	if err := clientip.CheckPrefix(true, c.Server.ClientPrefixV6); err != nil {
		k.fail("server.client_prefix_v6", "%v", err)
	}
}

func (c *Config) checkRelay(k *checker) {
	k.pubkeys("relay.admin_pubkeys", c.Relay.AdminPubkeys)
	if c.Relay.Pubkey != "" {
		hex, err := NormalizePubkey(c.Relay.Pubkey)
		if err != nil {
			k.fail("relay.pubkey", "%v", err)
		} else {
			c.Relay.Pubkey = hex
		}
	}
	if c.Relay.Icon != "" {
		if u, err := url.Parse(c.Relay.Icon); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			k.fail("relay.icon", "want an http(s) URL, got %q", c.Relay.Icon)
		}
	}
	l := c.Relay.Limits
	const p = "relay.limits."
	k.positive(p+"max_message_bytes", l.MaxMessageBytes)
	k.positive(p+"max_event_bytes", l.MaxEventBytes)
	k.positive(p+"max_content_bytes", l.MaxContentBytes)
	k.positive(p+"max_event_tags", l.MaxEventTags)
	k.positive(p+"max_tag_value_bytes", l.MaxTagValueBytes)
	k.nonNegativeDur(p+"created_at_lower_limit", l.CreatedAtLowerLimit)
	k.positiveDur(p+"created_at_upper_limit", l.CreatedAtUpperLimit)
	k.positive(p+"max_filters_per_req", l.MaxFiltersPerReq)
	k.positive(p+"max_tags_per_filter", l.MaxTagsPerFilter)
	k.positive(p+"max_filter_items", l.MaxFilterItems)
	k.positive(p+"max_subscriptions", l.MaxSubscriptions)
	k.positive(p+"max_subid_length", l.MaxSubIDLength)
	k.positive(p+"max_limit", l.MaxLimit)
	k.positive(p+"default_limit", l.DefaultLimit)
	k.positive(p+"max_pending_outbound_bytes", l.MaxPendingOutboundBytes)
	k.positive(p+"negentropy_max_events", l.NegentropyMaxEvents)
	k.positive(p+"negentropy_max_sessions", l.NegentropyMaxSessions)
	k.positive(p+"negentropy_sessions_per_conn", l.NegentropySessionsPerConn)
	k.positive(p+"max_peer_message_bytes", l.MaxPeerMessageBytes)
	k.positiveDur(p+"ping_interval", l.PingInterval)
	k.positiveDur(p+"client_timeout", l.ClientTimeout)
	k.positiveDur(p+"negentropy_idle_timeout", l.NegentropyIdleTimeout)
	k.positiveDur(p+"negentropy_open_timeout", l.NegentropyOpenTimeout)
	k.positive(p+"negentropy_sessions_per_ip", l.NegentropySessionsPerIP)
	k.positive(p+"max_connections", l.MaxConnections)
	k.positive(p+"max_connections_per_ip", l.MaxConnectionsPerIP)
	k.positive(p+"max_unanswered", l.MaxUnanswered)
	k.positive(p+"max_inflight_event_bytes", l.MaxInflightEventBytes)
	k.positive(p+"max_total_outbound_bytes", l.MaxTotalOutboundBytes)
	if l.MaxConnectionsPerIP > l.MaxConnections {
		k.fail(p+"max_connections_per_ip", "%d exceeds max_connections %d", l.MaxConnectionsPerIP, l.MaxConnections)
	}
	if l.NegentropySessionsPerIP > l.NegentropyMaxSessions {
		k.fail(p+"negentropy_sessions_per_ip", "%d exceeds negentropy_max_sessions %d", l.NegentropySessionsPerIP, l.NegentropyMaxSessions)
	}
	if l.MaxEventBytes > l.MaxMessageBytes {
		k.fail(p+"max_event_bytes", "%d exceeds max_message_bytes %d: such an event could never arrive in one message", l.MaxEventBytes, l.MaxMessageBytes)
	}
	if l.MaxContentBytes > l.MaxEventBytes {
		k.fail(p+"max_content_bytes", "%d exceeds max_event_bytes %d", l.MaxContentBytes, l.MaxEventBytes)
	}
	if l.DefaultLimit > l.MaxLimit {
		k.fail(p+"default_limit", "%d exceeds max_limit %d", l.DefaultLimit, l.MaxLimit)
	}
	if l.MaxTagValueBytes > 65535 {
		// The embedded store encodes a tag value's length in 16 bits.
		k.fail(p+"max_tag_value_bytes", "%d exceeds 65535, the longest tag value the event store can hold", l.MaxTagValueBytes)
	}
	if l.NegentropyFrameBytes < 4096 {
		// go-nostr's negentropy engine panics below 4096.
		k.fail(p+"negentropy_frame_bytes", "must be at least 4096, got %d", l.NegentropyFrameBytes)
	}
	if l.ClientTimeout.D() > 0 && l.ClientTimeout.D() <= l.PingInterval.D() {
		k.fail(p+"client_timeout", "%s must exceed ping_interval %s, or every client times out between two pings", l.ClientTimeout, l.PingInterval)
	}
	if l.MaxSubIDLength > 0 && l.MaxSubIDLength < 64 {
		// NIP-01 lets clients use ids up to 64 characters; ngit uses long ones.
		k.fail(p+"max_subid_length", "must be at least 64 (NIP-01), got %d", l.MaxSubIDLength)
	}
}

func (c *Config) checkStore(k *checker) {
	s := c.Store
	k.oneOf("store.backend", s.Backend, []string{"badger", "postgres"})
	if s.Backend == "postgres" {
		u, err := url.Parse(s.PostgresURL)
		if s.PostgresURL == "" {
			k.fail("store.postgres_url", "required when store.backend is \"postgres\"")
		} else if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			// Do not echo the URL: it usually carries a password.
			k.fail("store.postgres_url", "want a postgres:// or postgresql:// URL")
		}
	}
	k.positive("store.memtable_mb", s.MemtableMB)
	k.nonNegative("store.block_cache_mb", s.BlockCacheMB)
	k.nonNegative("store.resident_file_mb", s.ResidentFileMB)
	k.positiveDur("store.leader_lease", s.LeaderLease)
	if s.LeaderLease.D() > 0 && s.LeaderLease.D() < time.Second {
		k.fail("store.leader_lease", "must be at least 1s (the leader renews every third of it), got %s", s.LeaderLease.D())
	}
	if s.PostgresPool != 0 && s.PostgresPool < MinPostgresPool {
		k.fail("store.postgres_pool", "must be 0 (derived from max_connections) or at least %d (the reserved connections and a share for queries), got %d", MinPostgresPool, s.PostgresPool)
	}
	k.positive("store.postgres_instances", s.PostgresInstances)
	k.positive("store.postgres_queries_per_ip", s.PostgresQueriesPerIP)
}

func (c *Config) checkGrasp(k *checker) {
	g := &c.Grasp
	for _, l := range []struct {
		key  string
		list []string
	}{
		{"grasp.repository_whitelist", g.RepositoryWhitelist},
		{"grasp.repository_blacklist", g.RepositoryBlacklist},
	} {
		for i, e := range l.list {
			if _, err := ParseRepoPattern(e); err != nil {
				k.fail(fmt.Sprintf("%s[%d]", l.key, i), "%v", err)
			}
		}
	}
	k.pubkeys("grasp.event_blacklist", g.EventBlacklist)
	k.pubkeys("grasp.private_members", g.PrivateMembers)
	k.nonNegative("grasp.max_repos_per_pubkey", g.MaxReposPerPubkey)
	k.nonNegative("grasp.max_push_mb", g.MaxPushMB)
	for _, q := range []struct {
		key string
		v   int
	}{
		{"grasp.prs_max_mb", g.PRsMaxMB},
		{"grasp.prs_max_mb_per_ip", g.PRsMaxMBPerIP},
		{"grasp.prs_max_mb_per_pubkey", g.PRsMaxMBPerPubkey},
		{"grasp.prs_max_repos", g.PRsMaxRepos},
		{"grasp.prs_max_repos_per_ip", g.PRsMaxReposPerIP},
		{"grasp.prs_max_repos_per_pubkey", g.PRsMaxReposPerPubkey},
	} {
		k.nonNegative(q.key, q.v)
	}
	k.nonNegativeDur("grasp.prs_ttl", g.PRsTTL)
	c.checkArchive(k)
	if g.Grasp06 && g.Private {
		// GRASP-08: a private service does not offer GRASP-06
		// (field-2026-09.md §1): /prs/ takes anyone's data.
		k.fail("grasp.grasp06", "GRASP-06 /prs/ hosting is not offered by a private service (grasp.private = true); leave it false")
	}
}

// checkArchive checks GRASP-05 archive mode (core/archive parses the
// entries, so what is accepted here is what the server runs with).
func (c *Config) checkArchive(k *checker) {
	g := &c.Grasp
	for i, e := range g.ArchiveWhitelist {
		if _, err := archive.ParseEntry(e); err != nil {
			k.fail(fmt.Sprintf("grasp.archive_whitelist[%d]", i), "%v", err)
		}
	}
	for i, e := range g.ArchiveHosts {
		if _, _, err := archive.ParseHost(e); err != nil {
			k.fail(fmt.Sprintf("grasp.archive_hosts[%d]", i), "%v", err)
		}
	}
	on, key := g.ArchiveAll || len(g.ArchiveWhitelist) > 0 || len(g.ArchiveHosts) > 0, "grasp.archive_all"
	if !g.ArchiveAll && len(g.ArchiveWhitelist) > 0 {
		key = "grasp.archive_whitelist"
	} else if !g.ArchiveAll {
		key = "grasp.archive_hosts"
	}
	switch {
	case !on:
	case g.ArchiveAll && (len(g.ArchiveWhitelist) > 0 || len(g.ArchiveHosts) > 0):
		k.fail("grasp.archive_all", "archive_all archives every repository; leave archive_whitelist and archive_hosts empty, or set archive_all = false to archive only them")
	case g.Private:
		// GRASP-05 mirrors public repositories through GRASP-02 sync,
		// which a private service never runs.
		k.fail(key, "GRASP-05 archive mode syncs public repositories, which a private service (grasp.private = true) never does; turn one of them off")
	case !c.Sync.Enabled:
		k.fail("sync.enabled", "GRASP-05 archive mode needs GRASP-02 sync (it discovers and mirrors repositories through it); set sync.enabled = true or turn archive mode off")
	}
}

func (c *Config) checkTimers(k *checker) {
	pg := c.Purgatory
	for _, t := range []struct {
		key string
		d   Duration
	}{
		{"purgatory.ttl", pg.TTL},
		{"purgatory.fetch_backoff_base", pg.FetchBackoffBase},
		{"purgatory.fetch_backoff_max", pg.FetchBackoffMax},
		{"purgatory.nostr_ref_ttl", pg.NostrRefTTL},
		{"purgatory.sweep_interval", pg.SweepInterval},
		{"purgatory.hunt_interval", pg.HuntInterval},
		{"purgatory.recheck_interval", pg.RecheckInterval},
		{"purgatory.naughty_ttl", pg.NaughtyTTL},
		{"purgatory.expired_memory", pg.ExpiredMemory},
		{"health.base_backoff", c.Health.BaseBackoff},
		{"health.max_backoff", c.Health.MaxBackoff},
		{"health.dead_after", c.Health.DeadAfter},
		{"health.dead_retry", c.Health.DeadRetry},
		{"health.forget_after", c.Health.ForgetAfter},
	} {
		k.positiveDur(t.key, t.d)
	}
	// A zero delay is meaningful: hunt at once.
	k.nonNegativeDur("purgatory.user_fetch_delay", pg.UserFetchDelay)
	k.nonNegativeDur("purgatory.sync_fetch_delay", pg.SyncFetchDelay)
	if pg.FetchBackoffBase > pg.FetchBackoffMax {
		k.fail("purgatory.fetch_backoff_base", "%s exceeds fetch_backoff_max %s", pg.FetchBackoffBase, pg.FetchBackoffMax)
	}
	k.positive("health.max_records", c.Health.MaxRecords)
	if c.Health.BaseBackoff > c.Health.MaxBackoff {
		k.fail("health.base_backoff", "%s exceeds max_backoff %s", c.Health.BaseBackoff, c.Health.MaxBackoff)
	}
}

// checkQuotas checks the bounds on what strangers may cost (issue 11).
func (c *Config) checkQuotas(k *checker) {
	pg := c.Purgatory
	for _, q := range []struct {
		key string
		v   int
	}{
		{"purgatory.max_held", pg.MaxHeld},
		{"purgatory.max_held_per_ip", pg.MaxHeldPerIP},
		{"purgatory.max_held_announcements", pg.MaxHeldAnnouncements},
		{"purgatory.max_held_announcements_per_ip", pg.MaxHeldAnnouncementsPerIP},
		{"purgatory.max_held_announcements_per_pubkey", pg.MaxHeldAnnouncementsPerPubkey},
		{"purgatory.max_held_announcements_per_identifier", pg.MaxHeldAnnouncementsPerIdentifier},
		{"purgatory.max_held_per_relay", pg.MaxHeldPerRelay},
		{"purgatory.max_held_announcements_per_relay", pg.MaxHeldAnnouncementsPerRelay},
		{"purgatory.max_placeholders_per_repo", pg.MaxPlaceholdersPerRepo},
		{"purgatory.max_placeholders_per_pubkey", pg.MaxPlaceholdersPerPubkey},
		{"purgatory.max_placeholders_per_ip", pg.MaxPlaceholdersPerIP},
		{"purgatory.max_placeholder_mb_per_repo", pg.MaxPlaceholderMBPerRepo},
		{"purgatory.max_placeholder_mb_per_pubkey", pg.MaxPlaceholderMBPerPubkey},
		{"purgatory.max_placeholder_mb_per_ip", pg.MaxPlaceholderMBPerIP},
		{"server.min_free_mb", c.Server.MinFreeMB},
	} {
		k.nonNegative(q.key, q.v)
	}
	gt := c.Git
	k.positive("git.max_processes", gt.MaxProcesses)
	k.positive("git.max_processes_per_ip", gt.MaxProcessesPerIP)
	k.nonNegative("git.min_body_bytes", gt.MinBodyBytes)
	k.nonNegativeDur("git.queue_wait", gt.QueueWait)
	k.positiveDur("git.body_rate_window", gt.BodyRateWindow)
	k.positiveDur("git.max_push_duration", gt.MaxPushDuration)
	k.positiveDur("git.max_fetch_duration", gt.MaxFetchDuration)
}

func (c *Config) checkSync(k *checker) {
	s := &c.Sync
	for i, r := range s.BootstrapRelays {
		key := fmt.Sprintf("sync.bootstrap_relays[%d]", i)
		norm, err := nip34.NormalizeRelayURL(r)
		if err != nil {
			k.fail(key, "%v", err)
			continue
		}
		s.BootstrapRelays[i] = norm
	}
	k.positiveDur("sync.batch_window", s.BatchWindow)
	k.positive("sync.consolidate_above", s.ConsolidateAbove)
	k.positive("sync.tags_per_filter", s.TagsPerFilter)
	k.positiveDur("sync.quick_reconnect_window", s.QuickReconnectWindow)
	k.positiveDur("sync.daily_min", s.DailyMin)
	k.positiveDur("sync.daily_max", s.DailyMax)
	k.positiveDur("sync.disconnect_check_interval", s.DisconnectCheckInterval)
	k.positiveDur("sync.rate_limit_cooldown", s.RateLimitCooldown)
	k.positive("sync.max_relays_per_repo", s.MaxRelaysPerRepo)
	k.positive("sync.max_relays", s.MaxRelays)
	k.positive("sync.max_held_relays", s.MaxHeldRelays)
	k.positive("sync.outbox_relays_per_participant", s.OutboxRelaysPerParticipant)
	k.positive("sync.outbox_participants_per_root", s.OutboxParticipantsPerRoot)
	k.positive("sync.max_outbox_relays", s.MaxOutboxRelays)
	k.positive("sync.outbox_events_per_relay_per_day", s.OutboxEventsPerRelayPerDay)
	if s.MaxHeldRelays > s.MaxRelays {
		k.fail("sync.max_held_relays", "%d exceeds max_relays %d", s.MaxHeldRelays, s.MaxRelays)
	}
	if s.DailyMin > s.DailyMax {
		k.fail("sync.daily_min", "%s exceeds daily_max %s", s.DailyMin, s.DailyMax)
	}
}

func (c *Config) checkThrottle(k *checker) {
	t := c.Throttle
	k.positive("throttle.concurrent", t.Concurrent)
	k.positive("throttle.per_minute", t.PerMinute)
	k.positive("throttle.max_concurrent", t.MaxConcurrent)
	k.positive("throttle.max_per_minute", t.MaxPerMinute)
	if t.Concurrent > t.MaxConcurrent {
		k.fail("throttle.concurrent", "%d exceeds the hard cap max_concurrent %d", t.Concurrent, t.MaxConcurrent)
	}
	if t.PerMinute > t.MaxPerMinute {
		k.fail("throttle.per_minute", "%d exceeds the hard cap max_per_minute %d", t.PerMinute, t.MaxPerMinute)
	}
	for i, g := range t.Files {
		if _, err := filepath.Match(g, ""); err != nil || strings.TrimSpace(g) == "" {
			k.fail(fmt.Sprintf("throttle.files[%d]", i), "%q is not a valid glob", g)
		}
	}
}

func (c *Config) checkPlugins(k *checker) {
	p := c.Plugins
	k.nonNegative("plugins.pool_size", p.PoolSize)
	k.positive("plugins.max_call_stack", p.MaxCallStack)
	total := 0
	for _, hook := range []string{HookAccept, HookRelaySelection, HookThrottle} {
		list := p.hooks()[hook]
		total += len(list)
		seen := map[string]bool{}
		for i, pl := range list {
			key := fmt.Sprintf("plugins.%s[%d]", hook, i)
			switch {
			case strings.TrimSpace(pl.Name) == "":
				k.fail(key+".name", "required")
			case seen[pl.Name]:
				k.fail(key+".name", "%q is used twice in [[plugins.%s]]", pl.Name, hook)
			}
			seen[pl.Name] = true
			switch {
			case strings.TrimSpace(pl.File) == "":
				k.fail(key+".file", "required")
			case !filepath.IsLocal(pl.File):
				k.fail(key+".file", "%q must be a relative path inside plugins.dir", pl.File)
			}
			k.positiveDur(key+".timeout", pl.Timeout)
			k.oneOf(key+".on_error", pl.OnError, []string{OnErrorReject, OnErrorSkip})
		}
	}
	if total > 0 && strings.TrimSpace(p.Dir) == "" {
		k.fail("plugins.dir", "must not be empty when plugins are configured")
	}
}

func (c *Config) checkMetrics(k *checker) {
	k.listen("metrics.listen", c.Metrics.Listen)
	if !c.Metrics.Enabled {
		return
	}
	sh, sp, err1 := net.SplitHostPort(c.Server.Listen)
	mh, mp, err2 := net.SplitHostPort(c.Metrics.Listen)
	if err1 != nil || err2 != nil || sp != mp || sp == "0" {
		return
	}
	unspecified := func(h string) bool { ip := net.ParseIP(h); return h == "" || ip != nil && ip.IsUnspecified() }
	if sh == mh || unspecified(sh) || unspecified(mh) {
		k.fail("metrics.listen", "%q collides with server.listen %q: metrics must have their own listener", c.Metrics.Listen, c.Server.Listen)
	}
}

// pubkeys checks a list of npub or hex keys and stores each as hex.
func (k *checker) pubkeys(key string, list []string) {
	for i, e := range list {
		hex, err := NormalizePubkey(e)
		if err != nil {
			k.fail(fmt.Sprintf("%s[%d]", key, i), "%v", err)
			continue
		}
		list[i] = hex
	}
}
