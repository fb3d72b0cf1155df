package visibility

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/fiatjaf/eventstore"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
)

// The first start with the durable record (or of a store written before
// it) builds the record from what the store holds, failing closed where
// the past cannot be known:
//
//  1. every identifier with an announcement (stored or held) is
//     reconsidered, so each repository private now is recorded private;
//  2. a hosted repository with no announcement of its owner is recorded
//     private: its announcement may have been a private one deleted
//     before this version (F19), and nothing says otherwise;
//  3. every stored event's ancestry is resolved through the store and
//     recorded; an event that names no repository and whose references
//     are all gone (its root deleted, F22) is recorded as belonging to an
//     unknown repository while anything here is private.
//
// The mark (markMigrated) is set once it completes; an interrupted start
// runs it again (every step is idempotent).

const (
	markMigrated     = "migrated"
	migrationVersion = "1"
	// scanPage is how many events one scan query reads.
	scanPage = 1000
	// maxMemo bounds the ancestry remembered while migrating; past it the
	// memory is cleared and rebuilt from the record.
	maxMemo = 200000
	// maxDepth bounds the chain of references followed for one event.
	maxDepth = 8
)

func (v *Visibility) migrate(ctx context.Context) error {
	v.log.Info("building the GRASP-08 privacy record from the store (first start with it)")
	// 1. announcements
	authors := map[string][]string{}
	note := func(evt *nostr.Event) {
		if d := evt.Tags.GetD(); nip34.ValidateIdentifier(d) == nil && !slices.Contains(authors[d], evt.PubKey) {
			authors[d] = append(authors[d], evt.PubKey)
		}
	}
	if err := v.scan(ctx, nostr.Filter{Kinds: []int{nip34.KindAnnouncement}}, note); err != nil {
		return err
	}
	if v.opts.Held != nil {
		held, err := v.opts.Held.QueryHeld(ctx, nostr.Filter{Kinds: []int{nip34.KindAnnouncement}})
		if err != nil {
			return fmt.Errorf("visibility: scan held announcements: %w", err)
		}
		for _, evt := range held {
			note(evt)
		}
	}
	for d, pks := range authors {
		view := v.opts.Roster.View(ctx, d, "")
		for _, pk := range pks {
			v.reconsiderOne(view, nip34.RepoRef{Pubkey: pk, Identifier: d})
		}
		if err := view.Err(); err != nil {
			return fmt.Errorf("visibility: read the announcements of %q: %w", d, err)
		}
	}
	// 2. hosted repositories without an announcement
	hosted, err := v.opts.Hosted.List(ctx)
	if err != nil {
		return fmt.Errorf("visibility: list hosted repositories: %w", err)
	}
	orphans := 0
	for _, ref := range hosted {
		if ref.PRs || v.isPrivate(ref) {
			continue
		}
		view := v.opts.Roster.View(ctx, ref.Identifier, "")
		_, has := view.Latest(ref.Pubkey)
		if err := view.Err(); err != nil {
			return fmt.Errorf("visibility: read the announcements of %s: %w", ref.String(), err)
		}
		if has {
			continue
		}
		if err := v.markPrivate(ref, 0, whyOrphan); err != nil {
			return fmt.Errorf("visibility: record %s: %w", ref.String(), err)
		}
		orphans++
	}
	if orphans > 0 {
		v.log.Warn("hosted repositories without an announcement are kept private (their announcement may have been a deleted private one); their owners read them, and an announcement of theirs with [\"private\",\"false\"] makes them public",
			"count", orphans)
	}
	// 3. ancestry
	m := &migrator{v: v, memo: map[string][]string{}}
	recorded := 0
	err = v.scan(ctx, nostr.Filter{}, func(evt *nostr.Event) {
		if m.err != nil {
			return
		}
		if n := m.record(ctx, evt); n {
			recorded++
		}
	})
	if err == nil {
		err = m.err
	}
	if err != nil {
		return err
	}
	v.log.Info("GRASP-08 privacy record built", "private_repositories", v.PrivateRepositories(), "event_records", recorded)
	return nil
}

