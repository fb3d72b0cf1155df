package visibility

import (
	"context"
	"testing"

	"github.com/fiatjaf/eventstore/slicestore"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/internal/memkv"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/roster"
	"github.com/grasp-dev/grasp/internal/testkit"
)

type key = testkit.Key

type rig struct {
	t       *testing.T
	store   *slicestore.SliceStore
	records *memkv.Privacy
	ts      nostr.Timestamp
}

func newRig(t *testing.T) *rig {
	st := &slicestore.SliceStore{MaxLimit: 100000}
	if err := st.Init(); err != nil {
		t.Fatal(err)
	}
	return &rig{t: t, store: st, records: &memkv.Privacy{}, ts: 1_700_000_000}
}

func (r *rig) event(k key, kind int, tags ...nostr.Tag) *nostr.Event {
	r.t.Helper()
	r.ts++
	evt := &nostr.Event{Kind: kind, Tags: nostr.Tags(tags), CreatedAt: r.ts}
	if err := evt.Sign(k.SK); err != nil {
		r.t.Fatal(err)
	}
	return evt
}

// stored saves evt as the relay does: v records it first, then it is
// stored, then v observes it (the OnStored hook).
func (r *rig) stored(v *Visibility, evt *nostr.Event) *nostr.Event {
	r.t.Helper()
	if v != nil {
		if err := v.Record(context.Background(), evt); err != nil {
			r.t.Fatal(err)
		}
	}
	ctx := context.Background()
	if nostr.IsAddressableKind(evt.Kind) {
		// replaced by hand: slicestore's ReplaceEvent deletes while its own
		// query goroutine still reads (a data race)
		ch, err := r.store.QueryEvents(ctx, nostr.Filter{Kinds: []int{evt.Kind}, Authors: []string{evt.PubKey}, Tags: nostr.TagMap{"d": {evt.Tags.GetD()}}})
		if err != nil {
			r.t.Fatal(err)
		}
		var old []*nostr.Event
		for e := range ch {
			old = append(old, e)
		}
		for _, e := range old {
			if err := r.store.DeleteEvent(ctx, e); err != nil {
				r.t.Fatal(err)
			}
		}
	}
	if err := r.store.SaveEvent(ctx, evt); err != nil {
		r.t.Fatal(err)
	}
	if v != nil {
		v.Observe(evt)
	}
	return evt
}

type hosted []nip34.RepoRef

func (h hosted) List(context.Context) ([]nip34.RepoRef, error) { return h, nil }

func (r *rig) visibility(opts Options) *Visibility {
	r.t.Helper()
	src, err := roster.New(roster.Options{Events: r.store}, env.Env{})
	if err != nil {
		r.t.Fatal(err)
	}
	opts.Roster, opts.Events = src, r.store
	if opts.Records == nil {
		opts.Records = r.records
	}
	opts.Offered = true
	if opts.Hosted == nil {
		opts.Hosted = hosted{}
	}
	v, err := New(opts, env.Env{})
	if err != nil {
		r.t.Fatal(err)
	}
	if err := v.Load(context.Background()); err != nil {
		r.t.Fatal(err)
	}
	return v
}

func admits(who func(string) bool, pk string) bool { return who == nil || who(pk) }

func coord(k key, d string) string { return nip34.RepoRef{Pubkey: k.PK, Identifier: d}.String() }

