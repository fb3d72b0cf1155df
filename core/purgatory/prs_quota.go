package purgatory

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/nip34"
)

// bucketPRs holds one record per GRASP-06 /prs/ repository: the bytes
// pushed into it, by client address, who created it and when it was last
// used (prs_quota.go).
const bucketPRs = "prs-data"

// PRsQuotas bound what GRASP-06 /prs/ repositories may hold on disk (audit
// 2026-11b, F20: a served PR's data counted toward nothing, so one client
// with throwaway keys stored any amount). Bytes are what pushes into them
// brought; repositories count the /prs/ repositories. Both are counted per
// client address (the repositories it created, the bytes it pushed), per
// npub of the path (the PR's signer) and in total, whether or not the
// PR event is known, and freed only when the repository is removed: never
// when its PR event arrives or is served. Zero fields are unbounded; the
// defaults, with their reasons, are config's ([grasp] prs_max_*).
type PRsQuotas struct {
	Bytes, BytesPerRemote, BytesPerPubkey int64
	Repos, ReposPerRemote, ReposPerPubkey int
}

// PRsData is the record of one /prs/ repository.
type PRsData struct {
	Repo nip34.RepoRef `json:"repo"`
	// Creator is the client address whose push created the repository
	// ("" when unknown: a repository found on disk at start-up).
	Creator string `json:"creator,omitempty"`
	// Bytes are what pushes brought, by client address.
	Bytes map[string]int64 `json:"bytes"`
	// Created is when the repository was first charged, Active the last
	// push or PR event that used it: its data expires prs_ttl after Active
	// unless it is merged or referenced (core/hosting).
	Created time.Time `json:"created"`
	Active  time.Time `json:"active"`
}

// Total is every byte charged to the repository.
func (d PRsData) Total() int64 {
	var n int64
	for _, b := range d.Bytes {
		n += b
	}
	return n
}

// prsUse counts /prs/ data by scope: records and reservations in flight.
// Only touched under prsLedger.mu.
type prsUse struct {
	remote, pubkey map[string]use // n: repositories, bytes
	total          use
}

func (u *prsUse) add(pubkey, creator string, repos int, bytesBy map[string]int64) {
	var all int64
	for remote, b := range bytesBy {
		bumpUse(u.remote, remote, 0, b)
		all += b
	}
	bumpUse(u.remote, creator, repos, 0)
	bumpUse(u.pubkey, pubkey, repos, all)
	u.total.n += repos
	u.total.bytes += all
}

// prsLedger is the in-memory index over bucketPRs.
type prsLedger struct {
	mu      sync.Mutex
	records map[string]*PRsData // by pruneKey
	use     prsUse
	// inflight are new repositories reserved by pushes in progress, by
	// key: a second concurrent push into one new repository is not a
	// second repository.
	inflight map[string]int
	// writing are the records being written (inflight.go): mu is never
	// held across a durable write.
	writing inflight
}

func newPRsLedger() *prsLedger {
	return &prsLedger{
		records:  map[string]*PRsData{},
		use:      prsUse{remote: map[string]use{}, pubkey: map[string]use{}},
		inflight: map[string]int{},
		writing:  inflight{},
	}
}

// putLocked and dropLocked keep the records and the counts in step.
func (l *prsLedger) putLocked(key string, d *PRsData) {
	l.dropLocked(key)
	l.records[key] = d
	l.use.add(d.Repo.Pubkey, d.Creator, 1, d.Bytes)
}

func (l *prsLedger) dropLocked(key string) {
	old, ok := l.records[key]
	if !ok {
		return
	}
	neg := make(map[string]int64, len(old.Bytes))
	for r, b := range old.Bytes {
		neg[r] = -b
	}
	l.use.add(old.Repo.Pubkey, old.Creator, -1, neg)
	delete(l.records, key)
}