// scan visits every stored event f matches, newest first, a page at a
// time. The scan is marked as a negentropy read, which lifts the store's
// REQ cap.
func (v *Visibility) scan(ctx context.Context, f nostr.Filter, fn func(*nostr.Event)) error {
	qctx := eventstore.SetNegentropy(ctx)
	page := func(f nostr.Filter) (n int, oldest, newest nostr.Timestamp, err error) {
		ch, err := v.opts.Events.QueryEvents(qctx, f)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("visibility: scan the store: %w", err)
		}
		for evt := range ch {
			n++
			fn(evt)
			if n == 1 || evt.CreatedAt < oldest {
				oldest = evt.CreatedAt
			}
			if evt.CreatedAt > newest {
				newest = evt.CreatedAt
			}
		}
		return n, oldest, newest, ctx.Err()
	}
	f.Limit = scanPage
	for {
		n, oldest, newest, err := page(f)
		if err != nil {
			return err
		}
		if n < scanPage {
			return nil
		}
		if oldest == newest {
			// a page all of one second: read that second whole
			sec := oldest
			whole := f
			whole.Since, whole.Until, whole.Limit = &sec, &sec, 0
			if _, _, _, err := page(whole); err != nil {
				return err
			}
			if oldest == 0 {
				return nil
			}
			oldest--
		}
		u := oldest
		f.Until = &u
	}
}

// migrator resolves whole chains of references once, remembering each
// event's repositories (its own and its ancestry).
type migrator struct {
	v    *Visibility
	memo map[string][]string
	err  error
}

// record writes evt's record if its ancestry reaches a repository it does
// not name itself; it reports whether it wrote one.
func (m *migrator) record(ctx context.Context, evt *nostr.Event) bool {
	if evt.Kind == nip34.KindPrivateGraspList {
		return false
	}
	own := ownRepos(evt)
	anc, unresolved := m.ancestry(ctx, evt, maxDepth)
	var extra []string
	for _, r := range anc {
		if !slices.Contains(own, r) {
			extra = append(extra, r)
		}
	}
	if len(own) == 0 && len(anc) == 0 && unresolved && m.v.Restricting() {
		extra = []string{unknownRepo}
	}
	if evt.Kind == nip34.KindPR || evt.Kind == nip34.KindPRUpdate {
		if err := m.v.recordPRs(evt, append(own, extra...)); err != nil {
			m.err = fmt.Errorf("visibility: record the /prs/ repository of %s: %w", evt.ID, err)
			return false
		}
	}
	if len(extra) == 0 {
		return false
	}
	slices.Sort(extra)
	val, _ := json.Marshal(extra)
	if err := m.v.opts.Records.PutEvent(ctx, evt.ID, val); err != nil {
		m.err = fmt.Errorf("visibility: record %s: %w", evt.ID, err)
		return false
	}
	m.v.cacheEvent(evt.ID, extra)
	return true
}

// full are all the repositories evt belongs to.
func (m *migrator) full(ctx context.Context, evt *nostr.Event, depth int) []string {
	if r, ok := m.memo[evt.ID]; ok {
		return r
	}
	out := ownRepos(evt)
	anc, _ := m.ancestry(ctx, evt, depth)
	for _, r := range anc {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	if len(m.memo) >= maxMemo {
		clear(m.memo)
	}
	m.memo[evt.ID] = out
	return out
}

// ancestry is what evt's referenced stored events belong to, through
// their own references up to depth, and whether any of them is gone.
func (m *migrator) ancestry(ctx context.Context, evt *nostr.Event, depth int) (repos []string, unresolved bool) {
	ids := refIDs(evt)
	if len(ids) == 0 || m.err != nil {
		return nil, false
	}
	parents, err := m.v.lookup(ctx, ids, false)
	if err != nil {
		m.err = fmt.Errorf("visibility: look up the references of %s: %w", evt.ID, err)
		return nil, false
	}
	unresolved = len(parents) < len(ids)
	for _, p := range parents {
		var pr []string
		if depth > 0 {
			pr = m.full(ctx, p, depth-1)
		} else {
			// deep enough: what the parent names and its record say
			rec, err := m.v.eventRecords(ctx, []*nostr.Event{p})
			if err != nil {
				m.err = err
				return nil, false
			}
			pr = append(ownRepos(p), rec[p.ID]...)
		}
		for _, r := range pr {
			if !slices.Contains(repos, r) {
				repos = append(repos, r)
			}
		}
	}
	return repos, unresolved
}
