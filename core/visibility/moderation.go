package visibility

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
)

// Moderation (issue 25 part 2): a repository's confirmed maintainers and
// moderators hide events inside it with a moderation label
// (nip34.ParseModeration, kind 1985 in the #moderation namespace; why that
// event, in its doc). Hiding is one more answer of the one reader rule:
// Readers of a hidden event admits only the configured members and the
// maintainers and moderators of the repository that hid it, so REQ, COUNT,
// NEG-*, live delivery, the pages and peers syncing from here all leave it
// out through the question they already ask; nothing is deleted.
//
//   - The labels are remembered by target id (marks): fed by Observe for
//     every stored or other-instance label, loaded from the store at start.
//     A label whose target is not here yet waits for it (sync may bring the
//     hide first).
//   - A mark counts for an event only when the event belongs to the
//     label's repository (its own names and its record) and the label's
//     author moderates that repository now (nip34.Roster.Moderates on the
//     current roster, maintainers-v3 §2.6). A maintainer of one repository
//     cannot hide another's events by naming them.
//   - Per repository the newest counting label (nip34.Later) decides: a
//     newer "show" undoes a "hide", and so does the label author's NIP-09
//     deletion of it. The event's own author's NIP-09 deletes it as usual.
//   - Announcements, states, deletions and moderation labels cannot be
//     hidden (nip34.Moderatable).

// maxMarksPerTarget bounds the labels remembered for one event; the
// oldest go first.
const maxMarksPerTarget = 64

type mark struct {
	label  string
	author string
	at     int64
	hide   bool
	repo   nip34.RepoRef
}

// moderation is the memory of moderation labels.
type moderation struct {
	mu      sync.RWMutex
	marks   map[string][]mark   // target id -> labels naming it
	byLabel map[string][]string // label id -> its targets (for deletions)
	n       atomic.Int64        // targets with a mark
	mods    map[nip34.RepoRef]map[string]bool
}

func (m *moderation) init() {
	m.marks, m.byLabel, m.mods = map[string][]mark{}, map[string][]string{}, map[nip34.RepoRef]map[string]bool{}
}

// loadModeration reads the stored moderation labels (Load).
func (v *Visibility) loadModeration(ctx context.Context) error {
	f := nostr.Filter{Kinds: []int{nip34.KindLabel}, Tags: nostr.TagMap{"L": []string{nip34.LabelNamespaceModeration}}}
	return v.scan(ctx, f, v.observeModeration)
}

// observeModeration remembers a moderation label.
func (v *Visibility) observeModeration(evt *nostr.Event) {
	md, err := nip34.ParseModeration(evt)
	if err != nil {
		return
	}
	m := &v.mod
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, seen := m.byLabel[md.ID]; seen {
		return
	}
	m.byLabel[md.ID] = md.Targets
	for _, t := range md.Targets {
		list := m.marks[t]
		list = append(list, mark{label: md.ID, author: md.Pubkey, at: md.CreatedAt, hide: md.Hide, repo: md.Repo})
		if len(list) > maxMarksPerTarget {
			oldest := 0
			for i := range list {
				if nip34.Later(list[oldest].at, list[oldest].label, list[i].at, list[i].label) {
					oldest = i
				}
			}
			list = slices.Delete(list, oldest, oldest+1)
		}
		m.marks[t] = list
	}
	m.n.Store(int64(len(m.marks)))
}

// forgetModeration drops the labels a deletion request by their author
// removes.
func (v *Visibility) forgetModeration(del *nostr.Event) {
	m := &v.mod
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range nip34.ReferencesOf(del).EventIDs {
		targets, ok := m.byLabel[id]
		if !ok {
			continue
		}
		for _, t := range targets {
			list := m.marks[t]
			i := slices.IndexFunc(list, func(x mark) bool { return x.label == id })
			if i < 0 || list[i].author != del.PubKey {
				continue
			}
			if list = slices.Delete(list, i, i+1); len(list) == 0 {
				delete(m.marks, t)
			} else {
				m.marks[t] = list
			}
		}
		if !slices.ContainsFunc(targets, func(t string) bool {
			return slices.ContainsFunc(m.marks[t], func(x mark) bool { return x.label == id })
		}) {
			delete(m.byLabel, id)
		}
	}
	m.n.Store(int64(len(m.marks)))
}

