package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/fiatjaf/eventstore"
	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/core/purgatory"
	"github.com/grasp-dev/grasp/core/purgatory/hunt"
	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"
)

// grasp is the GRASP-01 glue: it carries out the effects the policy rules
// decide (create, align, propagate and retire bare repos; hold, replace,
// release and evict purgatory entries; bind refs/nostr/<id>) and answers
// the questions the rules and the git handler ask (what is held, which
// objects exist, which states are authoritative for a repo).
type grasp struct {
	log   hclog.Logger
	clk   clock.Clock
	store eventstore.Store
	purg  *purgatory.Purgatory
	repos *git.Repos
	rules policy.Pipeline
	// hunter fetches missing git data from other servers; nil in tests
	// that build the glue alone.
	hunter *hunt.Hunter
	// spawn runs work in the background, owned by the server (nil in
	// tests that build the glue alone).
	spawn func(func(ctx context.Context))
	// forgetRepo tells GRASP-02 sync a repo is no longer hosted here (nil
	// when sync is off).
	forgetRepo func(address string)
	// maintainers is the one maintainer-set function the rules use too.
	maintainers nip34.MaintainerSet
	// publish stores and broadcasts a released event (relay.Publish).
	publish func(ctx context.Context, evt *nostr.Event) error
}

func newGrasp(log hclog.Logger, clk clock.Clock, store eventstore.Store, purg *purgatory.Purgatory, repos *git.Repos) *grasp {
	return &grasp{log: log, clk: clk, store: store, purg: purg, repos: repos, maintainers: nip34.RecursiveMaintainers}
}

// ---- the pipeline the relay calls -------------------------------------

// Decide runs the GRASP rules; the relay hands the decision back to Hold
// or Apply.
func (g *grasp) Decide(ctx context.Context, evt *nostr.Event, meta policy.Meta) policy.Decision {
	return g.rules.Decide(ctx, evt, meta)
}

func (g *grasp) applyRejectEffects(ctx context.Context, evt *nostr.Event, d policy.Decision) {
	for _, e := range d.Effects {
		switch e.Kind {
		case policy.EvictHeld:
			g.evictAnnouncement(ctx, e.Repo)
		case policy.RemoveRepo:
			g.retireRepo(ctx, e.Repo, "announcement no longer lists this server")
		}
	}
}

// Hold is relay.Effects: the pipeline decided to keep evt in purgatory.
func (g *grasp) Hold(ctx context.Context, evt *nostr.Event, d policy.Decision, meta policy.Meta) (string, error) {
	entry := purgatory.Entry{Event: evt}
	createRepo := false
	for _, e := range d.Effects {
		switch e.Kind {
		case policy.CreateRepo:
			createRepo = true
			entry.Repo = repoOf(e.Repo)
		case policy.ReplaceHeld:
			entry.Repo = repoOf(e.Repo)
		case policy.AwaitGitData:
			if entry.Repo == (purgatory.Repo{}) {
				entry.Repo = repoOf(e.Repo)
				entry.Needs = append(entry.Needs, e.OIDs...)
			} else if repoOf(e.Repo) != entry.Repo {
				entry.Also = append(entry.Also, repoOf(e.Repo))
			}
		case policy.AwaitRepo:
			entry.Repo = repoOf(e.Repo)
			entry.WithRepo = true
		case policy.AwaitEvent:
			entry.AwaitEvent = e.EventID
			if entry.Repo == (purgatory.Repo{}) {
				entry.Repo = repoOf(e.Repo)
			}
		}
	}
	if entry.Repo == (purgatory.Repo{}) && evt.Kind == nip34.KindAnnouncement {
		entry.Repo = purgatory.Repo{Owner: evt.PubKey, Identifier: evt.Tags.GetD()}
	}
	if err := g.purg.Hold(entry); err != nil {
		if err == purgatory.ErrDuplicate {
			return policy.MsgInPurgatory, nil
		}
		return "", fmt.Errorf("error: could not hold event: %w", err)
	}
	g.hunt(ctx, entry, meta.Source == policy.SourceSync)
	if createRepo {
		// The bare repo must exist at once: ngit init polls info/refs every
		// 500 ms right after publishing the announcement (grasp.md §7.1).
		if err := g.repos.Create(ctx, npub(entry.Repo.Owner), entry.Repo.Identifier); err != nil {
			g.log.Error("create bare repo", "repo", entry.Repo.Address(), "error", err)
		} else if g.spawn != nil {
			// The data may already be here: the repo was announced before,
			// or another maintainer's copy holds the latest state. Then the
			// announcement need not wait for a push; this runs after the OK.
			r := entry.Repo
			g.spawn(func(ctx context.Context) { g.adopt(ctx, r) })
		}
	}
	if evt.Kind == nip34.KindPR || evt.Kind == nip34.KindPRUpdate {
		g.settlePlaceholders(ctx, evt, "")
	}
	msg := policy.MsgPurgatory
	if (evt.Kind == nip34.KindPR || evt.Kind == nip34.KindPRUpdate) && len(entry.Needs) > 0 {
		msg = fmt.Sprintf("purgatory: PR event stored, waiting for git push with commit %s", entry.Needs[0])
	}
	return msg, nil
}

