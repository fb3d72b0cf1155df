package visibility

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/nocontent"
	"github.com/grasp-dev/grasp/core/outcome"
)

// The decision at acceptance (issue 23 part 1). Record runs once per event
// the relay is about to store or hold, before it does: it fixes what the
// event's privacy will rest on for good, so that no later deletion, roster
// change or restart can make it public.
//
//   - An event belongs to the repositories it is (an announcement's or a
//     state's own coordinate), names by `a`/`A`/`q` (30617 or 30618
//     addresses), and reaches through the stored events it names by
//     `e`/`E`/`q`. The first two are in the event itself; the third is
//     written down as the event's record, because the events it passes
//     through may be deleted later (F22). A parent's record carries its own
//     ancestry, so one level of lookups reaches the whole chain.
//   - An event whose references are all unknown here, that names no
//     repository, is recorded as belonging to an unknown repository while
//     anything here is private: read by its author and the members only.
//   - A private announcement makes its repository private at once (the
//     repository record, sticky: repos.go); without the offer
//     (grasp.private_repositories) a new private repository is refused.
//   - A PR or PR update of a private repository pushed to GRASP-06 /prs/
//     makes that /prs/ repository private (F27).

// unknownRepo is the record's mark for "belongs to a repository that could
// not be resolved" (fail closed).
const unknownRepo = "?"

// errNotOffered is the refusal of a new private repository where privacy
// is not offered.
var errNotOffered = outcome.Errorf(outcome.Blocked, "private repositories (GRASP-08) are not offered on this server")

// Record decides evt's privacy for good and records it durably; the relay
// calls it before storing or holding evt, and refuses evt (the error's text
// is the OK message) when it fails.
func (v *Visibility) Record(ctx context.Context, evt *nostr.Event) error {
	if evt.Kind == nip34.KindPrivateGraspList {
		return nil // its author's alone, by kind
	}
	own := ownRepos(evt)
	if evt.Kind == nip34.KindAnnouncement {
		if a, err := nip34.ParseAnnouncement(evt); err == nil && a.Private {
			ref := nip34.RepoRef{Pubkey: evt.PubKey, Identifier: a.Identifier}
			if !v.Offered() && !v.isPrivate(ref) {
				return errNotOffered
			}
			if err := v.markPrivate(ref, int64(evt.CreatedAt), whyAnnouncement); err != nil {
				return outcome.Errorf(outcome.Error, "could not record the repository as private: %w", err)
			}
		}
	}
	if evt.Kind == nip34.KindDeletion {
		v.noteDeletion(ctx, evt)
	}
	anc, unresolved, err := v.ancestry(ctx, evt)
	if err != nil {
		return outcome.Errorf(outcome.Error, "could not resolve the events this one references: %w", err)
	}
	var extra []string
	for _, r := range anc {
		if !slices.Contains(own, r) {
			extra = append(extra, r)
		}
	}
	if len(own) == 0 && len(anc) == 0 && unresolved && v.Restricting() {
		extra = []string{unknownRepo}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		val, _ := json.Marshal(extra)
		if err := v.opts.Records.PutEvent(ctx, evt.ID, val); err != nil {
			return outcome.Errorf(outcome.Error, "could not record the event's privacy: %w", err)
		}
	}
	v.cacheEvent(evt.ID, extra)
	if evt.Kind == nip34.KindPR || evt.Kind == nip34.KindPRUpdate {
		if err := v.recordPRs(evt, append(own, extra...)); err != nil {
			return outcome.Errorf(outcome.Error, "could not record the PR repository as private: %w", err)
		}
	}
	return nil
}

// ownRepos are the repositories evt names itself: its own coordinate (an
// announcement or a state), and the 30617/30618 addresses of its a, A and
// q tags, as coordinate strings, each once.
func ownRepos(evt *nostr.Event) []string {
	var out []string
	add := func(ref nip34.RepoRef) {
		if s := ref.String(); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if evt.Kind == nip34.KindAnnouncement || evt.Kind == nip34.KindState {
		if d := evt.Tags.GetD(); nip34.ValidateIdentifier(d) == nil {
			add(nip34.RepoRef{Pubkey: evt.PubKey, Identifier: d})
		}
	}
	for _, a := range nip34.ReferencesOf(evt).Addresses {
		if (a.Kind == nip34.KindAnnouncement || a.Kind == nip34.KindState) && nip34.ValidateIdentifier(a.D) == nil {
			add(nip34.RepoRef{Pubkey: a.Pubkey, Identifier: a.D})
		}
	}
	return out
}

// refIDs are the event ids evt names by e, E or q, at most maxRefLookups.
func refIDs(evt *nostr.Event) []string {
	ids := nip34.ReferencesOf(evt).EventIDs
	if len(ids) > maxRefLookups {
		ids = ids[:maxRefLookups]
	}
	return ids
}

// ancestry is what the events evt references by e/E/q belong to (each
// one's own repositories and record), and whether any of them is known
// neither to the store nor to purgatory.
func (v *Visibility) ancestry(ctx context.Context, evt *nostr.Event) (repos []string, unresolved bool, err error) {
	ids := refIDs(evt)
	if len(ids) == 0 {
		return nil, false, nil
	}
	parents, err := v.lookup(ctx, ids, true)
	if err != nil {
		return nil, false, err
	}
	found := map[string]bool{}
	for _, p := range parents {
		found[p.ID] = true
	}
	for _, id := range ids {
		if !found[id] {
			unresolved = true
		}
	}
	rec, err := v.eventRecords(ctx, parents)
	if err != nil {
		return nil, false, err
	}
	for _, p := range parents {
		for _, r := range append(ownRepos(p), rec[p.ID]...) {
			if !slices.Contains(repos, r) {
				repos = append(repos, r)
			}
		}
	}
	return repos, unresolved, nil
}

// lookup returns the stored events of ids (and, with held, those held in
// purgatory). The stored ones come without their contents
// (core/nocontent): every caller reads their kind, author and tags
// only, and decoding a patch's content on each reply's acceptance cost ~30
// µs an event (issue 27 part 5). They must never be served or stored.
func (v *Visibility) lookup(ctx context.Context, ids []string, held bool) ([]*nostr.Event, error) {
	// The ids policy's reference rule looked up too: one lookup for both
	// (nocontent.ByID under the relay's nocontent.Shared).
	out, err := nocontent.ByID(ctx, v.opts.Events, ids, 0)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(out))
	for _, e := range out {
		seen[e.ID] = true
	}
	if held && v.opts.Held != nil && len(out) < len(ids) {
		var missing []string
		for _, id := range ids {
			if !seen[id] {
				missing = append(missing, id)
			}
		}
		hd, err := v.opts.Held.QueryHeld(ctx, nostr.Filter{IDs: missing})
		if err != nil {
			return nil, err
		}
		for _, e := range hd {
			if !seen[e.ID] {
				seen[e.ID] = true
				out = append(out, e)
			}
		}
	}
	return out, nil
}

