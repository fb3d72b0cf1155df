package purgatory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
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

	mu           sync.Mutex
	held         map[string]*Entry       // by event id
	idx          *index                  // held, by what the write path asks
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

func (p *Purgatory) load(ctx context.Context) error {
	err := p.kv.Scan(ctx, bucketHeld, func(key string, val []byte, _ time.Time) error {
		var e Entry
		if err := json.Unmarshal(val, &e); err != nil || e.Event == nil {
			p.log.Warn("dropping unreadable purgatory entry", "id", key, "error", err)
			return nil
		}
		p.held[key] = &e
		return nil
	})
	if err != nil {
		return fmt.Errorf("load purgatory: %w", err)
	}
	// A crash between holding a replacement and dropping what it replaced
	// leaves both: keep the one that wins.
	for _, e := range p.held {
		if isAddressable(e.Event.Kind) {
			if old, ok := p.idx.byAddr[address(e.Event)]; ok {
				loser := e
				if newer(e.Event, old.Event) {
					loser = old
					p.idx.remove(old)
					p.idx.add(e)
				}
				delete(p.held, loser.Event.ID)
				if err := p.kv.Delete(ctx, bucketHeld, loser.Event.ID); err != nil {
					return fmt.Errorf("load purgatory: drop replaced %s: %w", loser.Event.ID, err)
				}
				continue
			}
		}
		p.idx.add(e)
	}
	err = p.kv.Scan(ctx, bucketPlaceholder, func(key string, val []byte, _ time.Time) error {
		var ph Placeholder
		if err := json.Unmarshal(val, &ph); err != nil {
			p.log.Warn("dropping unreadable placeholder", "id", key, "error", err)
			return nil
		}
		p.putPlaceholderLocked(key, &ph)
		return nil
	})
	if err != nil {
		return fmt.Errorf("load placeholders: %w", err)
	}
	err = p.kv.Scan(ctx, bucketExpired, func(key string, val []byte, _ time.Time) error {
		var at time.Time
		if err := at.UnmarshalText(val); err == nil {
			p.expired[key] = at
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("load expired ids: %w", err)
	}
	if err := p.loadPRs(ctx); err != nil {
		return fmt.Errorf("load /prs/ records: %w", err)
	}
	p.log.Info("purgatory loaded", "held", len(p.held), "placeholders", len(p.placeholders))
	p.refreshGauge()
	return nil
}

// ErrDuplicate is returned by Hold for an event already held.
var ErrDuplicate = errors.New("purgatory: event already held")

// Hold stores e durably. A held event with the same id answers ErrDuplicate.
// A held announcement (or state) with the same address and author is
// replaced when e is newer, and the replacement gets a fresh TTL; an older
// replaceable event than the one held is refused as a duplicate.
func (p *Purgatory) Hold(ctx context.Context, e Entry) error {
	if e.Event == nil {
		return errors.New("purgatory: nil event")
	}
	now := p.clk.Now()
	e.HeldAt = now
	e.Expires = now.Add(p.opts.TTL)

	cs, err := p.hold(ctx, e)
	p.notify(cs)
	return err
}

func (p *Purgatory) hold(ctx context.Context, e Entry) ([]change, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.held[e.Event.ID]; ok {
		return nil, ErrDuplicate
	}
	var replaced []*Entry
	if isAddressable(e.Event.Kind) {
		if old, ok := p.idx.byAddr[address(e.Event)]; ok {
			if newer(old.Event, e.Event) {
				return nil, ErrDuplicate
			}
			replaced = append(replaced, old)
		}
	}
	if len(replaced) == 0 {
		// A replacement takes its predecessor's place: it costs nothing new.
		if err := p.admit(&e); err != nil {
			return nil, err
		}
	}
	if err := p.put(ctx, &e); err != nil {
		return nil, err
	}
	cs := []change{{e: e}}
	for _, old := range replaced {
		if err := p.kv.Delete(ctx, bucketHeld, old.Event.ID); err != nil {
			return cs, fmt.Errorf("purgatory: drop replaced %s: %w", old.Event.ID, err)
		}
		delete(p.held, old.Event.ID)
		p.idx.remove(old)
		p.events.WithLabelValues("replaced", kindLabel(old.Event.Kind)).Inc()
		cs = append(cs, change{e: *old, why: "replaced"})
	}
	p.events.WithLabelValues("held", kindLabel(e.Event.Kind)).Inc()
	p.refreshGaugeLocked()
	return cs, nil
}

func (p *Purgatory) put(ctx context.Context, e *Entry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("purgatory: encode %s: %w", e.Event.ID, err)
	}
	// The KV TTL is only a safety net for entries a crashed sweep left
	// behind; expiry itself follows e.Expires on the injected clock.
	if err := p.kv.Put(ctx, bucketHeld, e.Event.ID, b, 0); err != nil {
		return fmt.Errorf("purgatory: persist %s: %w", e.Event.ID, err)
	}
	p.held[e.Event.ID] = e
	p.idx.add(e)
	return nil
}

// Get returns the held event with id.
func (p *Purgatory) Get(id string) (Entry, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.held[id]
	if !ok {
		return Entry{}, false
	}
	return *e, true
}

// Find returns the held entries that match keep, oldest first. It looks at
// every held entry: for start-up and periodic work, never per event.
func (p *Purgatory) Find(keep func(e *Entry) bool) []Entry {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Entry
	for _, e := range p.held {
		if keep(e) {
			out = append(out, *e)
		}
	}
	oldestFirst(out)
	return out
}

// QueryHeld returns the held events that match f (ids, authors, kinds, tag
// filters; the read side of purgatory the GRASP rules see, policy.Held),
// oldest first. Filters with ids, with kinds and a `d` tag, or with authors
// are answered from the index.
func (p *Purgatory) QueryHeld(_ context.Context, f nostr.Filter) ([]*nostr.Event, error) {
	p.mu.Lock()
	cands, ok := p.idx.candidates(p.held, f)
	if !ok {
		p.mu.Unlock()
		return events(p.Find(func(e *Entry) bool { return f.Matches(e.Event) })), nil
	}
	var out []Entry
	for _, e := range cands {
		if f.Matches(e.Event) {
			out = append(out, *e)
		}
	}
	p.mu.Unlock()
	oldestFirst(out)
	return events(out), nil
}

// byKindD returns the held events of kind with identifier d, oldest first.
func (p *Purgatory) byKindD(kind int, d string) []Entry {
	p.mu.Lock()
	var out []Entry
	for _, e := range p.idx.byKindD[kindD{kind, d}] {
		if e.Repo.Identifier == d {
			out = append(out, *e)
		}
	}
	p.mu.Unlock()
	oldestFirst(out)
	return out
}

// Announcements returns the held announcements with identifier d.
func (p *Purgatory) Announcements(d string) []*nostr.Event {
	return events(p.byKindD(30617, d))
}

// States returns the held repo states with identifier d.
func (p *Purgatory) States(d string) []*nostr.Event {
	return events(p.byKindD(30618, d))
}

// HeldAnnouncements returns the held announcement entries of repo (one, or
// none).
func (p *Purgatory) HeldAnnouncements(r nip34.RepoRef) []Entry {
	var out []Entry
	for _, e := range p.byKindD(30617, r.Identifier) {
		if e.Repo == r && !e.WithRepo {
			out = append(out, e)
		}
	}
	return out
}

// WaitingFor returns up to max of the entries whose release waits for
// repo's git data (Repo or Also), oldest first, and how many there are:
// the read the repository's page shows (issue 26 part 5). It looks only at
// the entries of repo's identifier.
func (p *Purgatory) WaitingFor(r nip34.RepoRef, max int) ([]Entry, int) {
	p.mu.Lock()
	var out []Entry
	for _, e := range p.idx.byRepoD[r.Identifier] {
		if e.waitsOn(r) {
			out = append(out, *e)
		}
	}
	p.mu.Unlock()
	oldestFirst(out)
	return out[:min(len(out), max)], len(out)
}

// HasAnnouncement reports whether the announcement of repo is held.
func (p *Purgatory) HasAnnouncement(r nip34.RepoRef) bool {
	for _, e := range p.byKindD(30617, r.Identifier) {
		if e.Repo == r {
			return true
		}
	}
	return false
}

// Remove drops a held event (it was released through another path, or
// superseded). It reports whether anything was held.
func (p *Purgatory) Remove(ctx context.Context, id, why string) (bool, error) {
	var cs []change
	p.mu.Lock()
	ok, err := p.removeLocked(ctx, id, why, &cs)
	p.mu.Unlock()
	p.notify(cs)
	return ok, err
}

// removeLocked drops a held event and records the hook call in cs.
func (p *Purgatory) removeLocked(ctx context.Context, id, why string, cs *[]change) (bool, error) {
	e, ok := p.held[id]
	if !ok {
		return false, nil
	}
	if err := p.kv.Delete(ctx, bucketHeld, id); err != nil {
		return false, fmt.Errorf("purgatory: remove %s: %w", id, err)
	}
	delete(p.held, id)
	p.idx.remove(e)
	p.events.WithLabelValues(why, kindLabel(e.Event.Kind)).Inc()
	p.refreshGaugeLocked()
	*cs = append(*cs, change{e: *e, why: why})
	return true, nil
}

// Release returns, in publishing order, the events that the
// arrival of git data in repo makes servable:
//   - the repo's own held announcement and every event held with it,
//   - held states for the repo's identifier, and PRs referencing the repo,
//     whose needed objects all satisfy has.
//
// The caller publishes what it gets back, then passes it to Published,
// which takes it out of purgatory: until then the events stay held, so an
// acknowledged event is always in purgatory or in the store (a crash in
// between releases it again at start; storing it twice is a duplicate).
// has reports whether every oid is
// present in the repo; repoHasData says whether the repo has any branch or
// tag yet (an announcement is released by git data, not by an empty repo).
func (p *Purgatory) Release(r nip34.RepoRef, repoHasData bool, has func(oids []string) bool) ([]*nostr.Event, error) {
	var cs []change
	p.mu.Lock()
	evs, err := p.release(r, repoHasData, has, &cs)
	p.mu.Unlock()
	p.notify(cs)
	return evs, err
}

func (p *Purgatory) release(r nip34.RepoRef, repoHasData bool, has func(oids []string) bool, cs *[]change) ([]*nostr.Event, error) {
	// Only entries indexed under r's identifier can be released by r.
	cands := p.idx.byRepoD[r.Identifier]
	var out []*Entry
	// A state whose objects are all present brings the repo its first
	// refs (the caller aligns to it), so it counts as data for the
	// announcement: both go out together, announcement first.
	for _, e := range cands {
		if e.Event.Kind == 30618 && e.Repo.Identifier == r.Identifier {
			if (len(e.Needs) > 0 && has(e.Needs)) || (len(e.Needs) == 0 && repoHasData) {
				out = append(out, e)
				repoHasData = true
			}
		}
	}
	annHeld := false
	for _, e := range cands {
		if e.Event.Kind == 30617 && !e.WithRepo && e.Repo == r {
			annHeld = true
		}
	}
	annHeld = annHeld && repoHasData
	for _, e := range cands {
		switch {
		case e.Event.Kind == 30618:
			// decided above
		case e.Event.Kind == 30617 && !e.WithRepo:
			if e.Repo == r && repoHasData {
				out = append(out, e)
			}
		case e.AwaitEvent != "":
			// released with the event it waits for, below
		case e.WithRepo:
			if e.Repo == r && annHeld {
				out = append(out, e)
			}
		default:
			if e.waitsOn(r) && len(e.Needs) > 0 && has(e.Needs) {
				out = append(out, e)
			}
		}
	}
	// events waiting for a released event go with it, transitively
	released := map[string]bool{}
	for _, e := range out {
		released[e.Event.ID] = true
	}
	for i := 0; i < len(out); i++ {
		for _, e := range p.idx.byAwait[out[i].Event.ID] {
			if !released[e.Event.ID] {
				released[e.Event.ID] = true
				out = append(out, e)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return releaseOrder(out[i]) < releaseOrder(out[j]) })
	evs := make([]*nostr.Event, 0, len(out))
	for _, e := range out {
		if p.releasing[e.Event.ID] {
			continue // another release is publishing it
		}
		p.releasing[e.Event.ID] = true
		evs = append(evs, e.Event)
	}
	return evs, nil
}

// Published ends the release of events Release handed out: the caller
// has stored each (or dropped it on re-check), and now they leave
// purgatory, with why "released".
func (p *Purgatory) Published(ctx context.Context, evs []*nostr.Event) error {
	var cs []change
	var first error
	p.mu.Lock()
	for _, evt := range evs {
		delete(p.releasing, evt.ID)
		if _, err := p.removeLocked(ctx, evt.ID, "released", &cs); err != nil && first == nil {
			first = err
		}
	}
	p.mu.Unlock()
	p.notify(cs)
	return first
}

func (e *Entry) waitsOn(r nip34.RepoRef) bool {
	if e.Repo == r {
		return true
	}
	for _, a := range e.Also {
		if a == r {
			return true
		}
	}
	return false
}

// releaseOrder publishes announcements before states before everything else,
// oldest first within a group, so subscribers see a repo before its content.
func releaseOrder(e *Entry) int64 {
	group := int64(2)
	if e.AwaitEvent != "" {
		group = 3
	}
	switch e.Event.Kind {
	case 30617:
		group = 0
	case 30618:
		group = 1
	}
	return group<<40 | int64(e.Event.CreatedAt)&(1<<40-1)
}

// DeleteRequested applies a NIP-09 deletion by author: held events with one
// of ids, or at one of addrs ("<kind>:<pubkey>:<d>") with created_at not
// after the deletion, are dropped. Entries of other authors are untouched.
// It returns the removed entries.
func (p *Purgatory) DeleteRequested(ctx context.Context, author string, ids, addrs []string, at time.Time) ([]Entry, error) {
	idset := map[string]bool{}
	for _, id := range ids {
		idset[id] = true
	}
	addrset := map[string]bool{}
	for _, a := range addrs {
		addrset[a] = true
	}
	var cs []change
	p.mu.Lock()
	defer func() { p.notify(cs) }()
	defer p.mu.Unlock()
	var out []Entry
	for id, e := range p.idx.byAuthor[author] {
		hit := idset[id]
		if !hit && isAddressable(e.Event.Kind) && addrset[address(e.Event)] && !e.Event.CreatedAt.Time().After(at) {
			hit = true
		}
		if hit {
			if _, err := p.removeLocked(ctx, id, "deleted", &cs); err != nil {
				return out, err
			}
			out = append(out, *e)
		}
	}
	return out, nil
}

// Sweep drops entries whose TTL has passed and placeholders whose TTL has
// passed, and forgets old expired ids. Expired event ids are remembered for
// ExpiredMemory so a sync peer cannot feed the same dataless event back.
func (p *Purgatory) Sweep(ctx context.Context) (expired []Entry, placeholders []Placeholder, err error) {
	now := p.clk.Now()
	var cs []change
	p.mu.Lock()
	defer func() { p.notify(cs) }()
	defer p.mu.Unlock()
	for id, e := range p.held {
		if now.Before(e.Expires) {
			continue
		}
		if _, err := p.removeLocked(ctx, id, "expired", &cs); err != nil {
			return expired, placeholders, err
		}
		forget := now.Add(p.opts.ExpiredMemory)
		b, _ := forget.MarshalText()
		if err := p.kv.Put(ctx, bucketExpired, id, b, 0); err != nil {
			return expired, placeholders, fmt.Errorf("purgatory: remember expired %s: %w", id, err)
		}
		p.expired[id] = forget
		expired = append(expired, *e)
	}
	for id, ph := range p.placeholders {
		if now.Before(ph.Expires) {
			continue
		}
		if err := p.kv.Delete(ctx, bucketPlaceholder, id); err != nil {
			return expired, placeholders, fmt.Errorf("purgatory: drop placeholder %s: %w", id, err)
		}
		p.dropPlaceholderLocked(id)
		placeholders = append(placeholders, *ph)
	}
	for id, at := range p.expired {
		if !now.Before(at) {
			if err := p.kv.Delete(ctx, bucketExpired, id); err != nil {
				return expired, placeholders, fmt.Errorf("purgatory: forget expired %s: %w", id, err)
			}
			delete(p.expired, id)
		}
	}
	return expired, placeholders, nil
}

// Expired reports whether id expired from purgatory without its git data
// within the remembered window.
func (p *Purgatory) Expired(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.expired[id]
	return ok
}

// AddPlaceholder records a refs/nostr/<id> ref pushed with no PR event yet
// (ph.Repo, EventID, Commit, and Remote and Bytes for the quotas); it
// expires after PlaceholderTTL. A placeholder pushed again replaces the
// old one.
func (p *Purgatory) AddPlaceholder(ctx context.Context, ph Placeholder) error {
	ph.Expires = p.clk.Now().Add(p.opts.PlaceholderTTL)
	b, err := json.Marshal(&ph)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	key := placeholderKey(ph.Repo, ph.EventID)
	if err := p.kv.Put(ctx, bucketPlaceholder, key, b, 0); err != nil {
		return fmt.Errorf("purgatory: persist placeholder %s: %w", ph.EventID, err)
	}
	p.putPlaceholderLocked(key, &ph)
	return nil
}

// putPlaceholderLocked and dropPlaceholderLocked keep placeholders and
// their quota counts in step.
func (p *Purgatory) putPlaceholderLocked(key string, ph *Placeholder) {
	p.dropPlaceholderLocked(key)
	p.placeholders[key] = ph
	p.phUse.add(ph.Repo, ph.Remote, 1, ph.Bytes)
}

func (p *Purgatory) dropPlaceholderLocked(key string) {
	if old, ok := p.placeholders[key]; ok {
		p.phUse.add(old.Repo, old.Remote, -1, -old.Bytes)
		delete(p.placeholders, key)
	}
}

// TakePlaceholders removes and returns the placeholders for eventID (one per
// repo it was pushed to): a PR event has arrived and binds or deletes them.
func (p *Purgatory) TakePlaceholders(ctx context.Context, eventID string) ([]Placeholder, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Placeholder
	for key, ph := range p.placeholders {
		if ph.EventID != eventID {
			continue
		}
		if err := p.kv.Delete(ctx, bucketPlaceholder, key); err != nil {
			return out, fmt.Errorf("purgatory: take placeholder %s: %w", eventID, err)
		}
		p.dropPlaceholderLocked(key)
		out = append(out, *ph)
	}
	return out, nil
}

// Len is the number of held events.
func (p *Purgatory) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.held)
}

