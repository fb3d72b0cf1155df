package visibility

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/internal/testkit"
)

// deleted removes evts from the store after recording and observing a
// deletion request by k, as the relay does.
func (r *rig) deleted(v *Visibility, k key, evts ...*nostr.Event) *nostr.Event {
	r.t.Helper()
	var tags []nostr.Tag
	for _, e := range evts {
		tags = append(tags, nostr.Tag{"e", e.ID})
	}
	del := r.event(k, 5, tags...)
	if err := v.Record(context.Background(), del); err != nil {
		r.t.Fatal(err)
	}
	for _, e := range evts {
		if err := r.store.DeleteEvent(context.Background(), e); err != nil {
			r.t.Fatal(err)
		}
	}
	r.stored(nil, del)
	v.Observe(del)
	return del
}

func reads(who func(string) bool, pk string) bool { return who == nil || who(pk) }

// Issue 23 part 1: a repository that was ever private stays private. The
// owner's announcement deleted, a routine re-announce without the flag,
// and a restart change nothing; the comment of a deleted issue stays
// private; only the owner's newer announcement with ["private","false"]
// makes the repository and its events public again.
func TestG08_PrivacyIsStickyUntilTheOwnerSaysPublic(t *testing.T) {
	r := newRig(t)
	owner, stranger := testkit.NewKey(t), testkit.NewKey(t)
	v := r.visibility(Options{})
	ctx := context.Background()
	ann := r.stored(v, r.event(owner, 30617, nostr.Tag{"d", "vault"}, nostr.Tag{"private", "true"}))
	issue := r.stored(v, r.event(owner, 1621, nostr.Tag{"a", coord(owner, "vault")}))
	comment := r.stored(v, r.event(owner, 1111, nostr.Tag{"E", issue.ID}, nostr.Tag{"e", issue.ID}))
	private := func(when string, v *Visibility) {
		t.Helper()
		for name, evt := range map[string]*nostr.Event{"issue": issue, "comment": comment} {
			who := v.Readers(ctx, evt)
			if reads(who, stranger.PK) || reads(who, "") || !reads(who, owner.PK) {
				t.Errorf("%s: %s: a stranger reads it, or its owner does not", when, name)
			}
		}
		who := v.RepoReaders(ctx, nip34.RepoRef{Pubkey: owner.PK, Identifier: "vault"})
		if reads(who, stranger.PK) || !reads(who, owner.PK) {
			t.Errorf("%s: the repository: a stranger reads it, or its owner does not", when)
		}
	}
	private("created", v)
	r.deleted(v, owner, issue)
	private("issue deleted", v)
	r.deleted(v, owner, ann)
	private("announcement deleted", v)
	r.stored(v, r.event(owner, 30617, nostr.Tag{"d", "vault"}))
	private("re-announced without the flag", v)
	private("restarted", r.visibility(Options{}))

	r.stored(v, r.event(owner, 30617, nostr.Tag{"d", "vault"}, nostr.Tag{"private", "false"}))
	if who := v.Readers(ctx, comment); who != nil {
		t.Error("the owner's explicit public announcement did not make the comment public")
	}
	if !v.Listed(ctx, nip34.RepoRef{Pubkey: owner.PK, Identifier: "vault"}) {
		t.Error("the owner's explicit public announcement did not make the repository public")
	}
	// and private again on a new flag, and so after a restart
	r.stored(v, r.event(owner, 30617, nostr.Tag{"d", "vault"}, nostr.Tag{"private", "true"}))
	private("private again", r.visibility(Options{}))
}