// Apply is relay.Effects: after the relay stored evt, carry out the
// decision's effects and apply deletions to purgatory and to bare repos; a
// rejection's effects at once.
func (g *grasp) Apply(ctx context.Context, evt *nostr.Event, d policy.Decision) {
	if d.Outcome == policy.Rejected {
		g.applyRejectEffects(ctx, evt, d)
		return
	}
	if evt.Kind == nip34.KindDeletion {
		g.applyDeletion(ctx, evt)
		return
	}
	for _, e := range d.Effects {
		switch e.Kind {
		case policy.AlignRepo:
			g.alignToState(ctx, evt)
		case policy.BindNostrRef:
			if len(e.OIDs) > 0 {
				g.settlePlaceholders(ctx, evt, e.OIDs[0])
				g.bindNostrRef(ctx, e.Repo, evt.ID, e.OIDs[0])
			}
		case policy.ReleaseHeld:
			g.releaseRepo(ctx, repoOf(e.Repo))
		case policy.RemoveRepo:
			g.retireRepo(ctx, e.Repo, "announcement no longer lists this server")
		case policy.EvictHeld:
			g.evictAnnouncement(ctx, e.Repo)
		}
	}
}

// ---- effects ----------------------------------------------------------

// alignToState makes every bare repo for which the state is authoritative
// equal to it: the state author's own repo and every other maintainer's
// repo of the same identifier hosted here (G01-P8, G01-G4 part 3).
func (g *grasp) alignToState(ctx context.Context, evt *nostr.Event) {
	st, err := nip34.ParseState(evt)
	if err != nil {
		g.log.Warn("cannot align to unparsable state", "id", evt.ID, "error", err)
		return
	}
	refs, head := stateRefs(st)
	owners := g.authoritativeOwners(ctx, evt.PubKey, st.Identifier)
	var src string
	for _, o := range owners {
		has, err := g.repos.HasObjects(ctx, npub(o), st.Identifier, values(refs))
		if err == nil && allTrue(has, values(refs)) {
			src = o
			break
		}
	}
	if src == "" {
		g.log.Warn("state objects not found in any repo", "id", evt.ID, "d", st.Identifier)
		return
	}
	if err := g.repos.Align(ctx, npub(src), st.Identifier, refs, head); err != nil {
		g.log.Error("align repo to state", "repo", src+"/"+st.Identifier, "error", err)
		return
	}
	g.propagate(ctx, src, st.Identifier, refs, head, owners)
	for _, o := range owners {
		g.releaseRepo(ctx, purgatory.Repo{Owner: o, Identifier: st.Identifier})
	}
}

func (g *grasp) propagate(ctx context.Context, from, d string, refs map[string]string, head string, owners []string) {
	var to []string
	for _, o := range owners {
		if o != from && g.repos.Exists(npub(o), d) {
			to = append(to, npub(o))
		}
	}
	if len(to) == 0 {
		return
	}
	if err := g.repos.Propagate(ctx, npub(from), to, d, refs, head); err != nil {
		g.log.Error("propagate state to maintainers' repos", "from", from, "d", d, "error", err)
	}
}

// authoritativeOwners lists the owners (hex) of announcements with
// identifier d for which a state by author is authoritative: every owner
// whose recursive maintainer set contains author.
func (g *grasp) authoritativeOwners(ctx context.Context, author, d string) []string {
	anns := g.announcements(ctx, d)
	seen := map[string]bool{}
	var out []string
	for _, a := range anns {
		if seen[a.Pubkey] {
			continue
		}
		seen[a.Pubkey] = true
		if g.maintainers(a.Pubkey, d, anns)[author] {
			out = append(out, a.Pubkey)
		}
	}
	return out
}