// over says why a push from remote into r, bringing b more bytes (and one
// more repository when newRepo), would pass a bound, "" when it fits.
func (l *prsLedger) over(q PRsQuotas, r nip34.RepoRef, remote string, newRepo bool, b int64) string {
	repos := 0
	if newRepo {
		repos = 1
	}
	npub := "/prs/" + nip34.Npub(r.Pubkey) + "/"
	for _, s := range []struct {
		skip     bool
		cur      use
		maxN     int
		maxBytes int64
		what     string
	}{
		{remote == "", l.use.remote[remote], q.ReposPerRemote, q.BytesPerRemote, "pushed from your address"},
		{false, l.use.pubkey[r.Pubkey], q.ReposPerPubkey, q.BytesPerPubkey, "under " + npub},
		{false, l.use.total, q.Repos, q.Bytes, "on this server in all"},
	} {
		if s.skip {
			continue
		}
		if repos > 0 && s.maxN > 0 && s.cur.n+repos > s.maxN {
			return fmt.Sprintf("rate-limited: %d GRASP-06 /prs/ repositories are already stored %s (limit %d); PR data not merged or used is removed after a while, try again later", s.cur.n, s.what, s.maxN)
		}
		if s.maxBytes > 0 && s.cur.bytes+b > s.maxBytes {
			return fmt.Sprintf("rate-limited: GRASP-06 /prs/ data %s may take %s, and %s are counted, pushes in progress included; PR data not merged or used is removed after a while, try again later", s.what, mibText(s.maxBytes), mibText(s.cur.bytes))
		}
	}
	return ""
}

// mibText is n bytes in MiB for a refusal.
func mibText(n int64) string {
	if n > 0 && n < 1<<20 {
		return "less than 1 MiB"
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

// prsGauges are the /prs/ totals the quotas count, records and pushes in
// progress: grasp_prs_stored_repos and grasp_prs_stored_bytes.
func (p *Purgatory) prsGauges() []prometheus.Collector {
	total := func() use {
		p.prs.mu.Lock()
		defer p.prs.mu.Unlock()
		return p.prs.use.total
	}
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "grasp_prs_stored_repos", Help: "GRASP-06 /prs/ repositories counted by the /prs/ quotas (on disk and being created).",
		}, func() float64 { return float64(total().n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "grasp_prs_stored_bytes", Help: "Bytes pushed into GRASP-06 /prs/ repositories counted by the /prs/ quotas, freed when a repository is removed.",
		}, func() float64 { return float64(total().bytes) }),
	}
}

func (p *Purgatory) loadPRs(ctx context.Context) error {
	l := p.prs
	l.mu.Lock()
	defer l.mu.Unlock()
	return p.kv.Scan(ctx, bucketPRs, func(key string, val []byte, _ time.Time) error {
		var d PRsData
		if err := json.Unmarshal(val, &d); err != nil || !d.Repo.PRs {
			p.log.Warn("dropping unreadable /prs/ record", "key", key, "error", err)
			return nil
		}
		l.putLocked(key, &d)
		return nil
	})
}

func (p *Purgatory) persistPRs(ctx context.Context, key string, d *PRsData) error {
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	if err := p.kv.Put(ctx, bucketPRs, key, b, 0); err != nil {
		return fmt.Errorf("purgatory: persist the /prs/ record %s: %w", key, err)
	}
	return nil
}

// PRsReservation is a push into a /prs/ repository in progress: the
// repository it may create and the bytes it has brought count toward the
// quotas until Release, and stay counted (durably) from Commit.
type PRsReservation struct {
	p      *Purgatory
	repo   nip34.RepoRef
	key    string
	remote string
	fresh  bool // reserved a new repository

	mu        sync.Mutex
	bytes     int64
	released  bool
	committed bool
}

// ReservePRs admits a push from remote into the /prs/ repository r before
// git runs: refused (a QuotaError, its text for the client) when a new
// repository, or expect more bytes (a lower bound of the push: its
// Content-Length, 0 when unknown), would pass a bound.
func (p *Purgatory) ReservePRs(r nip34.RepoRef, remote string, expect int64) (*PRsReservation, error) {
	if !r.PRs {
		return nil, fmt.Errorf("purgatory: %s is not a /prs/ repository", r.String())
	}
	l := p.prs
	l.mu.Lock()
	defer l.mu.Unlock()
	key := pruneKey(r)
	_, known := l.records[key]
	fresh := !known && l.inflight[key] == 0
	if why := l.over(p.opts.PRsQuotas, r, remote, fresh, max(expect, 0)); why != "" {
		p.events.WithLabelValues("refused", "prs").Inc()
		return nil, &QuotaError{Msg: why}
	}
	if fresh {
		l.use.add(r.Pubkey, remote, 1, nil)
	}
	if !known {
		l.inflight[key]++
	}
	return &PRsReservation{p: p, repo: r, key: key, remote: remote, fresh: fresh}, nil
}