// G08-2: a repository is private when a confirmed maintainer's
// announcement says so (here the co-maintainer's, not the owner's); its
// announcements, states, issues (by a), comments (by E) and deletions (by
// e) are read by the roster and the configured members only; events of
// other repositories stay public; an event naming a public and a private
// repository needs a reader of the private one; filters naming it by #a or
// authors+#d are refused to non-readers.
func TestG08_2_PrivateRepositoryAudience(t *testing.T) {
	r := newRig(t)
	owner, co, staff, stranger := testkit.NewKey(t), testkit.NewKey(t), testkit.NewKey(t), testkit.NewKey(t)
	v := r.visibility(Options{Members: []string{staff.PK}})
	ann := r.stored(v, r.event(owner, 30617, nostr.Tag{"d", "vault"}, nostr.Tag{"maintainers", co.PK}))
	if v.Restricting() {
		t.Fatal("restricting with no private announcement")
	}
	if who := v.Readers(context.Background(), ann); who != nil {
		t.Fatal("public announcement has an audience")
	}
	coAnn := r.stored(v, r.event(co, 30617, nostr.Tag{"d", "vault"}, nostr.Tag{"maintainers", owner.PK}, nostr.Tag{"private", "true"}))
	pubAnn := r.stored(v, r.event(stranger, 30617, nostr.Tag{"d", "open"}))
	state := r.stored(v, r.event(owner, 30618, nostr.Tag{"d", "vault"}, nostr.Tag{"refs/heads/main", "aa"}))
	issue := r.stored(v, r.event(stranger, 1621, nostr.Tag{"a", coord(owner, "vault")}))
	comment := r.stored(v, r.event(stranger, 1111, nostr.Tag{"E", issue.ID}))
	del := r.stored(v, r.event(stranger, 5, nostr.Tag{"e", comment.ID}))
	mixed := r.stored(v, r.event(stranger, 1621, nostr.Tag{"a", coord(stranger, "open")}, nostr.Tag{"a", coord(co, "vault")}))
	openIssue := r.stored(v, r.event(co, 1621, nostr.Tag{"a", coord(stranger, "open")}))
	ctx := context.Background()
	for name, evt := range map[string]*nostr.Event{"owner's announcement": ann, "flagged announcement": coAnn,
		"state": state, "issue": issue, "comment": comment, "deletion": del, "mixed": mixed} {
		who := v.Readers(ctx, evt)
		if who == nil {
			t.Errorf("%s: public", name)
			continue
		}
		for _, pk := range []string{owner.PK, co.PK, staff.PK} {
			if !who(pk) {
				t.Errorf("%s: reader %s refused", name, pk[:8])
			}
		}
		if who(stranger.PK) || who("") {
			t.Errorf("%s: a stranger or an unauthenticated client reads it", name)
		}
	}
	for name, evt := range map[string]*nostr.Event{"other repository": pubAnn, "its issue": openIssue} {
		if who := v.Readers(ctx, evt); !admits(who, "") {
			t.Errorf("%s: not public", name)
		}
	}
	for name, f := range map[string]nostr.Filter{
		"#a":        {Tags: nostr.TagMap{"a": {coord(owner, "vault")}}},
		"authors+d": {Authors: []string{co.PK}, Tags: nostr.TagMap{"d": {"vault"}}},
	} {
		who := v.Named(ctx, f)
		if admits(who, stranger.PK) || !admits(who, co.PK) {
			t.Errorf("filter %s: stranger admitted or maintainer refused", name)
		}
	}
	if who := v.Named(ctx, nostr.Filter{Kinds: []int{1621}}); who != nil {
		t.Error("a filter naming no repository is refused")
	}
	if v.Listed(ctx, nip34.RepoRef{Pubkey: owner.PK, Identifier: "vault"}) || !v.Listed(ctx, nip34.RepoRef{Pubkey: stranger.PK, Identifier: "open"}) {
		t.Error("Listed shows the private repository or hides the public one")
	}
	// writes follow reads: a stranger may not post into it
	if v.MayWrite(ctx, stranger.PK, r.event(stranger, 1621, nostr.Tag{"a", coord(owner, "vault")})) {
		t.Error("a stranger may write into the private repository")
	}
	if !v.MayWrite(ctx, co.PK, r.event(co, 1621, nostr.Tag{"a", coord(owner, "vault")})) {
		t.Error("a maintainer may not write into its repository")
	}

	// a restart: Load finds the flag in the store
	v2 := r.visibility(Options{})
	if who := v2.Readers(ctx, issue); admits(who, stranger.PK) || !admits(who, owner.PK) {
		t.Error("after a restart the private repository's issue is readable by a stranger, or not by its owner")
	}
}

// G08-2: kind 10318 is read by its author alone, whatever else is private.
func TestG08_2_PrivateServerListAudience(t *testing.T) {
	r := newRig(t)
	author, staff := testkit.NewKey(t), testkit.NewKey(t)
	v := r.visibility(Options{Members: []string{staff.PK}})
	list := r.event(author, nip34.KindPrivateGraspList)
	who := v.Readers(context.Background(), list)
	if who == nil || !who(author.PK) || who(staff.PK) || who("") {
		t.Fatal("kind 10318 is not its author's alone")
	}
	if v.MayWrite(context.Background(), "", list) || v.MayWrite(context.Background(), staff.PK, list) || !v.MayWrite(context.Background(), author.PK, list) {
		t.Fatal("kind 10318 is written by someone other than its authenticated author")
	}
}

// G08-6: in service-wide mode every event needs a member: a configured
// key, or a confirmed maintainer of a hosted repository; a key a hosted
// repository invites may publish its own announcement (to list back), and
// nothing else.
func TestG08_6_ServiceWideMembers(t *testing.T) {
	r := newRig(t)
	admin, invitee, stranger := testkit.NewKey(t), testkit.NewKey(t), testkit.NewKey(t)
	v := r.visibility(Options{ServiceWide: true, Members: []string{admin.PK}, Hosted: hosted{{Pubkey: admin.PK, Identifier: "team"}}})
	ctx := context.Background()
	r.stored(v, r.event(admin, 30617, nostr.Tag{"d", "team"}, nostr.Tag{"maintainers", invitee.PK}))
	note := r.event(stranger, nip34.KindGraspList, nostr.Tag{"g", "wss://x"})
	if who := v.Readers(ctx, note); admits(who, stranger.PK) || !admits(who, admin.PK) || admits(who, "") {
		t.Fatal("service-wide: a non-member reads, or the member does not")
	}
	back := r.event(invitee, 30617, nostr.Tag{"d", "team"}, nostr.Tag{"maintainers", admin.PK})
	if !v.MayWrite(ctx, invitee.PK, back) {
		t.Fatal("the invitee may not list back")
	}
	if v.MayWrite(ctx, invitee.PK, r.event(invitee, 1621, nostr.Tag{"a", coord(admin, "team")})) {
		t.Fatal("the invitee may write before it is a member")
	}
	if v.MayWrite(ctx, stranger.PK, r.event(stranger, 30617, nostr.Tag{"d", "team"})) {
		t.Fatal("an uninvited key may publish an announcement")
	}
	r.stored(v, back)
	if who := v.Readers(ctx, note); !admits(who, invitee.PK) {
		t.Fatal("the confirmed maintainer is not a member")
	}
}
