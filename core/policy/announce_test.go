package policy

import (
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/nip34"
)

func TestG01P1_NewAnnouncementIsHeldWithBareRepo(t *testing.T) {
	e := newEnv(t, nil)
	d := e.decide(e.ann(pkA, "my repo 🚀", true))
	want(t, d, Hold, MsgPurgatory)
	if d.Msg != "purgatory: won't be served until git data arrives" {
		t.Fatalf("msg %q", d.Msg)
	}
	wantEffect(t, d, CreateRepo, repo(pkA, "my repo 🚀"))
}

func TestG01R2_AnnouncementMustListService(t *testing.T) {
	e := newEnv(t, nil)
	good := e.svc.CloneURL(pkA, "r")
	cases := []struct {
		name          string
		clone, relays []string
		ok            bool
		missing       string
	}{
		{"missing clone", []string{"https://github.com/x.git"}, []string{"ws://127.0.0.1:7334"}, false, "'clone'"},
		{"missing relays", []string{good}, []string{"wss://relay.damus.io"}, false, "'relays'"},
		{"neither", nil, nil, false, "'clone' URL " + good + " and a 'relays'"},
		{"look-alike host", []string{"http://127.0.0.1:7334.evil.com/x.git"}, []string{"ws://127.0.0.1:7334.evil.com"}, false, "'clone'"},
		{"host in path", []string{"http://evil.com/127.0.0.1:7334/x.git"}, []string{"ws://evil.com/127.0.0.1:7334"}, false, "'clone'"},
		{"userinfo trick", []string{"http://127.0.0.1:7334@evil.com/x.git"}, []string{"ws://127.0.0.1:7334@evil.com"}, false, "'clone'"},
		{"trailing slash relay", []string{good}, []string{"ws://127.0.0.1:7334/"}, true, ""},
		{"multi-value and repeated tags", []string{"https://x/y.git", good}, []string{"wss://a", "ws://127.0.0.1:7334"}, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tags := [][]string{{"d", "r"}}
			for _, u := range c.clone {
				tags = append(tags, []string{"clone", u})
			}
			if len(c.relays) > 0 {
				tags = append(tags, append([]string{"relays"}, c.relays...))
			}
			d := e.decide(e.event(nip34.KindAnnouncement, pkA, tags...))
			if c.ok {
				want(t, d, Hold, "purgatory:")
				return
			}
			want(t, d, Rejected, "invalid: announcement must list this service")
			if !strings.Contains(d.Msg, c.missing) {
				t.Fatalf("msg %q does not name %q", d.Msg, c.missing)
			}
			wantNoEffect(t, d, CreateRepo)
		})
	}
}

func TestG01R2_InvalidIdentifierRejected(t *testing.T) {
	e := newEnv(t, nil)
	for _, d := range []string{"", ".", "..", "a/b", "a\\b", "a\x00b"} {
		got := e.decide(e.event(nip34.KindAnnouncement, pkA, []string{"d", d}, []string{"clone", e.svc.CloneURL(pkA, "x")}, []string{"relays", e.svc.RelayURL()}))
		want(t, got, Rejected, "invalid: repository announcement: invalid identifier")
	}
}

func TestG01R2x_MaintainerAnnouncementAcceptedWithoutRepo(t *testing.T) {
	e := newEnv(t, nil)
	e.stored(e.ann(pkA, "r", true, pkB))
	// maintainers-v3.md §3 [R]: an invitee's acceptance (it lists A back)
	// is kept although it does not list this service. (Before v3 any
	// announcement by a key A listed was kept; the inviters are now found
	// from the keys the announcement names, by author.)
	d := e.decide(e.ann(pkB, "r", false, pkA, pkC))
	want(t, d, Store, "")
	wantEffect(t, d, NoRepo, repo(pkB, "r"))
	wantNoEffect(t, d, CreateRepo)

	// Recursive: C is invited by B, who is invited by A; C lists B back.
	e.stored(e.ann(pkB, "r", false, pkA, pkC))
	d = e.decide(e.ann(pkC, "r", false, pkB))
	want(t, d, Store, "")
	wantEffect(t, d, NoRepo, repo(pkC, "r"))

	// A stranger, and a maintainer of a different identifier, are refused.
	want(t, e.decide(e.ann(pkX, "r", false)), Rejected, "invalid:")
	want(t, e.decide(e.ann(pkX, "r", false, pkA)), Rejected, "invalid:")
	want(t, e.decide(e.ann(pkB, "other", false, pkA)), Rejected, "invalid:")
}

