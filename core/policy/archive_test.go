package policy

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/archive"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/nip34"
)

// withArchive builds the rig's rules with the GRASP-05 scope o.
func withArchive(t *testing.T, o archive.Options) func(*Options) {
	return func(opts *Options) {
		o.Service = opts.Service
		sc, err := archive.New(o, env.Env{})
		if err != nil {
			t.Fatal(err)
		}
		opts.Archive = sc
	}
}

// foreignAnn is an announcement of pk/d listing only other servers.
func (e *rig) foreignAnn(pk, d, host string, maintainers ...string) *nostr.Event {
	tags := [][]string{{"d", d}, {"clone", "https://" + host + "/" + nip34.Npub(pk) + "/" + d + ".git"}, {"relays", "wss://" + host}}
	if len(maintainers) > 0 {
		tags = append(tags, append([]string{"maintainers"}, maintainers...))
	}
	return e.event(nip34.KindAnnouncement, pk, tags...)
}

// G05-1: with archive mode off an announcement that does not list this
// server is refused; archive_all accepts it with a bare repo (held until
// its git data arrives, like any new repository).
func TestG05_1_ArchiveAllAcceptsAnnouncementsNotListingUs(t *testing.T) {
	off := newEnv(t, nil)
	want(t, off.decide(off.foreignAnn(pkA, "r", "git.example.org")), Rejected, "invalid: announcement must list this service")

	e := newEnv(t, withArchive(t, archive.Options{All: true, ReadOnly: true}))
	d := e.decide(e.foreignAnn(pkA, "r", "git.example.org"))
	want(t, d, Hold, MsgPurgatory)
	wantEffect(t, d, CreateRepo, repo(pkA, "r"))
	if !d.Archived {
		t.Fatal("decision not marked archived")
	}
	// read-only archive_all: one listing us is archived too
	if d := e.decide(e.ann(pkB, "r", true)); d.Outcome != Hold || !d.Archived {
		t.Fatalf("listing announcement under read-only archive_all: %s %q archived=%v", d.Outcome, d.Msg, d.Archived)
	}
	// a state of the archived repository is taken like any hosted one's
	e.hold(e.foreignAnn(pkA, "r", "git.example.org"))
	want(t, e.decide(e.state(pkA, "r", "refs/heads/main", oid('1'))), Hold, MsgPurgatory)
}

// G05-1/G05-2: the whitelist by owner, by coordinate (both forms) and by
// confirmed maintainer, archive_hosts, and the read-only archive refusing
// what lists it outside the scope.
func TestG05_1_G05_2_WhitelistAndHostsScope(t *testing.T) {
	pkM, pkO := strings.Repeat("d", 64), strings.Repeat("f", 64)
	e := newEnv(t, withArchive(t, archive.Options{
		Whitelist: []string{nip34.Npub(pkA), "30617:" + pkB + ":one", nip34.Npub(pkC) + "/two", pkM},
		Hosts:     []string{"relay.ngit.dev"},
		ReadOnly:  true,
	}))
	for _, c := range []struct {
		name string
		evt  *nostr.Event
		ok   bool
	}{
		{"owner", e.foreignAnn(pkA, "any", "git.example.org"), true},
		{"coordinate", e.foreignAnn(pkB, "one", "git.example.org"), true},
		{"other repo of a coordinate's owner", e.foreignAnn(pkB, "other", "git.example.org"), false},
		{"npub/identifier", e.foreignAnn(pkC, "two", "git.example.org"), true},
		{"listed host", e.foreignAnn(pkX, "h", "relay.ngit.dev"), true},
		{"other host", e.foreignAnn(pkX, "h", "relay.ngit.dev.evil.com"), false},
		{"maintainer not (yet) confirmed", e.foreignAnn(pkO, "proj", "git.example.org", pkM), false},
	} {
		d := e.decide(c.evt)
		if c.ok {
			want(t, d, Hold, MsgPurgatory)
			wantEffect(t, d, CreateRepo, repo(c.evt.PubKey, c.evt.Tags.GetD()))
			if !d.Archived {
				t.Fatalf("%s: not marked archived", c.name)
			}
			continue
		}
		want(t, d, Rejected, "invalid: announcement must list this service")
	}
	// The whitelisted key M lists O back: M is now a confirmed maintainer
	// of O's repository (nip34.Resolve), which is archived.
	e.stored(e.foreignAnn(pkM, "proj", "git.example.org", pkO))
	d := e.decide(e.foreignAnn(pkO, "proj", "git.example.org", pkM))
	want(t, d, Hold, MsgPurgatory)
	if !d.Archived {
		t.Fatal("maintained repository not marked archived")
	}
	// G05-2: a read-only archive refuses announcements that list it but
	// are outside its scope, saying so.
	d = e.decide(e.ann(pkX, "mine", true))
	want(t, d, Rejected, "restricted: this server is a read-only archive")
	if !strings.Contains(d.Msg, nip34.Npub(pkX)+"/mine") {
		t.Fatalf("refusal does not name the repository: %q", d.Msg)
	}
}