// announcements returns the stored and held announcements with identifier d.
func (g *grasp) announcements(ctx context.Context, d string) []nip34.Announcement {
	var out []nip34.Announcement
	for _, evt := range g.query(ctx, nostr.Filter{Kinds: []int{nip34.KindAnnouncement}, Tags: nostr.TagMap{"d": {d}}}) {
		if a, err := nip34.ParseAnnouncement(evt); err == nil {
			out = append(out, a)
		}
	}
	for _, evt := range g.purg.Announcements(d) {
		if a, err := nip34.ParseAnnouncement(evt); err == nil {
			out = append(out, a)
		}
	}
	return out
}

// releaseRepo releases what the git data now in repo makes servable, and
// publishes it after the rules confirm it (bans and deletions re-checked).
func (g *grasp) releaseRepo(ctx context.Context, r purgatory.Repo) {
	if !g.repos.Exists(npub(r.Owner), r.Identifier) {
		return
	}
	has := func(oids []string) bool {
		m, err := g.repos.HasObjects(ctx, npub(r.Owner), r.Identifier, oids)
		return err == nil && allTrue(m, oids)
	}
	refs, err := g.repos.Refs(ctx, npub(r.Owner), r.Identifier)
	if err != nil {
		g.log.Error("read refs for release", "repo", r.Address(), "error", err)
		return
	}
	hasData := len(git.StateRefs(refs)) > 0
	evs, err := g.purg.Release(r, hasData, has)
	if err != nil {
		g.log.Error("release from purgatory", "repo", r.Address(), "error", err)
	}
	// In release order (announcement first, so the events after it pass
	// their re-check), each event is re-checked, its git side made right,
	// then published: a client that sees a released state or PR can fetch
	// its refs at once.
	var newest *nostr.Event
	for _, evt := range evs {
		if evt.Kind == nip34.KindState && (newest == nil || evt.CreatedAt > newest.CreatedAt) {
			newest = evt
		}
	}
	for _, evt := range evs {
		d := g.rules.Decide(ctx, evt, policy.Meta{Source: policy.SourcePurgatory, ReceivedAt: g.clk.Now()})
		if d.Outcome != policy.Store {
			g.log.Info("released event refused on re-check", "id", evt.ID, "msg", d.Msg)
			continue
		}
		switch evt.Kind {
		case nip34.KindState:
			if evt == newest {
				g.alignLatest(ctx, r, evt)
			}
		case nip34.KindPR, nip34.KindPRUpdate:
			if pr, err := nip34.ParsePR(evt); err == nil {
				g.bindNostrRef(ctx, nip34.RepoRef{Pubkey: r.Owner, Identifier: r.Identifier}, evt.ID, pr.Tip)
			}
		}
		if err := g.publish(ctx, evt); err != nil {
			g.log.Error("publish released event", "id", evt.ID, "error", err)
			continue
		}
		g.log.Debug("released from purgatory", "id", evt.ID, "kind", evt.Kind)
		if g.hunter != nil {
			g.hunter.ForgetEvent(r, evt.ID)
		}
	}
}

// adopt brings a newly announced repo to the latest authoritative state when
// the data is already on this server — in the repo itself (announced again)
// or in another maintainer's copy (objects shared through alternates) —
// and releases what that makes servable (G01-G4 part 3 for maintainers who
// announce after the push).
func (g *grasp) adopt(ctx context.Context, r purgatory.Repo) {
	st, ok := g.latestState(ctx, r)
	if !ok {
		return
	}
	oids := values(st.Refs)
	if has, err := g.repos.HasObjects(ctx, npub(r.Owner), r.Identifier, oids); err == nil && allTrue(has, oids) {
		g.alignLatest(ctx, r)
		g.releaseRepo(ctx, r)
		return
	}
	for _, o := range g.authoritativeOwners(ctx, st.Author, r.Identifier) {
		if o == r.Owner || !g.repos.Exists(npub(o), r.Identifier) {
			continue
		}
		has, err := g.repos.HasObjects(ctx, npub(o), r.Identifier, oids)
		if err != nil || !allTrue(has, oids) {
			continue
		}
		if err := g.repos.Propagate(ctx, npub(o), []string{npub(r.Owner)}, r.Identifier, st.Refs, st.HEAD); err != nil {
			g.log.Error("bring a newly announced repo to its state", "repo", r.Address(), "from", o, "error", err)
			return
		}
		g.releaseRepo(ctx, r)
		return
	}
}