func TestG01R2x_MaintainerOfHeldRepoIsHeldWithIt(t *testing.T) {
	e := newEnv(t, nil)
	e.hold(e.ann(pkA, "r", true, pkB))
	// B's acceptance lists A back (maintainers-v3.md §3 [R]).
	d := e.decide(e.ann(pkB, "r", false, pkA))
	want(t, d, Hold, "purgatory:")
	wantEffect(t, d, NoRepo, repo(pkB, "r"))
	wantEffect(t, d, AwaitRepo, repo(pkA, "r"))
}

func TestG01P6_Replacements(t *testing.T) {
	t.Run("of a stored announcement is stored", func(t *testing.T) {
		e := newEnv(t, nil)
		e.stored(e.ann(pkA, "r", true))
		d := e.decide(e.ann(pkA, "r", true, pkB))
		want(t, d, Store, "")
		wantNoEffect(t, d, CreateRepo)
	})
	t.Run("of a held announcement replaces the held entry", func(t *testing.T) {
		e := newEnv(t, nil)
		e.hold(e.ann(pkA, "r", true))
		d := e.decide(e.ann(pkA, "r", true, pkB))
		want(t, d, Hold, "purgatory:")
		wantEffect(t, d, ReplaceHeld, repo(pkA, "r"))
		wantNoEffect(t, d, CreateRepo)
	})
	t.Run("held replacement dropping the service evicts", func(t *testing.T) {
		e := newEnv(t, nil)
		e.hold(e.ann(pkA, "r", true))
		d := e.decide(e.ann(pkA, "r", false))
		want(t, d, Rejected, "invalid: announcement must list this service")
		wantEffect(t, d, EvictHeld, repo(pkA, "r"))
		wantEffect(t, d, RemoveRepo, repo(pkA, "r"))
	})
	t.Run("stored replacement dropping the service retires the repo", func(t *testing.T) {
		e := newEnv(t, nil)
		e.stored(e.ann(pkA, "r", true))
		d := e.decide(e.ann(pkA, "r", false))
		want(t, d, Rejected, "invalid:")
		wantEffect(t, d, RemoveRepo, repo(pkA, "r"))
		wantNoEffect(t, d, EvictHeld)
	})
	t.Run("maintainer dropping its own hosting keeps only the maintainer role", func(t *testing.T) {
		e := newEnv(t, nil)
		e.stored(e.ann(pkA, "r", true, pkB), e.ann(pkB, "r", true, pkA))
		// B keeps listing A back (maintainers-v3.md §3 [R]: it is A's
		// invitation that makes B's announcement worth keeping).
		d := e.decide(e.ann(pkB, "r", false, pkA))
		want(t, d, Store, "")
		wantEffect(t, d, RemoveRepo, repo(pkB, "r"))
		wantEffect(t, d, NoRepo, repo(pkB, "r"))
	})
	t.Run("maintainer starting to host gets a repo", func(t *testing.T) {
		e := newEnv(t, nil)
		e.stored(e.ann(pkA, "r", true, pkB), e.ann(pkB, "r", false))
		d := e.decide(e.ann(pkB, "r", true))
		want(t, d, Store, "")
		wantEffect(t, d, CreateRepo, repo(pkB, "r"))
	})
	t.Run("duplicate in purgatory", func(t *testing.T) {
		e := newEnv(t, nil)
		a := e.ann(pkA, "r", true)
		e.hold(a)
		want(t, e.decide(a), Shadow, "duplicate: in purgatory")
	})
	t.Run("older version changes nothing", func(t *testing.T) {
		e := newEnv(t, nil)
		old := e.ann(pkA, "r", false)
		e.stored(e.ann(pkA, "r", true))
		d := e.decide(old)
		want(t, d, Shadow, "duplicate:")
		if len(d.Effects) != 0 {
			t.Fatalf("stale version produced effects %v", d.Effects)
		}
	})
}