// Charge counts b more bytes of the push; an error (a QuotaError) means the
// push must stop: the bytes were not counted.
func (rv *PRsReservation) Charge(b int64) error {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if rv.released || rv.committed {
		return nil
	}
	p, l := rv.p, rv.p.prs
	l.mu.Lock()
	defer l.mu.Unlock()
	if why := l.over(p.opts.PRsQuotas, rv.repo, rv.remote, false, b); why != "" {
		p.events.WithLabelValues("refused", "prs").Inc()
		return &QuotaError{Msg: why}
	}
	l.use.add(rv.repo.Pubkey, "", 0, map[string]int64{rv.remote: b})
	rv.bytes += b
	return nil
}

// Commit records durably what the applied push brought: the repository's
// record gets the bytes (and is made, charged to this push's address, if
// the push created the repository), and its last use is now. What is
// committed stays counted until DropPRs.
func (rv *PRsReservation) Commit(ctx context.Context) error {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if rv.released || rv.committed {
		return nil
	}
	rv.committed = true
	p, l := rv.p, rv.p.prs
	now := p.clk.Now()
	var d PRsData
	l.mu.Lock()
	keys, _ := l.writing.claim(&l.mu, func() ([]string, error) {
		d = PRsData{Repo: rv.repo, Creator: rv.remote, Bytes: map[string]int64{}, Created: now}
		if cur, ok := l.records[rv.key]; ok {
			d = *cur
			d.Bytes = make(map[string]int64, len(cur.Bytes)+1)
			for r, b := range cur.Bytes {
				d.Bytes[r] = b
			}
		}
		return []string{key(bucketPRs, rv.key)}, nil
	})
	l.mu.Unlock()
	d.Bytes[rv.remote] += rv.bytes
	d.Active = now
	err := p.persistPRs(ctx, rv.key, &d)
	l.mu.Lock()
	defer l.mu.Unlock()
	// The push's counts become the record's in one step, so nobody sees
	// them counted twice or not at all. Counted even if the record could
	// not be written: the data is on disk, and the start-up scan charges a
	// repository without a record.
	rv.unreserveLocked()
	l.putLocked(rv.key, &d)
	l.writing.done(keys)
	return err
}

// Release gives back what the reservation holds in flight (idempotent);
// after Commit it only ends the reservation.
func (rv *PRsReservation) Release() {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if rv.released {
		return
	}
	rv.released = true
	if rv.committed {
		return
	}
	l := rv.p.prs
	l.mu.Lock()
	rv.unreserveLocked()
	l.mu.Unlock()
}

// unreserveLocked takes the reservation's in-flight counts back out.
func (rv *PRsReservation) unreserveLocked() {
	l := rv.p.prs
	repos, creator := 0, ""
	if rv.fresh {
		repos, creator = -1, rv.remote
	}
	l.use.add(rv.repo.Pubkey, creator, repos, map[string]int64{rv.remote: -rv.bytes})
	if n, ok := l.inflight[rv.key]; ok {
		if n <= 1 {
			delete(l.inflight, rv.key)
		} else {
			l.inflight[rv.key] = n - 1
		}
	}
}

// TouchPRs records a use of the /prs/ repository r now (its PR event was
// served with its ref): its data's expiry starts again.
func (p *Purgatory) TouchPRs(ctx context.Context, r nip34.RepoRef) error {
	k := pruneKey(r)
	var d PRsData
	return p.writePRs(k, func(cur *PRsData) bool {
		if cur == nil {
			return false
		}
		d = *cur
		d.Active = p.clk.Now()
		return true
	}, func() error { return p.persistPRs(ctx, k, &d) },
		func() { p.prs.records[k] = &d }) // same counts
}

