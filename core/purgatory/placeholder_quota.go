package purgatory

import (
	"fmt"
	"sync"

	"github.com/grasp-dev/grasp/core/nip34"
)

// PlaceholderQuotas bound refs/nostr/<id> placeholders: refs anyone may push
// before their PR event exists, so they are anonymous writes (audit
// 2026-11, F02: 2000 placeholders in one request, 60 MB each, kept for
// weeks). Counts and bytes are kept per repository, per repository owner
// and per client address; placeholders waiting for their event and
// placeholder pushes in progress both count. Zero fields are unbounded; the
// defaults, with their reasons, are config's ([purgatory]
// max_placeholders...).
type PlaceholderQuotas struct {
	PerRepo, PerOwner, PerRemote                int
	BytesPerRepo, BytesPerOwner, BytesPerRemote int64
}

// use is what placeholders hold in one scope.
type use struct {
	n     int
	bytes int64
}

// placeholderUse counts placeholders by scope; only touched under
// Purgatory.mu.
type placeholderUse struct {
	repo, owner, remote map[string]use
}

func newPlaceholderUse() *placeholderUse {
	return &placeholderUse{repo: map[string]use{}, owner: map[string]use{}, remote: map[string]use{}}
}

// scopes returns the repository and owner keys of a placeholder in r. A
// GRASP-06 /prs/ repository is counted apart from the hosted ones: its
// owner is the signer in its path, and a stranger's /prs/ pushes under an
// npub must not use up what the owner's own repositories may receive.
func scopes(r nip34.RepoRef) (repo, owner string) {
	if r.PRs {
		return "prs/" + r.Pubkey + "/" + r.Identifier, "prs/" + r.Pubkey
	}
	return r.Pubkey + "/" + r.Identifier, r.Pubkey
}

// add adds n placeholders of b bytes (negative to remove) in r from remote.
func (u *placeholderUse) add(r nip34.RepoRef, remote string, n int, b int64) {
	repo, owner := scopes(r)
	bumpUse(u.repo, repo, n, b)
	bumpUse(u.owner, owner, n, b)
	bumpUse(u.remote, remote, n, b)
}

// bumpUse adds n and b to k's use in m, dropping k once nothing is left
// (no key: nothing to count). The placeholder and /prs/ ledgers share it.
func bumpUse(m map[string]use, k string, n int, b int64) {
	if k == "" {
		return
	}
	v := m[k]
	v.n += n
	v.bytes += b
	if v.n <= 0 && v.bytes <= 0 {
		delete(m, k)
		return
	}
	m[k] = v
}

// over reports why n more placeholders and b more bytes in r from remote
// would pass a quota, "" when they fit.
func (u *placeholderUse) over(q PlaceholderQuotas, r nip34.RepoRef, remote string, n int, b int64) string {
	repo, owner := scopes(r)
	for _, s := range []struct {
		m        map[string]use
		key      string
		maxN     int
		maxBytes int64
		what     string
	}{
		{u.repo, repo, q.PerRepo, q.BytesPerRepo, "in this repository"},
		{u.owner, owner, q.PerOwner, q.BytesPerOwner, ownerText(r)},
		{u.remote, remote, q.PerRemote, q.BytesPerRemote, "pushed from your address"},
	} {
		if s.key == "" {
			continue
		}
		cur := s.m[s.key]
		if n > 0 && s.maxN > 0 && cur.n+n > s.maxN {
			return fmt.Sprintf("rate-limited: %d refs/nostr/<id> placeholders already wait for their PR event %s (limit %d); publish the PR events or wait until the placeholders expire", cur.n, s.what, s.maxN)
		}
		if b > 0 && s.maxBytes > 0 && cur.bytes+b > s.maxBytes {
			return fmt.Sprintf("rate-limited: refs/nostr/<id> placeholders waiting for their PR event %s may hold %d MiB of pushed data; publish the PR events or wait until the placeholders expire", s.what, s.maxBytes>>20)
		}
	}
	return ""
}

// ownerText names the owner scope of r in a refusal.
func ownerText(r nip34.RepoRef) string {
	if r.PRs {
		return "under /prs/" + nip34.Npub(r.Pubkey) + "/"
	}
	return "in the repositories of " + nip34.Npub(r.Pubkey)
}

// Use is what placeholders hold in one scope: their number and the bytes
// pushed for them.
type Use struct {
	Placeholders int
	Bytes        int64
}

// PlaceholderUsage is what the /prs/<npub>/ placeholders of pubkey and the
// placeholders pushed from remote hold now (waiting ones and pushes in
// progress), with the quotas: what accept plugins see (issue 12 part 4).
func (p *Purgatory) PlaceholderUsage(pubkey, remote string) (pk, ip Use, q PlaceholderQuotas) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, owner := scopes(nip34.PRsRepo(pubkey, "_"))
	u := p.phUse.owner[owner]
	pk = Use{Placeholders: u.n, Bytes: u.bytes}
	if remote != "" {
		u = p.phUse.remote[remote]
		ip = Use{Placeholders: u.n, Bytes: u.bytes}
	}
	return pk, ip, p.opts.PlaceholderQuotas
}

// Reservation is a placeholder push in progress: its placeholders and the
// bytes it has brought so far count toward the quotas until Release.
type Reservation struct {
	p      *Purgatory
	repo   nip34.RepoRef
	remote string
	n      int

	mu       sync.Mutex
	bytes    int64
	released bool
}

// ReservePlaceholders admits a push from remote creating placeholders for
// ids in r, before anything is written: ids not yet waiting in r count as
// new. The push then Charges what it brings and Releases the reservation
// once its placeholders are recorded (AddPlaceholder) or it failed.
func (p *Purgatory) ReservePlaceholders(r nip34.RepoRef, remote string, ids []string) (*Reservation, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, id := range ids {
		if _, ok := p.placeholders[placeholderKey(r, id)]; !ok {
			n++
		}
	}
	if why := p.phUse.over(p.opts.PlaceholderQuotas, r, remote, n, 0); why != "" {
		p.events.WithLabelValues("refused", "placeholder").Inc()
		return nil, &QuotaError{Msg: why}
	}
	p.phUse.add(r, remote, n, 0)
	return &Reservation{p: p, repo: r, remote: remote, n: n}, nil
}

// Charge counts b more bytes of the push; an error (a QuotaError, its text
// for the client) means the push must stop: the bytes were not counted.
func (rv *Reservation) Charge(b int64) error {
	p := rv.p
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if rv.released {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if why := p.phUse.over(p.opts.PlaceholderQuotas, rv.repo, rv.remote, 0, b); why != "" {
		p.events.WithLabelValues("refused", "placeholder").Inc()
		return &QuotaError{Msg: why}
	}
	p.phUse.add(rv.repo, rv.remote, 0, b)
	rv.bytes += b
	return nil
}

// Bytes is what the push brought so far.
func (rv *Reservation) Bytes() int64 {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	return rv.bytes
}

// Release gives the reservation back (idempotent).
func (rv *Reservation) Release() {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if rv.released {
		return
	}
	rv.released = true
	rv.p.mu.Lock()
	rv.p.phUse.add(rv.repo, rv.remote, -rv.n, -rv.bytes)
	rv.p.mu.Unlock()
}