func TestG01R3_RepositoryListsAndQuota(t *testing.T) {
	npubA := nip34.Npub(pkA)
	t.Run("whitelist miss", func(t *testing.T) {
		e := newEnv(t, func(o *Options) { o.RepoWhitelist = []string{npubA + "/allowed"} })
		want(t, e.decide(e.ann(pkA, "allowed", true)), Hold, "purgatory:")
		d := e.decide(e.ann(pkA, "other", true))
		want(t, d, Rejected, "restricted: repository "+npubA+"/other is not on this server's whitelist")
	})
	t.Run("whitelist by owner and by identifier", func(t *testing.T) {
		e := newEnv(t, func(o *Options) { o.RepoWhitelist = []string{npubA, "shared"} })
		want(t, e.decide(e.ann(pkA, "anything", true)), Hold, "purgatory:")
		want(t, e.decide(e.ann(pkB, "shared", true)), Hold, "purgatory:")
		want(t, e.decide(e.ann(pkB, "mine", true)), Rejected, "restricted:")
	})
	t.Run("blacklist beats whitelist", func(t *testing.T) {
		e := newEnv(t, func(o *Options) { o.RepoWhitelist = []string{npubA}; o.RepoBlacklist = []string{"bad"} })
		want(t, e.decide(e.ann(pkA, "bad", true)), Rejected, "blocked: repository identifier bad is blacklisted")
	})
	t.Run("blacklisted owner", func(t *testing.T) {
		e := newEnv(t, func(o *Options) { o.RepoBlacklist = []string{pkB} })
		want(t, e.decide(e.ann(pkB, "x", true)), Rejected, "blocked: repository owner "+nip34.Npub(pkB))
	})
	t.Run("quota", func(t *testing.T) {
		e := newEnv(t, func(o *Options) { o.MaxReposPerPubkey = 2 })
		e.stored(e.ann(pkA, "one", true))
		e.hold(e.ann(pkA, "two", true))
		e.stored(e.ann(pkA, "not-hosted", false))
		want(t, e.decide(e.ann(pkA, "three", true)), Rejected, "restricted: "+npubA+" already hosts 2 repositories")
		// Replacing an existing one is not a new repository.
		want(t, e.decide(e.ann(pkA, "one", true, pkB)), Store, "")
		want(t, e.decide(e.ann(pkB, "three", true)), Hold, "purgatory:")
	})
	t.Run("bad list entries fail New", func(t *testing.T) {
		svc, _ := nip34.ParseService(publicURL)
		for _, o := range []Options{
			{Service: svc, RepoWhitelist: []string{"npub1bad/x"}},
			{Service: svc, RepoBlacklist: []string{"a/b/c"}},
			{Service: svc, EventBlacklist: []string{"nobody"}},
		} {
			o.Events = newEnv(t, nil).store
			if _, err := New(o, env.Env{}); err == nil {
				t.Fatalf("New accepted %+v", o)
			}
		}
	})
}

func TestG01R5_EventBlacklist(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.EventBlacklist = []string{nip34.Npub(pkX)} })
	msg := "blocked: event author " + nip34.Npub(pkX) + " is blacklisted"
	want(t, e.decide(e.ann(pkX, "r", true)), Rejected, msg)
	want(t, e.decide(e.event(nip34.KindDeletion, pkX, []string{"e", pkA})), Rejected, msg)
	want(t, e.decide(e.event(nip34.KindGraspList, pkX, []string{"g", "wss://x"})), Rejected, msg)
}

func TestG01P1_ReleaseStoresHeldAnnouncement(t *testing.T) {
	e := newEnv(t, nil)
	a := e.ann(pkA, "r", true)
	e.hold(a)
	d := e.release(a)
	want(t, d, Store, "")
}
