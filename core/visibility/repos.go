package visibility

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/roster"
)

// Repository records (issue 23 part 1): a repository that was ever private
// stays private. Its record is written the first time it is private (its
// own announcement carries ["private","true"], or a confirmed maintainer's
// does, or it is a /prs/ repository holding a private repository's PR) and
// is never cleared by the absence of anything: a deleted announcement, a
// dropped maintainer, a roster that no longer resolves, a restart.
//
// "Explicitly public" is one act only: a newer announcement by the
// repository's own owner carrying ["private","false"] (and no confirmed
// maintainer's announcement still carrying ["private","true"]). Newer means
// later than every announcement that asserted privacy for it; a routine
// re-announce without the tag is not it, so data that arrived while the
// repository was private is never published by omission. The owner of a
// coordinate decides for that coordinate only: a dropped maintainer's own
// copy keeps the privacy it had until that maintainer says otherwise.
//
// The record also keeps the readers last resolved (the owner and its
// confirmed maintainers): when they change, the keys that left are told
// (OnRevoke), here at once and on other instances through the record.

// repoRecord is one repository's record.
type repoRecord struct {
	Private bool `json:"private"`
	// At is the created_at of the latest announcement that asserted the
	// repository's privacy (or, once public again, of the owner's explicit
	// public announcement): only a later explicit one makes it public.
	At  int64  `json:"at"`
	Why string `json:"why,omitempty"`
	// Readers are the keys last resolved as its readers (owner and
	// confirmed maintainers), sorted; configured members are not listed.
	Readers []string `json:"readers,omitempty"`
	// Repos are, for a /prs/ repository, the private repositories whose
	// PRs it serves (coordinate strings).
	Repos []string `json:"repos,omitempty"`
}

// Why a repository is private.
const (
	whyAnnouncement = "announcement" // its owner's announcement says so
	whyRoster       = "roster"       // a confirmed maintainer's announcement says so
	whyOrphan       = "orphan"       // hosted with no announcement when the record was first built
	whyPRs          = "prs"          // a /prs/ repository of a private repository's PR
	whyUnreadable   = "unreadable"   // its record could not be read
	whyPublic       = "public"       // made public again by its owner (Private false)
)

func decodeRepo(val []byte) (repoRecord, error) {
	var r repoRecord
	err := json.Unmarshal(val, &r)
	return r, err
}

// repoKey is the record key of a repository: its coordinate, or
// "prs:<hex>:<d>" for a GRASP-06 /prs/ repository.
func repoKey(ref nip34.RepoRef) string {
	if ref.PRs {
		return "prs:" + ref.Pubkey + ":" + ref.Identifier
	}
	return ref.String()
}

// refOfKey is repoKey's inverse.
func refOfKey(key string) (nip34.RepoRef, bool) {
	if rest, ok := strings.CutPrefix(key, "prs:"); ok {
		pk, d, ok := strings.Cut(rest, ":")
		return nip34.PRsRepo(pk, d), ok && nip34.IsHex64(pk)
	}
	ref, err := nip34.ParseRepoRef(key)
	return ref, err == nil
}

// setRecord keeps rec as key's record in memory.
func (v *Visibility) setRecord(key string, rec repoRecord) {
	v.mu.Lock()
	defer v.mu.Unlock()
	old, had := v.recs[key]
	if had && old.Private {
		v.privateN.Add(-1)
	}
	if rec.Private {
		v.privateN.Add(1)
	}
	v.recs[key] = rec
	// what was resolved from the old record is stale
	v.forgetReaders()
	if ref, ok := refOfKey(key); ok && !ref.PRs {
		if v.byD[ref.Identifier] == nil {
			v.byD[ref.Identifier] = map[string]bool{}
		}
		v.byD[ref.Identifier][ref.Pubkey] = true
	}
}

func (v *Visibility) record(key string) (repoRecord, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	r, ok := v.recs[key]
	return r, ok
}

// isPrivate reports whether repository ref is private now: service-wide
// mode, or its record says so.
func (v *Visibility) isPrivate(ref nip34.RepoRef) bool {
	if v.opts.ServiceWide && !ref.PRs {
		return true
	}
	if v.privateN.Load() == 0 {
		return false
	}
	r, ok := v.record(repoKey(ref))
	return ok && r.Private
}

