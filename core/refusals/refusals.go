// Package refusals owns the operator log's account of refused clients: what
// the relay, the websocket gate and the git host turned away, per client key
// (core/clientip's, the address or network every per-IP limit counts) and per
// minute. A refusal is counted here and told in one line per client per
// minute with its counts by reason ("refused in the last minute"), so a flood
// of refusals is a line, not a flood of lines. Refusals worth a line of their
// own (a refused announcement, a refused push) get one while the client's
// budget for the minute lasts (Detail); past it they are only counted.
//
// It never refuses anything itself and decides no limit: callers count what
// they refused. What it holds is bounded: MaxClients clients a minute, the
// rest summed in one line.
package refusals

import (
	"sort"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/grasp-dev/grasp/core/env"
)

// The reasons, the keys of the per-minute line (docs/operations.md, Logs).
const (
	// Connections: a websocket upgrade answered 429, the relay's total
	// relay.limits.max_connections reached.
	Connections = "connections"
	// ConnectionsIP: a websocket upgrade answered 429,
	// relay.limits.max_connections_per_ip reached.
	ConnectionsIP = "connections_ip"
	// BlockedAddress: a request answered 403, the address is blocked by
	// NIP-86 blockip.
	BlockedAddress = "blocked_address"
	// GitBusy: a git request refused, every git process slot taken
	// (git.max_processes, after git.queue_wait).
	GitBusy = "git_busy"
	// GitBusyIP: a git request answered 429, git.max_processes_per_ip.
	GitBusyIP = "git_busy_ip"
	// EventRateLimited: an EVENT answered OK false "rate-limited:" (a
	// purgatory quota, a plugin's rate limit).
	EventRateLimited = "event_rate_limited"
	// AnnouncementRefused: an announcement answered OK false for another
	// reason.
	AnnouncementRefused = "announcement_refused"
	// PushRefused: a git push refused (authorisation, read-only archive,
	// disk, the push gate).
	PushRefused = "push_refused"
	// PushRateLimited: a git push refused by the placeholder quotas.
	PushRateLimited = "push_rate_limited"
)

// Defaults of Options.
const (
	DefaultMaxClients = 1000
	DefaultDetailed   = 5
)

// Options bounds the account.
type Options struct {
	// MaxClients is how many clients a minute get a line of their own;
	// the refusals of further clients are summed in one line. 0:
	// DefaultMaxClients.
	MaxClients int
	// Detailed is how many refusals of one client a minute Detail lets
	// have a line of their own. 0: DefaultDetailed.
	Detailed int
}

// Log counts refusals until Flush writes them. A nil *Log counts nothing
// and lets every refusal have its own line.
type Log struct {
	opts Options
	log  hclog.Logger

	mu      sync.Mutex
	clients map[string]*tally
	over    tally // the refusals of clients beyond MaxClients
}

type tally struct {
	by    map[string]int
	total int
	own   int // refusals that had a line of their own
}

func (t *tally) add(reason string) {
	if t.by == nil {
		t.by = map[string]int{}
	}
	t.by[reason]++
	t.total++
}

// New returns an empty account writing to e's logger.
func New(opts Options, e env.Env) *Log {
	e = e.OrDefaults()
	if opts.MaxClients <= 0 {
		opts.MaxClients = DefaultMaxClients
	}
	if opts.Detailed <= 0 {
		opts.Detailed = DefaultDetailed
	}
	return &Log{opts: opts, log: e.Log, clients: map[string]*tally{}}
}

// Count notes that client was refused for reason; the refusal gets no line
// of its own.
func (l *Log) Count(client, reason string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	t, _ := l.tallyOf(client)
	t.add(reason)
}

// Detail notes that client was refused for reason and reports whether the
// caller may write a line of its own for it: true for the client's first
// Options.Detailed refusals of the minute, false past them (and for clients
// past MaxClients). The count is in the minute's line either way.
func (l *Log) Detail(client, reason string) bool {
	if l == nil {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	t, fits := l.tallyOf(client)
	t.add(reason)
	if !fits || t.own >= l.opts.Detailed {
		return false
	}
	t.own++
	return true
}

// tallyOf is client's tally, a new one while fewer than MaxClients have
// one; else the tally of the clients that did not fit, and fits false.
// l.mu is held.
func (l *Log) tallyOf(client string) (t *tally, fits bool) {
	if t, ok := l.clients[client]; ok {
		return t, true
	}
	if len(l.clients) < l.opts.MaxClients {
		t := &tally{}
		l.clients[client] = t
		return t, true
	}
	return &l.over, false
}

// Flush writes the lines of what was counted since the last Flush and
// forgets it: one info line per client with a refusal that had no line of
// its own ("refused in the last minute": client, total, own_lines and the
// count of each reason), and one for the clients that did not fit. The
// server calls it every minute.
func (l *Log) Flush() {
	if l == nil {
		return
	}
	l.mu.Lock()
	clients, over := l.clients, l.over
	l.clients, l.over = map[string]*tally{}, tally{}
	l.mu.Unlock()

	keys := make([]string, 0, len(clients))
	for k, t := range clients {
		if t.total > t.own {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		t := clients[k]
		l.log.Info("refused in the last minute", append([]any{"remote", k, "total", t.total, "own_lines", t.own}, byReason(t.by)...)...)
	}
	if over.total > 0 {
		l.log.Info("refused in the last minute, clients beyond the per-minute list", append([]any{"max_clients", l.opts.MaxClients, "total", over.total}, byReason(over.by)...)...)
	}
}

// byReason is the reason=count pairs of by, in name order.
func byReason(by map[string]int) []any {
	rs := make([]string, 0, len(by))
	for r := range by {
		rs = append(rs, r)
	}
	sort.Strings(rs)
	out := make([]any, 0, 2*len(rs))
	for _, r := range rs {
		out = append(out, r, by[r])
	}
	return out
}