// With archive_read_only = false the server hosts as usual besides
// archiving: a listing announcement outside the scope is hosted (not
// archived), one in scope that does not list us is archived.
func TestG05_ReadWriteArchiveAlsoHosts(t *testing.T) {
	e := newEnv(t, withArchive(t, archive.Options{Whitelist: []string{pkA}}))
	d := e.decide(e.ann(pkX, "mine", true))
	want(t, d, Hold, MsgPurgatory)
	if d.Archived {
		t.Fatal("a listing repository outside the scope is not an archive")
	}
	if d := e.decide(e.foreignAnn(pkA, "r", "git.example.org")); d.Outcome != Hold || !d.Archived {
		t.Fatalf("in scope: %s %q archived=%v", d.Outcome, d.Msg, d.Archived)
	}
}

// Accept plugins see archived announcements like any other, with
// Meta.Archived (ctx.archived in JavaScript), and may refuse them.
func TestG05_PluginSeesArchivedFlag(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{}
	plugin := AcceptorFunc(func(_ context.Context, evt *nostr.Event, meta Meta) Verdict {
		mu.Lock()
		defer mu.Unlock()
		seen[evt.Tags.GetD()] = meta.Archived
		if meta.Archived && evt.Tags.GetD() == "unwanted" {
			return Verdict{Action: Reject, Msg: "restricted: not archived here"}
		}
		return Verdict{}
	})
	e := newEnv(t, func(o *Options) {
		withArchive(t, archive.Options{All: true})(o)
		o.Plugins = Chain{plugin}
	})
	want(t, e.decide(e.foreignAnn(pkA, "kept", "git.example.org")), Hold, MsgPurgatory)
	want(t, e.decide(e.ann(pkB, "listing", true)), Hold, MsgPurgatory)
	want(t, e.decide(e.foreignAnn(pkC, "unwanted", "git.example.org")), Rejected, "restricted: not archived here")
	mu.Lock()
	defer mu.Unlock()
	if !seen["kept"] || seen["listing"] || !seen["unwanted"] {
		t.Fatalf("archived flags seen by the plugin: %v", seen)
	}
}

// G05-3: the NIP-11 texts describe the scope (ngit-grasp's sentences).
func TestG05_3_CurationDescribesTheScope(t *testing.T) {
	svc, _ := nip34.ParseService(publicURL)
	for _, c := range []struct {
		o    archive.Options
		want string
	}{
		{archive.Options{All: true, ReadOnly: true}, "Read-only sync of all repositories found on network."},
		{archive.Options{Whitelist: []string{pkA}, ReadOnly: true}, "Read-only sync of whitelisted repositories and maintainers"},
		{archive.Options{Hosts: []string{"relay.ngit.dev"}, ReadOnly: true}, "Read-only sync of repositories from specified GRASP servers (relay.ngit.dev)."},
		{archive.Options{All: true}, "Sync of all repositories found on network."},
	} {
		c.o.Service = svc
		sc, err := archive.New(c.o, env.Env{})
		if err != nil {
			t.Fatal(err)
		}
		opts := Options{Service: svc, Archive: sc}
		if got := Curation(opts); !strings.HasPrefix(got, c.want) {
			t.Fatalf("curation %q, want prefix %q", got, c.want)
		}
		if got := AcceptanceCriteria(opts); !strings.HasPrefix(got, "GRASP-05 archive: ") {
			t.Fatalf("acceptance criteria %q do not start with the archive scope", got)
		}
	}
	if got := Curation(Options{Service: svc}); got != "" {
		t.Fatalf("curation without archive mode: %q", got)
	}
}