// update read-modify-writes key's record durably (serialised with every
// instance on the store) and keeps the result in memory.
func (v *Visibility) update(key string, fn func(rec repoRecord, ok bool) (repoRecord, bool)) (repoRecord, error) {
	var out repoRecord
	var have bool
	err := v.opts.Records.UpdateRepo(key, func(old []byte, ok bool) ([]byte, bool, error) {
		var rec repoRecord
		if ok {
			var err error
			if rec, err = decodeRepo(old); err != nil {
				rec = repoRecord{Private: true, Why: whyUnreadable}
			}
		}
		next, write := fn(rec, ok)
		out, have = next, ok || write
		if !write {
			return nil, false, nil
		}
		val, err := json.Marshal(next)
		return val, true, err
	})
	if err == nil && have {
		v.setRecord(key, out)
	}
	return out, err
}

// markPrivate records that ref is private, asserted by an announcement of
// at (its created_at).
func (v *Visibility) markPrivate(ref nip34.RepoRef, at int64, why string) error {
	if r, ok := v.record(repoKey(ref)); ok && r.Private && r.At >= at {
		return nil
	}
	v.recMu.Lock()
	defer v.recMu.Unlock()
	_, err := v.update(repoKey(ref), func(rec repoRecord, _ bool) (repoRecord, bool) {
		if rec.Private && rec.At >= at {
			return rec, false
		}
		if !rec.Private {
			rec.Why = why
		}
		rec.Private, rec.At = true, max(rec.At, at)
		return rec, true
	})
	return err
}