// eventRecords returns the recorded repositories of evs (none for an
// event without a record), from memory or the record.
func (v *Visibility) eventRecords(ctx context.Context, evs []*nostr.Event) (map[string][]string, error) {
	out := map[string][]string{}
	var missing []string
	v.mu.Lock()
	for _, e := range evs {
		if r, ok := v.events[e.ID]; ok {
			out[e.ID] = r
		} else {
			missing = append(missing, e.ID)
		}
	}
	v.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	got, err := v.opts.Records.Events(ctx, missing)
	if err != nil {
		return nil, err
	}
	for _, id := range missing {
		var repos []string
		if raw, ok := got[id]; ok {
			if err := json.Unmarshal(raw, &repos); err != nil || len(repos) == 0 {
				// unreadable: it was written because the event belongs to
				// something private (fail closed)
				repos = []string{unknownRepo}
			}
		}
		out[id] = repos
		v.cacheEvent(id, repos)
	}
	return out, nil
}

// cacheEvent remembers id's recorded repositories (nil: no record). A
// record is written before its event is stored and never changes, so
// what is remembered stays true.
func (v *Visibility) cacheEvent(id string, repos []string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.events) >= maxEventCache {
		clear(v.events)
	}
	v.events[id] = repos
}

// eventRepos are all the repositories evt belongs to: its own and its
// record.
func (v *Visibility) eventRepos(ctx context.Context, evt *nostr.Event) ([]string, error) {
	own := ownRepos(evt)
	rec, err := v.eventRecords(ctx, []*nostr.Event{evt})
	if err != nil {
		return nil, err
	}
	return append(own, rec[evt.ID]...), nil
}

// noteDeletion remembers which identifiers' announcements a deletion
// request removes (its a tags, and the announcements among the events it
// names, looked up before they are gone), for Observe to reconsider.
func (v *Visibility) noteDeletion(ctx context.Context, evt *nostr.Event) {
	var ds []string
	add := func(d string) {
		if !slices.Contains(ds, d) {
			ds = append(ds, d)
		}
	}
	refs := nip34.ReferencesOf(evt)
	for _, a := range refs.Addresses {
		if a.Kind == nip34.KindAnnouncement {
			add(a.D)
		}
	}
	if ids := refs.EventIDs; len(ids) > 0 {
		if len(ids) > maxRefLookups {
			ids = ids[:maxRefLookups]
		}
		targets, err := v.lookup(ctx, ids, false)
		if err != nil {
			v.log.Warn("looking up what a deletion removes failed", "id", evt.ID, "error", err)
		}
		for _, t := range targets {
			if t.Kind == nip34.KindAnnouncement && t.PubKey == evt.PubKey {
				add(t.Tags.GetD())
			}
		}
	}
	if len(ds) == 0 {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.pending) >= maxPendingDeletions {
		clear(v.pending)
	}
	v.pending[evt.ID] = ds
}

// recordPRs makes the GRASP-06 /prs/ repository a PR names private when
// the PR belongs to a private repository (F27): that repository's data is
// then read by the PR's signer and the readers of those repositories only.
func (v *Visibility) recordPRs(evt *nostr.Event, repos []string) error {
	var private []string
	for _, r := range repos {
		if r == unknownRepo {
			continue
		}
		if ref, err := nip34.ParseRepoRef(r); err == nil && v.isPrivate(ref) {
			private = append(private, r)
		}
	}
	if len(private) == 0 {
		return nil
	}
	pr, err := nip34.ParsePR(evt)
	if err != nil {
		return nil
	}
	target, ok := v.opts.Service.PRsTarget(pr)
	if !ok {
		return nil
	}
	return v.markPRs(target, private)
}
