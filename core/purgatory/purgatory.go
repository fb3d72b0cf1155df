package purgatory

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/nip34"
)

// KV is the durable side table purgatory writes through. Every Put must be
// durable (fsynced) before it returns: an OK true for a held event means the
// entry survives kill -9. store.Side satisfies it. ctx is the caller's
// (the request or ingest that changes purgatory): the PostgreSQL queries
// run on it.
type KV interface {
	Put(ctx context.Context, bucket, key string, val []byte, ttl time.Duration) error
	Delete(ctx context.Context, bucket, key string) error
	Scan(ctx context.Context, bucket string, fn func(key string, val []byte, expires time.Time) error) error
}

const (
	bucketHeld        = "purgatory"
	bucketPlaceholder = "placeholders"
	bucketExpired     = "purgatory-expired"
)

// Entry is one held event.
type Entry struct {
	Event *nostr.Event `json:"event"`
	// Repo is the repository the event waits for: the announcement's own
	// coordinate for announcements, the state's "30617:<author>:<d>" for
	// states, and the referenced repo for PRs and events held with a repo.
	Repo nip34.RepoRef `json:"repo"`
	// Also lists further repos (other maintainers' copies here) whose git
	// data releases the event too.
	Also []nip34.RepoRef `json:"also,omitempty"`
	// Needs are the git objects whose presence releases the event (a state's
	// ref tips, a PR's `c`). Empty for announcements and for events held
	// with a repo: those are released with the repo's first git data.
	Needs []string `json:"needs,omitempty"`
	// WithRepo marks an event (issue, comment, ...) held only because its
	// repo's announcement is itself still in purgatory.
	WithRepo bool `json:"with_repo,omitempty"`
	// AwaitEvent is the id of a held root event (issue, PR) this event is
	// released together with, e.g. a comment on a held PR.
	AwaitEvent string `json:"await_event,omitempty"`
	// Remote is the address of the client that sent the event ("" for
	// events from sync peers and releases): the per-address quotas count it.
	Remote string `json:"remote,omitempty"`
	// Relay is the relay a synced event came from ("" for client
	// events): the per-relay quotas count it (audit F26).
	Relay string `json:"relay,omitempty"`
	// Invited marks an announcement whose author a served announcement of
	// the same identifier names (policy.Decision.Invited): the
	// per-identifier cap neither counts nor refuses it (audit F31).
	Invited bool      `json:"invited,omitempty"`
	Expires time.Time `json:"expires"`
	HeldAt  time.Time `json:"held_at"`
}

// Placeholder is a refs/nostr/<id> ref pushed before its PR event arrived
// (git-first PR flow, grasp.md §7.3). It is deleted after the nostr_ref_ttl
// unless a PR event binds it.
type Placeholder struct {
	Repo    nip34.RepoRef `json:"repo"`
	EventID string        `json:"event_id"`
	Commit  string        `json:"commit"`
	Expires time.Time     `json:"expires"`
	// Remote is the client address that pushed it, Bytes its share of the
	// push's data (PlaceholderQuotas).
	Remote string `json:"remote,omitempty"`
	Bytes  int64  `json:"bytes,omitempty"`
}

// Options configure a Purgatory.
type Options struct {
	KV             KV            // required: where held entries live
	TTL            time.Duration // how long an event waits for git data (30 min)
	PlaceholderTTL time.Duration // nostr_ref_ttl (20 min)
	ExpiredMemory  time.Duration // how long expired ids are remembered (7 days)
	Quotas         Quotas        // what strangers may hold; zero fields are unbounded
	// PlaceholderQuotas bound refs/nostr placeholders; zero fields are
	// unbounded.
	PlaceholderQuotas PlaceholderQuotas
	// PRsQuotas bound what GRASP-06 /prs/ repositories hold on disk;
	// zero fields are unbounded.
	PRsQuotas PRsQuotas
}