func (g *grasp) evictAnnouncement(ctx context.Context, ref nip34.RepoRef) {
	r := repoOf(ref)
	for _, e := range g.purg.Find(func(e *purgatory.Entry) bool { return e.Event.Kind == nip34.KindAnnouncement && e.Repo == r }) {
		if _, err := g.purg.Remove(e.Event.ID, "evicted"); err != nil {
			g.log.Error("evict held announcement", "repo", r.Address(), "error", err)
		}
	}
	g.retireRepo(ctx, ref, "held announcement evicted")
	g.unsync(ctx, ref)
}

// retireRepo removes a bare repo that is no longer announced here. Only
// repos without refs are removed; a repo with data is kept for the
// operator (grasp.md §9.4 asks for archival, not deletion, of such data).
func (g *grasp) retireRepo(ctx context.Context, ref nip34.RepoRef, why string) {
	owner, d := npub(ref.Pubkey), ref.Identifier
	if !g.repos.Exists(owner, d) {
		return
	}
	refs, err := g.repos.Refs(ctx, owner, d)
	if err != nil {
		g.log.Error("read refs before retiring repo", "repo", ref.String(), "error", err)
		return
	}
	if len(refs) > 0 {
		g.log.Info("repo no longer announced here; keeping its git data", "repo", ref.String(), "why", why)
		return
	}
	if err := g.repos.Delete(ctx, owner, d); err != nil {
		g.log.Error("remove bare repo", "repo", ref.String(), "error", err)
		return
	}
	g.log.Info("removed empty bare repo", "repo", ref.String(), "why", why)
}

// applyDeletion removes held entries a NIP-09 request by their author
// names; an announcement removed that way also loses its empty bare repo.
func (g *grasp) applyDeletion(ctx context.Context, del *nostr.Event) {
	var ids, addrs []string
	for _, t := range del.Tags {
		if len(t) < 2 {
			continue
		}
		switch t[0] {
		case "e":
			ids = append(ids, t[1])
		case "a":
			addrs = append(addrs, t[1])
		}
	}
	removed, err := g.purg.DeleteRequested(del.PubKey, ids, addrs, del.CreatedAt.Time())
	if err != nil {
		g.log.Error("apply deletion to purgatory", "id", del.ID, "error", err)
	}
	for _, e := range removed {
		if e.Event.Kind == nip34.KindAnnouncement {
			g.retireRepo(ctx, nip34.RepoRef{Pubkey: e.Repo.Owner, Identifier: e.Repo.Identifier}, "announcement deleted by its author")
		}
	}
	// a deleted stored announcement (the store already dropped it) or a
	// held one: sync of that repo stops unless another version remains
	for _, a := range addrs {
		if ref, err := nip34.ParseRepoRef(a); err == nil && ref.Pubkey == del.PubKey {
			g.unsync(ctx, ref)
		}
	}
}

// unsync stops GRASP-02 sync of a repo whose announcement is gone from both
// the store and purgatory.
func (g *grasp) unsync(ctx context.Context, ref nip34.RepoRef) {
	if g.forgetRepo == nil {
		return
	}
	if len(g.query(ctx, nostr.Filter{Kinds: []int{nip34.KindAnnouncement}, Authors: []string{ref.Pubkey}, Tags: nostr.TagMap{"d": {ref.Identifier}}})) > 0 ||
		g.purg.HasAnnouncement(repoOf(ref)) {
		return
	}
	g.forgetRepo(ref.String())
}

// ---- refs/nostr/<id> (G01-G5) ------------------------------------------