// Placeholders counts the refs/nostr/<id> refs waiting for their PR event.
func (p *Purgatory) Placeholders() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.placeholders)
}

func placeholderKey(r nip34.RepoRef, id string) string {
	if r.PRs {
		return "prs/" + r.Pubkey + "/" + r.Identifier + "/" + id
	}
	return r.Pubkey + "/" + r.Identifier + "/" + id
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

// Getter is what Reload needs of the KV beyond Put/Delete/Scan; store.Side
// has it.
type Getter interface {
	Get(ctx context.Context, bucket, key string) ([]byte, bool, error)
}

// Reload brings one entry of the index in line with the KV, after another
// grasp instance sharing the KV (the postgres store) changed it: an entry
// held there is held here (OnHold runs), one released there leaves here
// (OnRemove runs with why "elsewhere"), placeholders and expired ids
// follow. It reads under purgatory's lock, so it never undoes a local
// change made meanwhile; a change this instance made itself is a no-op.
// It returns the entry when the reload newly held one.
func (p *Purgatory) Reload(ctx context.Context, bucket, key string) (*Entry, error) {
	g, ok := p.kv.(Getter)
	if !ok {
		return nil, errors.New("purgatory: Reload needs a KV with Get")
	}
	if bucket == bucketPRs {
		return nil, p.reloadPRs(ctx, g, key)
	}
	var cs []change
	p.mu.Lock()
	err := p.reloadLocked(ctx, g, bucket, key, &cs)
	p.mu.Unlock()
	p.notify(cs)
	for _, c := range cs {
		if c.why == "" {
			e := c.e
			return &e, err
		}
	}
	return nil, err
}

func (p *Purgatory) reloadLocked(ctx context.Context, g Getter, bucket, key string, cs *[]change) error {
	switch bucket {
	case bucketHeld, bucketPlaceholder, bucketExpired:
	default:
		return nil
	}
	val, ok, err := g.Get(ctx, bucket, key)
	if err != nil {
		return fmt.Errorf("purgatory: reload %s/%s: %w", bucket, key, err)
	}
	switch bucket {
	case bucketHeld:
		old, had := p.held[key]
		if !ok {
			if had {
				delete(p.held, key)
				p.idx.remove(old)
				p.refreshGaugeLocked()
				*cs = append(*cs, change{e: *old, why: "elsewhere"})
			}
			return nil
		}
		var e Entry
		if err := json.Unmarshal(val, &e); err != nil || e.Event == nil {
			return fmt.Errorf("purgatory: reload %s: unreadable entry: %v", key, err)
		}
		if had {
			p.idx.remove(old)
		}
		p.held[key] = &e
		p.idx.add(&e)
		p.refreshGaugeLocked()
		if !had {
			*cs = append(*cs, change{e: e})
		}
	case bucketPlaceholder:
		if !ok {
			p.dropPlaceholderLocked(key)
			return nil
		}
		var ph Placeholder
		if err := json.Unmarshal(val, &ph); err != nil {
			return fmt.Errorf("purgatory: reload placeholder %s: %w", key, err)
		}
		p.putPlaceholderLocked(key, &ph)
	case bucketExpired:
		if !ok {
			delete(p.expired, key)
			return nil
		}
		var at time.Time
		if err := at.UnmarshalText(val); err == nil {
			p.expired[key] = at
		}
	}
	return nil
}

// Resync reloads every entry from the KV, after notifications of another
// instance's changes may have been lost.
func (p *Purgatory) Resync(ctx context.Context) error {
	if _, ok := p.kv.(Getter); !ok {
		return errors.New("purgatory: Resync needs a KV with Get")
	}
	keys := map[string][]string{}
	for _, b := range []string{bucketHeld, bucketPlaceholder, bucketExpired, bucketPRs} {
		if err := p.kv.Scan(ctx, b, func(key string, _ []byte, _ time.Time) error {
			keys[b] = append(keys[b], key)
			return nil
		}); err != nil {
			return fmt.Errorf("purgatory: resync: %w", err)
		}
	}
	p.mu.Lock()
	for id := range p.held {
		keys[bucketHeld] = append(keys[bucketHeld], id)
	}
	for k := range p.placeholders {
		keys[bucketPlaceholder] = append(keys[bucketPlaceholder], k)
	}
	for k := range p.expired {
		keys[bucketExpired] = append(keys[bucketExpired], k)
	}
	p.mu.Unlock()
	p.prs.mu.Lock()
	for k := range p.prs.records {
		keys[bucketPRs] = append(keys[bucketPRs], k)
	}
	p.prs.mu.Unlock()
	for b, ks := range keys {
		for _, k := range ks {
			if _, err := p.Reload(ctx, b, k); err != nil {
				return err
			}
		}
	}
	return nil
}