// Purgatory holds events whose git data has not arrived. It is an in-memory
// index over a durable KV: every change is written through before it is
// visible, and New rebuilds the index from the KV, so a restart after
// kill -9 holds, expires and releases exactly what it did before.
type Purgatory struct {
	kv   KV
	clk  clock.Clock
	log  hclog.Logger
	opts Options

	// prs counts GRASP-06 /prs/ data (prs_quota.go); its own lock.
	prs *prsLedger

	// pruneMu orders read-modify-writes of the prune schedule (prune.go).
	pruneMu sync.Mutex

	mu   sync.Mutex
	held map[string]*Entry // by event id
	idx  *index            // held, by what the write path asks
	// holding counts the holds whose durable write is in progress (not
	// replacements: those take their predecessor's place), so the quotas
	// count them before they are visible (hold.go).
	holding *index
	// writing are the side-table entries (and addresses) being written
	// (inflight.go): the lock is never held across a durable write.
	writing      inflight
	placeholders map[string]*Placeholder // by placeholderKey
	phUse        *placeholderUse         // placeholders and reservations by scope
	expired      map[string]time.Time    // id -> forget-at
	// releasing are held entries a Release handed out whose caller has
	// not yet called Published: they stay held (durably, and answered by
	// QueryHeld) until the caller has stored them, so neither a crash nor
	// a reader in between finds an acknowledged event in neither place,
	// and no other Release hands them out again meanwhile.
	releasing map[string]bool

	sizeGauge *prometheus.GaugeVec
	events    *prometheus.CounterVec

	// OnHold funcs run after an event is held (durably), OnRemove funcs
	// after a held event left purgatory, with why it left: "released",
	// "replaced", "expired", "evicted" or "deleted". They run on the
	// caller's goroutine, after purgatory's lock is released (they may call
	// back into it), and must be quick. Append to them before the purgatory
	// is used; they are read without a lock.
	OnHold   []func(e Entry)
	OnRemove []func(e Entry, why string)
}

// change is one hook call, collected under the lock and made after it.
type change struct {
	e   Entry
	why string // "" for a hold
}

func (p *Purgatory) notify(cs []change) {
	for _, c := range cs {
		if c.why == "" {
			for _, fn := range p.OnHold {
				fn(c.e)
			}
			continue
		}
		for _, fn := range p.OnRemove {
			fn(c.e, c.why)
		}
	}
}

// New loads the held entries from opts.KV and returns the purgatory; its
// expiry follows e.Clock.
func New(opts Options, e env.Env) (*Purgatory, error) {
	if opts.KV == nil {
		return nil, errors.New("purgatory: Options.KV is required")
	}
	e = e.OrDefaults()
	kv, clk, log, reg := opts.KV, e.Clock, e.Log, e.Metrics
	if opts.TTL <= 0 {
		opts.TTL = 30 * time.Minute
	}
	if opts.PlaceholderTTL <= 0 {
		opts.PlaceholderTTL = 20 * time.Minute
	}
	if opts.ExpiredMemory <= 0 {
		opts.ExpiredMemory = 7 * 24 * time.Hour
	}
	p := &Purgatory{
		kv: kv, clk: clk, log: log, opts: opts,
		held:         map[string]*Entry{},
		releasing:    map[string]bool{},
		idx:          newIndex(),
		holding:      newIndex(),
		writing:      inflight{},
		placeholders: map[string]*Placeholder{},
		phUse:        newPlaceholderUse(),
		prs:          newPRsLedger(),
		expired:      map[string]time.Time{},
		sizeGauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "grasp_purgatory_entries", Help: "Events held in purgatory, by kind.",
		}, []string{"kind"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grasp_purgatory_events_total", Help: "Purgatory transitions: held, replaced, released, expired, deleted, evicted.",
		}, []string{"what", "kind"}),
	}
	if err := reg.Register(p.sizeGauge); err != nil {
		return nil, fmt.Errorf("register purgatory metrics: %w", err)
	}
	if err := reg.Register(p.events); err != nil {
		return nil, fmt.Errorf("register purgatory metrics: %w", err)
	}
	for _, c := range p.prsGauges() {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register purgatory metrics: %w", err)
		}
	}
	// Start-up, before anything is served: no caller to cancel it.
	if err := p.load(context.Background()); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *Purgatory) refreshGauge() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refreshGaugeLocked()
}

func (p *Purgatory) refreshGaugeLocked() {
	for _, k := range []string{"30617", "30618", "1618", "1619", "other"} {
		p.sizeGauge.WithLabelValues(k).Set(float64(p.idx.kinds[k]))
	}
}

func kindLabel(k int) string {
	switch k {
	case 30617, 30618, 1618, 1619:
		return fmt.Sprint(k)
	}
	return "other"
}

func isAddressable(kind int) bool { return kind >= 30000 && kind < 40000 }

func address(e *nostr.Event) string {
	return fmt.Sprintf("%d:%s:%s", e.Kind, e.PubKey, e.Tags.GetD())
}

// newer reports whether a should win over b as the same replaceable event
// (nip34.Later, the one ordering).
func newer(a, b *nostr.Event) bool { return nip34.LaterEvent(a, b) }

func events(es []Entry) []*nostr.Event {
	out := make([]*nostr.Event, len(es))
	for i := range es {
		out[i] = es[i].Event
	}
	return out
}