// settlePlaceholders resolves refs pushed git-first for PR evt: a ref at the
// PR's tip is kept (bound), a ref at another commit is deleted (G01-G5c).
// tip "" means the tip is not present (the PR is held): every placeholder
// ref that does not point at the PR's `c` is deleted.
func (g *grasp) settlePlaceholders(ctx context.Context, evt *nostr.Event, tip string) {
	phs, err := g.purg.TakePlaceholders(evt.ID)
	if err != nil {
		g.log.Error("take placeholders", "id", evt.ID, "error", err)
		return
	}
	want := tip
	if want == "" {
		if pr, err := nip34.ParsePR(evt); err == nil {
			want = pr.Tip
		}
	}
	for _, ph := range phs {
		if ph.Commit == want {
			continue
		}
		if err := g.repos.DeleteRef(ctx, npub(ph.Repo.Owner), ph.Repo.Identifier, "refs/nostr/"+evt.ID, ph.Commit); err != nil {
			g.log.Warn("delete refs/nostr placeholder at the wrong tip", "id", evt.ID, "error", err)
		}
	}
}

// bindNostrRef points refs/nostr/<id> at tip in every repo of the PR's
// repository (the announced repo and its maintainers' repos here) that has
// the commit.
func (g *grasp) bindNostrRef(ctx context.Context, repo nip34.RepoRef, id, tip string) {
	for _, o := range g.authoritativeOwners(ctx, repo.Pubkey, repo.Identifier) {
		owner := npub(o)
		has, err := g.repos.HasObjects(ctx, owner, repo.Identifier, []string{tip})
		if err != nil || !has[tip] {
			continue
		}
		if err := g.repos.SetRef(ctx, owner, repo.Identifier, "refs/nostr/"+id, tip, ""); err != nil {
			g.log.Warn("bind refs/nostr", "id", id, "repo", o+"/"+repo.Identifier, "error", err)
		}
	}
}

// ---- answers for the rules and the git handler -------------------------

// QueryHeld is policy.Held.
func (g *grasp) QueryHeld(_ context.Context, f nostr.Filter) ([]*nostr.Event, error) {
	es := g.purg.Find(func(e *purgatory.Entry) bool { return f.Matches(e.Event) })
	out := make([]*nostr.Event, len(es))
	for i := range es {
		out[i] = es[i].Event
	}
	return out, nil
}

// HasCommit is policy.GitData.
func (g *grasp) HasCommit(ctx context.Context, ownerHex, d, oid string) (bool, error) {
	owner := npub(ownerHex)
	if !g.repos.Exists(owner, d) {
		return false, nil
	}
	m, err := g.repos.HasObjects(ctx, owner, d, []string{oid})
	if err != nil {
		return false, err
	}
	return m[oid], nil
}

// States is git.Authority: the states authoritative for owner's repo d,
// from purgatory and from the store, so a re-published state can heal a
// repo whose data was lost (grasp.md §10 item 6).
func (g *grasp) States(ctx context.Context, owner, d string) ([]git.StateCandidate, error) {
	ownerHex, err := git.DecodeNpub(owner)
	if err != nil {
		return nil, err
	}
	anns := g.announcements(ctx, d)
	maint := g.maintainers(ownerHex, d, anns)
	var evs []*nostr.Event
	evs = append(evs, g.query(ctx, nostr.Filter{Kinds: []int{nip34.KindState}, Tags: nostr.TagMap{"d": {d}}})...)
	evs = append(evs, g.purg.States(d)...)
	var out []git.StateCandidate
	for _, evt := range evs {
		if !maint[evt.PubKey] {
			continue
		}
		st, err := nip34.ParseState(evt)
		if err != nil {
			continue
		}
		refs, head := stateRefs(st)
		out = append(out, git.StateCandidate{EventID: evt.ID, Author: evt.PubKey, CreatedAt: int64(evt.CreatedAt), Refs: refs, HEAD: head})
	}
	return out, nil
}

// PRTip is git.Authority: the `c` of a known PR or PR update.
func (g *grasp) PRTip(ctx context.Context, id string) (string, bool, error) {
	var evt *nostr.Event
	if e, ok := g.purg.Get(id); ok {
		evt = e.Event
	} else if evs := g.query(ctx, nostr.Filter{IDs: []string{id}}); len(evs) > 0 {
		evt = evs[0]
	}
	if evt == nil || (evt.Kind != nip34.KindPR && evt.Kind != nip34.KindPRUpdate) {
		return "", false, nil
	}
	pr, err := nip34.ParsePR(evt)
	if err != nil {
		return "", false, nil
	}
	return pr.Tip, true, nil
}