// AdoptPRs charges a /prs/ repository found on disk without a record (a
// crash between its push and Commit, or data from before these quotas) its
// size on disk, to no address; its last use is now.
func (p *Purgatory) AdoptPRs(ctx context.Context, r nip34.RepoRef, bytes int64) error {
	k := pruneKey(r)
	var d PRsData
	return p.writePRs(k, func(cur *PRsData) bool {
		now := p.clk.Now()
		d = PRsData{Repo: r, Bytes: map[string]int64{"": bytes}, Created: now, Active: now}
		return cur == nil
	}, func() error { return p.persistPRs(ctx, k, &d) },
		func() { p.prs.putLocked(k, &d) })
}

// DropPRs frees what the /prs/ repository r was charged: it has been
// removed from disk.
func (p *Purgatory) DropPRs(ctx context.Context, r nip34.RepoRef) error {
	k := pruneKey(r)
	return p.writePRs(k, func(cur *PRsData) bool { return cur != nil },
		func() error {
			if err := p.kv.Delete(ctx, bucketPRs, k); err != nil {
				return fmt.Errorf("purgatory: drop the /prs/ record %s: %w", k, err)
			}
			return nil
		},
		func() { p.prs.dropLocked(k) })
}

// writePRs changes the record of k without holding the ledger's lock
// across the durable write (inflight.go): decide, under the lock once k
// is claimed, gets the current record (nil when there is none) and says
// whether to write; write runs without the lock; apply, under the lock,
// makes a successful write visible.
func (p *Purgatory) writePRs(k string, decide func(cur *PRsData) bool, write func() error, apply func()) error {
	l := p.prs
	var do bool
	l.mu.Lock()
	keys, _ := l.writing.claim(&l.mu, func() ([]string, error) {
		do = decide(l.records[k])
		return []string{key(bucketPRs, k)}, nil
	})
	l.mu.Unlock()
	var err error
	if do {
		err = write()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if do && err == nil {
		apply()
	}
	l.writing.done(keys)
	return err
}

// PRsRecords returns every /prs/ record, least recently used first (the
// expiry sweep).
func (p *Purgatory) PRsRecords() []PRsData {
	l := p.prs
	l.mu.Lock()
	out := make([]PRsData, 0, len(l.records))
	for _, d := range l.records {
		out = append(out, *d)
	}
	l.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Active.Before(out[j].Active) })
	return out
}

// PRsUse is what /prs/ repositories hold in one scope.
type PRsUse struct {
	Repos int
	Bytes int64
}

// PRsUsage is what /prs/ repositories hold now, records and pushes in
// progress: pushed from remote, under pubkey's npub and in total, with the
// quotas.
func (p *Purgatory) PRsUsage(pubkey, remote string) (ip, pk, total PRsUse, q PRsQuotas) {
	l := p.prs
	l.mu.Lock()
	defer l.mu.Unlock()
	conv := func(u use) PRsUse { return PRsUse{Repos: u.n, Bytes: u.bytes} }
	if remote != "" {
		ip = conv(l.use.remote[remote])
	}
	return ip, conv(l.use.pubkey[pubkey]), conv(l.use.total), p.opts.PRsQuotas
}

// reloadPRs brings one /prs/ record in line with the KV after another
// instance changed it; it claims the record first, so it never undoes a
// local change made meanwhile.
func (p *Purgatory) reloadPRs(ctx context.Context, g Getter, k string) error {
	l := p.prs
	l.mu.Lock()
	keys, _ := l.writing.claim(&l.mu, func() ([]string, error) { return []string{key(bucketPRs, k)}, nil })
	l.mu.Unlock()
	val, ok, err := g.Get(ctx, bucketPRs, k)
	l.mu.Lock()
	defer l.mu.Unlock()
	defer l.writing.done(keys)
	if err != nil {
		return fmt.Errorf("purgatory: reload /prs/ record %s: %w", k, err)
	}
	if !ok {
		l.dropLocked(k)
		return nil
	}
	var d PRsData
	if err := json.Unmarshal(val, &d); err != nil {
		return fmt.Errorf("purgatory: reload /prs/ record %s: %w", k, err)
	}
	l.putLocked(k, &d)
	return nil
}