// Issue 23 part 1 and 3 (F21): a maintainer dropped from a private
// repository keeps its own copy private (it reads it, the owner and
// strangers do not), no longer reads the owner's, and is told (OnRevoke);
// an explicit public announcement by someone other than a copy's owner
// changes nothing for that copy; SetMembers removing a member tells it.
func TestG08_DroppedMaintainerAndRemovedMemberAreRevoked(t *testing.T) {
	r := newRig(t)
	owner, maint, staff, stranger := testkit.NewKey(t), testkit.NewKey(t), testkit.NewKey(t), testkit.NewKey(t)
	v := r.visibility(Options{Members: []string{staff.PK}})
	var mu sync.Mutex
	var told []string
	v.OnRevoke(func(keys []string) {
		mu.Lock()
		defer mu.Unlock()
		told = append(told, keys...)
	})
	ctx := context.Background()
	ownRef, copyRef := nip34.RepoRef{Pubkey: owner.PK, Identifier: "vault"}, nip34.RepoRef{Pubkey: maint.PK, Identifier: "vault"}
	r.stored(v, r.event(owner, 30617, nostr.Tag{"d", "vault"}, nostr.Tag{"private", "true"}, nostr.Tag{"maintainers", maint.PK}))
	r.stored(v, r.event(maint, 30617, nostr.Tag{"d", "vault"}, nostr.Tag{"maintainers", owner.PK}))
	if who := v.RepoReaders(ctx, copyRef); reads(who, stranger.PK) || !reads(who, owner.PK) || !reads(who, maint.PK) {
		t.Fatal("the maintainer's copy is not private to the roster")
	}
	r.stored(v, r.event(owner, 30617, nostr.Tag{"d", "vault"}, nostr.Tag{"private", "true"}))
	mu.Lock()
	if !slices.Contains(told, maint.PK) || !slices.Contains(told, owner.PK) {
		t.Errorf("revocations told %v: want the maintainer (of the owner's repository) and the owner (of the copy)", told)
	}
	told = nil
	mu.Unlock()
	for _, v := range []*Visibility{v, r.visibility(Options{Members: []string{staff.PK}})} {
		if who := v.RepoReaders(ctx, copyRef); reads(who, stranger.PK) || reads(who, owner.PK) || !reads(who, maint.PK) || !reads(who, staff.PK) {
			t.Error("the dropped maintainer's copy: not private to it (and the members) alone")
		}
		if who := v.RepoReaders(ctx, ownRef); reads(who, maint.PK) || !reads(who, owner.PK) {
			t.Error("the owner's repository: the dropped maintainer still reads it, or the owner does not")
		}
	}
	// the owner's word does not publish the copy
	r.stored(v, r.event(owner, 30617, nostr.Tag{"d", "vault"}, nostr.Tag{"private", "false"}))
	if v.Listed(ctx, copyRef) {
		t.Error("the owner's explicit public announcement published the dropped maintainer's copy")
	}
	v.SetMembers(nil)
	mu.Lock()
	if !slices.Equal(told, []string{staff.PK}) {
		t.Errorf("removing the member told %v", told)
	}
	mu.Unlock()
	if who := v.RepoReaders(ctx, copyRef); reads(who, staff.PK) {
		t.Error("a removed member still reads")
	}
}

// Issue 23 part 5: without the offer a new private repository is refused;
// one already private stays private and takes its owner's announcements.
func TestG08_NewPrivateRepositoryNeedsTheOffer(t *testing.T) {
	r := newRig(t)
	owner, other := testkit.NewKey(t), testkit.NewKey(t)
	v := r.visibility(Options{})
	r.stored(v, r.event(owner, 30617, nostr.Tag{"d", "vault"}, nostr.Tag{"private", "true"}))
	off := r.visibility(Options{})
	off.opts.Offered = false
	if off.Offered() {
		t.Fatal("offered without the switch")
	}
	err := off.Record(context.Background(), r.event(other, 30617, nostr.Tag{"d", "new"}, nostr.Tag{"private", "true"}))
	if err == nil || !strings.HasPrefix(err.Error(), "blocked:") {
		t.Fatalf("a new private repository without the offer: %v, want blocked:", err)
	}
	if err := off.Record(context.Background(), r.event(owner, 30617, nostr.Tag{"d", "vault"}, nostr.Tag{"private", "true"})); err != nil {
		t.Fatalf("the owner's re-announce of a private repository: %v", err)
	}
}