// OnPush is git.Hooks: after a successful receive-pack, release what the
// new data makes servable, record git-first PR refs, and bring the other
// maintainers' repos here to the same state (G01-G4).
func (g *grasp) OnPush(ctx context.Context, res git.PushResult) {
	ownerHex, err := git.DecodeNpub(res.Owner)
	if err != nil {
		return
	}
	repo := purgatory.Repo{Owner: ownerHex, Identifier: res.Identifier}
	for _, ph := range res.Placeholders {
		if err := g.purg.AddPlaceholder(repo, ph.EventID, ph.Tip); err != nil {
			g.log.Error("record refs/nostr placeholder", "id", ph.EventID, "error", err)
		}
	}
	owners := []string{ownerHex}
	if res.State != nil {
		owners = g.authoritativeOwners(ctx, res.State.Author, res.Identifier)
		g.propagate(ctx, ownerHex, res.Identifier, res.State.Refs, res.State.HEAD, owners)
	}
	g.releaseRepo(ctx, repo)
	for _, o := range owners {
		if o != ownerHex {
			g.releaseRepo(ctx, purgatory.Repo{Owner: o, Identifier: res.Identifier})
		}
	}
}

// sweep expires held events and placeholders; an expired announcement's
// empty bare repo is removed (G01-P5), an expired placeholder ref deleted
// (G01-G5f).
func (g *grasp) sweep(ctx context.Context) error {
	expired, phs, err := g.purg.Sweep()
	for _, e := range expired {
		g.log.Info("expired from purgatory without git data", "id", e.Event.ID, "kind", e.Event.Kind)
		if g.hunter != nil {
			g.hunter.ForgetEvent(e.Repo, e.Event.ID)
		}
		if e.Event.Kind == nip34.KindAnnouncement {
			ref := nip34.RepoRef{Pubkey: e.Repo.Owner, Identifier: e.Repo.Identifier}
			g.retireRepo(ctx, ref, "announcement expired from purgatory")
			g.unsync(ctx, ref)
		}
	}
	for _, ph := range phs {
		if err := g.repos.DeleteRef(ctx, npub(ph.Repo.Owner), ph.Repo.Identifier, "refs/nostr/"+ph.EventID, ph.Commit); err != nil {
			g.log.Warn("delete expired refs/nostr placeholder", "id", ph.EventID, "error", err)
		}
	}
	return err
}

// maintainRepos runs git's own housekeeping (gc --auto) on every hosted
// repository.
func (g *grasp) maintainRepos(ctx context.Context) error {
	owners, err := os.ReadDir(g.repos.Root())
	if err != nil {
		return err
	}
	for _, o := range owners {
		if !o.IsDir() || !strings.HasPrefix(o.Name(), "npub1") {
			continue
		}
		repos, _ := os.ReadDir(filepath.Join(g.repos.Root(), o.Name()))
		for _, r := range repos {
			id, ok := strings.CutSuffix(r.Name(), ".git")
			if !ok || !r.IsDir() {
				continue
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := g.repos.Maintain(ctx, o.Name(), id); err != nil {
				g.log.Warn("git maintenance", "repo", o.Name()+"/"+id, "error", err)
			}
		}
	}
	return nil
}

// ---- helpers ----------------------------------------------------------

func (g *grasp) query(ctx context.Context, f nostr.Filter) []*nostr.Event {
	ch, err := g.store.QueryEvents(ctx, f)
	if err != nil {
		g.log.Error("query store", "error", err)
		return nil
	}
	var out []*nostr.Event
	for evt := range ch {
		out = append(out, evt)
	}
	return out
}

func repoOf(r nip34.RepoRef) purgatory.Repo {
	return purgatory.Repo{Owner: r.Pubkey, Identifier: r.Identifier}
}

func npub(hex string) string {
	n, err := git.EncodeNpub(hex)
	if err != nil {
		return hex
	}
	return n
}

// stateRefs returns a state's refs (refs/heads/*, refs/tags/*) and HEAD
// target in the form the git package uses.
func stateRefs(st nip34.State) (map[string]string, string) {
	refs := map[string]string{}
	for name, oid := range st.Refs {
		if strings.HasPrefix(name, "refs/heads/") || strings.HasPrefix(name, "refs/tags/") {
			refs[name] = oid
		}
	}
	return refs, st.HEAD
}

func values(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func allTrue(m map[string]bool, keys []string) bool {
	for _, k := range keys {
		if !m[k] {
			return false
		}
	}
	return true
}
