package config

import "time"

const day = 24 * time.Hour

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
		},
		Relay: Relay{
			Description: "GRASP server: a Nostr relay and git host for NIP-34 repositories",
			Limits: Limits{
				MaxMessageBytes:         131072,
				MaxEventBytes:           65536,
				MaxContentBytes:         65535, // badger encodes content length in 16 bits
				MaxEventTags:            2000,
				MaxTagValueBytes:        1024,
				CreatedAtLowerLimit:     0, // history is as old as the repository
				CreatedAtUpperLimit:     Duration(15 * time.Minute),
				MaxFiltersPerReq:        200,
				MaxTagsPerFilter:        3,
				MaxSubscriptions:        200,
				MaxSubIDLength:          64,
				MaxLimit:                500,
				DefaultLimit:            500,
				MaxPendingOutboundBytes: 32 << 20,
				NegentropyMaxEvents:     1000000,
				NegentropyMaxSessions:   64,
				NegentropyIdleTimeout:   Duration(time.Minute),
			},
		},
		Store: Store{
			Backend:      "badger",
			MemtableMB:   16,
			BlockCacheMB: 64,
		},
		Grasp: Grasp{
			ArchiveReadOnly: true,
		},
		Purgatory: Purgatory{
			TTL:                   Duration(30 * time.Minute),
			AnnouncementRetention: Duration(day),
			UserFetchDelay:        Duration(3 * time.Minute),
			SyncFetchDelay:        Duration(500 * time.Millisecond),
			FetchBackoffBase:      Duration(20 * time.Second),
			FetchBackoffMax:       Duration(2 * time.Minute),
			NostrRefTTL:           Duration(20 * time.Minute),
			SweepInterval:         Duration(time.Minute),
			HuntInterval:          Duration(time.Second),
			RecheckInterval:       Duration(time.Hour),
			NaughtyTTL:            Duration(12 * time.Hour),
			ExpiredMemory:         Duration(7 * day),
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
		},
		Health: Health{
			BaseBackoff: Duration(5 * time.Second),
			MaxBackoff:  Duration(time.Hour),
			DeadAfter:   Duration(day),
			DeadRetry:   Duration(day),
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