// Withholding reports whether Readers may leave out a public event: some
// event is named by a moderation label, or the operator banned an event or
// a key (the gate's answers that skip the per-event check ask this first).
func (v *Visibility) Withholding() bool {
	if v.mod.n.Load() > 0 {
		return true
	}
	if v.opts.Banned == nil {
		return false
	}
	ids, pks := v.opts.Banned.Bans()
	return len(ids) > 0 || len(pks) > 0
}

// Withheld lists what Readers may leave out of public answers: the events
// named by moderation labels and the banned events (ids), and the banned
// keys (authors). The gate's answers built from ids alone (COUNT, the
// negentropy index) ask Readers about these, one by one.
func (v *Visibility) Withheld() (ids, authors []string) {
	m := &v.mod
	m.mu.RLock()
	ids = make([]string, 0, len(m.marks))
	for id := range m.marks {
		ids = append(ids, id)
	}
	m.mu.RUnlock()
	if v.opts.Banned != nil {
		bi, bp := v.opts.Banned.Bans()
		ids = append(ids, bi...)
		authors = bp
	}
	return ids, authors
}

// hidden is who may still read evt when moderation hides it (the members
// and the hiding repositories' maintainers and moderators), nil when it is
// not hidden.
func (v *Visibility) hidden(ctx context.Context, evt *nostr.Event) func(string) bool {
	if v.mod.n.Load() == 0 || !nip34.Moderatable(evt) {
		return nil
	}
	m := &v.mod
	m.mu.RLock()
	marks := slices.Clone(m.marks[evt.ID])
	m.mu.RUnlock()
	if len(marks) == 0 {
		return nil
	}
	repos, err := v.eventRepos(ctx, evt)
	if err != nil {
		v.log.Warn("reading a moderated event's repositories failed; it is hidden", "id", evt.ID, "error", err)
		return v.only("")
	}
	var sets []map[string]bool
	done := map[nip34.RepoRef]bool{}
	for _, mk := range marks {
		ref := mk.repo
		if done[ref] || !slices.Contains(repos, ref.String()) {
			continue
		}
		done[ref] = true
		mods, ok := v.moderatorsOf(ctx, ref)
		if !ok {
			return v.only("")
		}
		var newest *mark
		for i := range marks {
			x := &marks[i]
			if x.repo == ref && mods[x.author] && (newest == nil || nip34.Later(x.at, x.label, newest.at, newest.label)) {
				newest = x
			}
		}
		if newest != nil && newest.hide {
			sets = append(sets, mods)
		}
	}
	if len(sets) == 0 {
		return nil
	}
	return func(pk string) bool {
		if pk == "" {
			return false
		}
		if v.isMember(pk) {
			return true
		}
		for _, s := range sets {
			if s[pk] {
				return true
			}
		}
		return false
	}
}

// moderatorsOf are the keys whose moderation labels count in ref now: its
// confirmed maintainers and moderators (nip34.Roster.Moderates), cached
// until an announcement or deletion arrives (forgetReaders). ok is false
// when the roster cannot be read.
func (v *Visibility) moderatorsOf(ctx context.Context, ref nip34.RepoRef) (map[string]bool, bool) {
	v.mu.Lock()
	if s, ok := v.mod.mods[ref]; ok {
		v.mu.Unlock()
		return s, true
	}
	gen := v.gen
	v.mu.Unlock()
	view := v.opts.Roster.View(ctx, ref.Identifier, "")
	r := view.Roster(ref.Pubkey)
	if err := view.Err(); err != nil {
		v.log.Warn("reading a repository's roster for moderation failed; its hidden events stay hidden", "repo", ref.URLPath(), "error", err)
		return nil, false
	}
	out := map[string]bool{}
	for pk := range r.Maintainers {
		out[pk] = true
	}
	for pk := range r.Moderators {
		out[pk] = true
	}
	v.mu.Lock()
	if v.gen == gen {
		if len(v.mod.mods) >= maxReaderCache {
			clear(v.mod.mods)
		}
		v.mod.mods[ref] = out
	}
	v.mu.Unlock()
	return out, true
}

// both is who passes a and b (nil: no restriction).
func both(a, b func(string) bool) func(string) bool {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(pk string) bool { return a(pk) && b(pk) }
}