// markPRs records that /prs/ repository target serves PRs of the private
// repositories repos.
func (v *Visibility) markPRs(target nip34.RepoRef, repos []string) error {
	key := repoKey(target)
	if r, ok := v.record(key); ok && r.Private && containsAll(r.Repos, repos) {
		return nil
	}
	v.recMu.Lock()
	defer v.recMu.Unlock()
	_, err := v.update(key, func(rec repoRecord, _ bool) (repoRecord, bool) {
		if rec.Private && containsAll(rec.Repos, repos) {
			return rec, false
		}
		rec.Private, rec.Why = true, whyPRs
		for _, r := range repos {
			if !slices.Contains(rec.Repos, r) {
				rec.Repos = append(rec.Repos, r)
			}
		}
		slices.Sort(rec.Repos)
		return rec, true
	})
	return err
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// Observe follows an event stored or held here (or stored by another
// instance, or leaving purgatory): an announcement, or a deletion of one,
// may change which repositories of its identifier are private and who
// reads them; they are reconsidered at once and the keys that lost access
// told. A moderation label is remembered, and its author's deletion of it
// forgotten (moderation.go).
func (v *Visibility) Observe(evt *nostr.Event) {
	ctx := context.Background()
	switch evt.Kind {
	case nip34.KindLabel:
		v.observeModeration(evt)
	case nip34.KindAnnouncement:
		if d := evt.Tags.GetD(); nip34.ValidateIdentifier(d) == nil {
			v.reconsider(ctx, d, evt.PubKey)
		}
	case nip34.KindDeletion:
		v.forgetModeration(evt)
		v.mu.Lock()
		ds := v.pending[evt.ID]
		delete(v.pending, evt.ID)
		v.mu.Unlock()
		for _, a := range nip34.ReferencesOf(evt).Addresses {
			if a.Kind == nip34.KindAnnouncement && !slices.Contains(ds, a.D) {
				ds = append(ds, a.D)
			}
		}
		for _, d := range ds {
			if nip34.ValidateIdentifier(d) == nil {
				v.reconsider(ctx, d, evt.PubKey)
			}
		}
	}
}

// reconsider re-derives, for identifier d, the privacy and readers of the
// repositories an announcement by author may affect: author's own, those
// whose roster author is in, and every one of d already recorded. Privacy
// only grows (but for an owner's explicit public announcement); readers
// follow the rosters, and those who left are told.
func (v *Visibility) reconsider(ctx context.Context, d, author string) {
	v.recMu.Lock()
	defer v.recMu.Unlock()
	view := v.opts.Roster.View(ctx, d, "")
	owners := []string{author}
	for _, e := range view.Owners(author, nil) {
		if !slices.Contains(owners, e.Pubkey) {
			owners = append(owners, e.Pubkey)
		}
	}
	v.mu.Lock()
	for pk := range v.byD[d] {
		if !slices.Contains(owners, pk) {
			owners = append(owners, pk)
		}
	}
	v.forgetReaders()
	v.mu.Unlock()
	if err := view.Err(); err != nil {
		// what could not be read may carry the flag; nothing is made
		// public here, and readers are resolved again on demand
		v.log.Warn("reading a repository's announcements failed; its privacy is kept as it was (and that of the others with its identifier)",
			"repo", nip34.RepoRef{Pubkey: author, Identifier: d}.URLPath(), "error", err)
		return
	}
	var gone []string
	for _, pk := range owners {
		ref := nip34.RepoRef{Pubkey: pk, Identifier: d}
		gone = append(gone, v.reconsiderOne(view, ref)...)
	}
	v.revoked(gone)
}

// derive is what the announcements say of ref now: whether it is private
// (its owner's or a confirmed maintainer's latest announcement carries
// the flag), the newest such announcement's created_at, whether its
// owner's latest announcement explicitly makes it public (and when), and
// its readers (its owner and confirmed maintainers).
func derive(view *roster.View, ref nip34.RepoRef) (private bool, at int64, public bool, publicAt int64, readers []string) {
	readers = []string{ref.Pubkey}
	own, hasOwn := view.Latest(ref.Pubkey)
	if hasOwn {
		if own.Private {
			private, at = true, int64(own.CreatedAt)
		}
		if own.Public {
			public, publicAt = true, int64(own.CreatedAt)
		}
	}
	for _, m := range view.Roster(ref.Pubkey).Members() {
		if !slices.Contains(readers, m) {
			readers = append(readers, m)
		}
		if e, ok := view.Latest(m); ok && e.Private {
			private = true
			at = max(at, int64(e.CreatedAt))
		}
	}
	slices.Sort(readers)
	return private, at, public && !private, publicAt, readers
}

// reconsiderOne updates ref's record from view and returns the readers
// that left it.
func (v *Visibility) reconsiderOne(view *roster.View, ref nip34.RepoRef) (gone []string) {
	private, at, public, publicAt, readers := derive(view, ref)
	key := repoKey(ref)
	rec, had := v.record(key)
	if !private && !had {
		return nil // public, never private: nothing to keep
	}
	why := whyRoster
	if own, ok := view.Latest(ref.Pubkey); ok && own.Private {
		why = whyAnnouncement
	}
	var prev []string
	_, err := v.update(key, func(rec repoRecord, _ bool) (repoRecord, bool) {
		prev = rec.Readers
		changed := false
		switch {
		case private && (!rec.Private || at > rec.At):
			if !rec.Private {
				rec.Why = why
			}
			rec.Private, rec.At, changed = true, max(rec.At, at), true
		case !private && rec.Private && public && publicAt > rec.At:
			rec.Private, rec.At, rec.Why, changed = false, publicAt, whyPublic, true
			v.log.Info("repository made public again by its owner's announcement", "repo", ref.URLPath())
		}
		if rec.Private && !slices.Equal(rec.Readers, readers) {
			rec.Readers, changed = readers, true
		}
		return rec, changed
	})
	if err != nil {
		v.log.Error("recording a repository's privacy failed; it stays as recorded", "repo", ref.URLPath(), "error", err)
		return nil
	}
	// Those who left are told: compared with what this instance last knew
	// as well as with the stored record, since another instance may have
	// stored the change already (then its notification, Reload, finds
	// nothing new here).
	for _, pk := range append(prev, rec.Readers...) {
		if !slices.Contains(readers, pk) && !slices.Contains(gone, pk) {
			gone = append(gone, pk)
		}
	}
	return gone
}

// Reload follows a repository record another instance changed (the shared
// store's side-table notification, bucket store.PrivacyRepoBucket): it is
// read again, and the readers it no longer lists lose access here too.
func (v *Visibility) Reload(key string) {
	val, ok, err := v.opts.Records.Repo(key)
	if err != nil {
		v.log.Error("reading a repository record another instance changed", "key", key, "error", err)
		return
	}
	if !ok {
		return // records are never deleted
	}
	rec, err := decodeRepo(val)
	if err != nil {
		rec = repoRecord{Private: true, Why: whyUnreadable}
	}
	old, _ := v.record(key)
	v.setRecord(key, rec)
	v.mu.Lock()
	v.forgetReaders()
	v.mu.Unlock()
	var gone []string
	for _, pk := range old.Readers {
		if !slices.Contains(rec.Readers, pk) {
			gone = append(gone, pk)
		}
	}
	v.revoked(gone)
}

// Resync reads every repository record again after notifications from
// other instances may have been missed (a lost LISTEN connection): changes
// are taken, and readers no longer listed lose access here too.
func (v *Visibility) Resync() {
	var gone []string
	err := v.opts.Records.Repos(func(key string, val []byte) error {
		rec, err := decodeRepo(val)
		if err != nil {
			rec = repoRecord{Private: true, Why: whyUnreadable}
		}
		old, _ := v.record(key)
		v.setRecord(key, rec)
		for _, pk := range old.Readers {
			if !slices.Contains(rec.Readers, pk) {
				gone = append(gone, pk)
			}
		}
		return nil
	})
	if err != nil {
		v.log.Error("reading the repository records again after a lost notification connection", "error", err)
	}
	v.revoked(gone)
}

// readersOf are who read private repository ref besides the configured
// members: its owner and confirmed maintainers, as its record lists them
// (kept by reconsider), or else resolved from the current announcements
// and remembered until an announcement or deletion arrives. A roster that
// cannot be read leaves the owner alone.
func (v *Visibility) readersOf(ctx context.Context, ref nip34.RepoRef) map[string]bool {
	v.mu.Lock()
	if r, ok := v.readers[ref]; ok {
		v.mu.Unlock()
		return r
	}
	gen := v.gen
	rec, ok := v.recs[repoKey(ref)]
	if ok && rec.Private && len(rec.Readers) > 0 {
		out := map[string]bool{ref.Pubkey: true}
		for _, pk := range rec.Readers {
			out[pk] = true
		}
		v.readers[ref] = out
		v.mu.Unlock()
		return out
	}
	v.mu.Unlock()
	view := v.opts.Roster.View(ctx, ref.Identifier, "")
	out := map[string]bool{ref.Pubkey: true}
	for _, m := range view.Roster(ref.Pubkey).Members() {
		out[m] = true
	}
	if err := view.Err(); err != nil {
		v.log.Warn("reading a private repository's roster failed; only its owner reads it now", "repo", ref.URLPath(), "error", err)
		return map[string]bool{ref.Pubkey: true}
	}
	v.mu.Lock()
	if v.gen == gen {
		if len(v.readers) >= maxReaderCache {
			clear(v.readers)
		}
		v.readers[ref] = out
	}
	v.mu.Unlock()
	return out
}

// serviceMembers are, in service-wide mode, the keys that read events
// belonging to no repository: the readers of every hosted repository
// (the configured members are admitted separately).
func (v *Visibility) serviceMembers(ctx context.Context) map[string]bool {
	v.mu.Lock()
	if v.service != nil {
		s := v.service
		v.mu.Unlock()
		return s
	}
	gen := v.gen
	v.mu.Unlock()
	out := map[string]bool{}
	hosted, err := v.opts.Hosted.List(ctx)
	if err != nil {
		v.log.Warn("listing hosted repositories failed; only configured members are service members now", "error", err)
		return out
	}
	for _, ref := range hosted {
		for pk := range v.readersOf(ctx, ref) {
			out[pk] = true
		}
	}
	v.mu.Lock()
	if v.gen == gen {
		v.service = out
	}
	v.mu.Unlock()
	return out
}