// Issue 23 part 1 (migration): a store written before the record gets it
// built at the first start, failing closed: a private announcement's
// repository is private, a hosted repository with no announcement is
// private to its owner, a comment whose issue is gone is private to its
// author, a comment on a public issue stays public.
func TestG08_MigrationBuildsTheRecordFailingClosed(t *testing.T) {
	r := newRig(t)
	owner, orphanOwner, author, stranger := testkit.NewKey(t), testkit.NewKey(t), testkit.NewKey(t), testkit.NewKey(t)
	ctx := context.Background()
	r.stored(nil, r.event(owner, 30617, nostr.Tag{"d", "vault"}, nostr.Tag{"private", "true"}))
	secretIssue := r.stored(nil, r.event(owner, 1621, nostr.Tag{"a", coord(owner, "vault")}))
	secretComment := r.stored(nil, r.event(owner, 1111, nostr.Tag{"E", secretIssue.ID}))
	r.stored(nil, r.event(author, 30617, nostr.Tag{"d", "open"}))
	openIssue := r.stored(nil, r.event(author, 1621, nostr.Tag{"a", coord(author, "open")}))
	openComment := r.stored(nil, r.event(author, 1111, nostr.Tag{"E", openIssue.ID}))
	goneIssue := r.event(author, 1621, nostr.Tag{"a", coord(orphanOwner, "gone")})
	orphanComment := r.stored(nil, r.event(author, 1111, nostr.Tag{"E", goneIssue.ID}))
	v := r.visibility(Options{Hosted: hosted{{Pubkey: orphanOwner.PK, Identifier: "gone"}, {Pubkey: author.PK, Identifier: "open"}}})
	if who := v.Readers(ctx, secretComment); reads(who, stranger.PK) || !reads(who, owner.PK) {
		t.Error("the private repository's comment: readable by a stranger, or not by its owner")
	}
	if who := v.RepoReaders(ctx, nip34.RepoRef{Pubkey: orphanOwner.PK, Identifier: "gone"}); reads(who, stranger.PK) || !reads(who, orphanOwner.PK) {
		t.Error("the hosted repository without an announcement is not private to its owner")
	}
	if who := v.Readers(ctx, orphanComment); reads(who, stranger.PK) || !reads(who, author.PK) {
		t.Error("the comment whose issue is gone is not private to its author")
	}
	if who := v.Readers(ctx, openComment); who != nil {
		t.Error("the comment of a public issue is not public")
	}
	if !v.Listed(ctx, nip34.RepoRef{Pubkey: author.PK, Identifier: "open"}) {
		t.Error("the public repository is not listed")
	}
}

// F27 at the decision: a PR of a private repository whose clone is this
// server's /prs/ makes that /prs/ repository private: its signer and the
// repository's readers read it, a stranger does not.
func TestG08_PRsRepositoryOfAPrivatePRIsPrivate(t *testing.T) {
	r := newRig(t)
	owner, signer, stranger := testkit.NewKey(t), testkit.NewKey(t), testkit.NewKey(t)
	svc, err := nip34.ParseService("https://git.example.com")
	if err != nil {
		t.Fatal(err)
	}
	v := r.visibility(Options{Service: svc})
	ctx := context.Background()
	r.stored(v, r.event(owner, 30617, nostr.Tag{"d", "vault"}, nostr.Tag{"private", "true"}, nostr.Tag{"maintainers", signer.PK}))
	r.stored(v, r.event(signer, 30617, nostr.Tag{"d", "vault"}, nostr.Tag{"maintainers", owner.PK}))
	prs := nip34.PRsRepo(signer.PK, "vault")
	if !v.Listed(ctx, prs) {
		t.Fatal("a /prs/ repository is private before any PR")
	}
	r.stored(v, r.event(signer, 1618, nostr.Tag{"a", coord(owner, "vault")}, nostr.Tag{"c", strings.Repeat("a", 40)},
		nostr.Tag{"clone", svc.PRsURL(signer.PK, "vault")}))
	who := v.RepoReaders(ctx, prs)
	if reads(who, stranger.PK) || !reads(who, signer.PK) || !reads(who, owner.PK) {
		t.Fatal("the /prs/ repository of a private PR: a stranger reads it, or its signer or the repository's owner does not")
	}
}
