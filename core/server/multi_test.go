package server_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/server"
	"github.com/grasp-dev/grasp/internal/pgtest"
	"github.com/grasp-dev/grasp/internal/testkit"
	"github.com/grasp-dev/grasp/internal/testwait"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// newInstances starts n grasp instances the way an operator runs several
// behind a load balancer (issue 17): one PostgreSQL database, one git
// directory, one public URL (the first instance's address), each its own
// data dir and listener. Each testServer's base and ws are its own address;
// announcements must be built by the first (they list the public URL).
func newInstances(t *testing.T, n int, mutate func(c *config.Config)) []*testServer {
	t.Helper()
	return newInstancesOn(t, pgtest.DB(t), n, mutate)
}

// newInstancesOn is newInstances on the PostgreSQL database url.
func newInstancesOn(t *testing.T, url string, n int, mutate func(c *config.Config)) []*testServer {
	t.Helper()
	gitDir := t.TempDir()
	ports := make([]int, n)
	for i := range ports {
		ports[i] = testkit.FreePort(t)
	}
	public := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	out := make([]*testServer, n)
	for i := range out {
		cfg := config.Default()
		cfg.Server.Listen = fmt.Sprintf("127.0.0.1:%d", ports[i])
		cfg.Server.PublicURL = public
		cfg.Server.DataDir = t.TempDir()
		cfg.Server.GitDir = gitDir
		cfg.Store.Backend = "postgres"
		cfg.Store.PostgresURL = url
		cfg.Metrics.Enabled = false
		cfg.Purgatory.FetchPrivateAddresses = true
		cfg.Sync.ConnectPrivateAddresses = true
		if mutate != nil {
			mutate(&cfg)
		}
		e := startEnv(t, cfg, nil, server.Extensions{})
		e.base = "http://" + cfg.Server.Listen
		e.ws = "ws://" + cfg.Server.Listen
		out[i] = e
	}
	return out
}

// A subscriber on instance B receives live an event published through
// instance A, once (issue 17 part 2).
func TestMulti_PublishOnAReceiveLiveOnB(t *testing.T) {
	in := newInstances(t, 2, nil)
	a, b := in[0], in[1]
	k := newKey(t)
	w := newWork(t)
	ann := a.release(k, "repo", w, w.commit("one"))

	live := b.dial()
	live.send("REQ", "live", nostr.Filter{Kinds: []int{1621}})
	live.next(func(m []jsonMsg) bool { return label(m) == "EOSE" })
	issue := a.sign(k, 1621, nostr.Tags{{"a", "30617:" + k.PK + ":repo"}, {"subject", "hi"}}, "an issue")
	a.dial().mustAccept(issue, "")
	m := live.next(func(m []jsonMsg) bool { return label(m) == "EVENT" })
	var got nostr.Event
	unmarshal(m[2], &got)
	if got.ID != issue.ID {
		t.Fatalf("B's subscriber got %s, want the issue published on A", got.ID)
	}
	// and B serves what A stored, and its announcement
	if cl := b.dial(); !cl.served(issue.ID) || !cl.served(ann.ID) {
		t.Fatal("B does not serve events stored through A")
	}
	// Exactly once: the next live event is a marker sent after it.
	marker := a.sign(k, 1621, nostr.Tags{{"a", "30617:" + k.PK + ":repo"}, {"subject", "marker"}}, "marker")
	a.dial().mustAccept(marker, "")
	m = live.next(func(m []jsonMsg) bool { return label(m) == "EVENT" })
	unmarshal(m[2], &got)
	if got.ID != marker.ID {
		t.Fatalf("after the issue B delivered %s, want the marker (was the issue delivered twice?)", got.ID)
	}
}

// A repository pushed through A is cloned through B: one git directory
// (issue 17 part 3).
func TestMulti_PushThroughACloneThroughB(t *testing.T) {
	in := newInstances(t, 2, nil)
	a, b := in[0], in[1]
	k := newKey(t)
	w := newWork(t)
	tip := w.commit("one")
	a.release(k, "repo", w, tip)
	dir := t.TempDir()
	mustGit(t, dir, "clone", "-q", b.cloneURL(k, "repo"), "c")
	if got := mustGit(t, dir+"/c", "rev-parse", "HEAD"); got != tip {
		t.Fatalf("clone through B has %s, want %s pushed through A", got, tip)
	}
}

// A purgatory entry held through A (announcement and state) is served by
// no instance while it waits for its git data (G01-P1: OK true
// "purgatory:", not served), is released by a push through B made right
// after (B catches up with A's holds before it decides), and is then
// served by both instances and delivered to both instances' live
// subscribers (G01-P3; issue 17 parts 1 and 2).
func TestMulti_HeldThroughAReleasedByPushThroughB(t *testing.T) {
	in := newInstances(t, 2, nil)
	a, b := in[0], in[1]
	k := newKey(t)
	w := newWork(t)
	tip := w.commit("one")
	ca, cb := a.dial(), b.dial()
	filter := nostr.Filter{Kinds: []int{30617, 30618}, Authors: []string{k.PK}}
	liveA, liveB := a.dial(), b.dial()
	for _, l := range []*client{liveA, liveB} {
		l.send("REQ", "live", filter)
		l.next(func(m []jsonMsg) bool { return label(m) == "EOSE" })
	}
	ann := a.announcement(k, "repo")
	st := a.state(k, "repo", map[string]string{"refs/heads/main": tip}, "refs/heads/main")
	ca.mustAccept(ann, purg)
	ca.mustAccept(st, purg)
	for _, c := range []*client{ca, cb} {
		if got := c.query(filter); len(got) != 0 {
			t.Fatalf("an instance serves %d held events before their git data arrived", len(got))
		}
	}
	if out, err := w.push(b.cloneURL(k, "repo"), "main:refs/heads/main"); err != nil {
		t.Fatalf("push through B right after the state was held through A: %v\n%s", err, out)
	}
	for name, l := range map[string]*client{"A": liveA, "B": liveB} {
		got := map[string]bool{}
		for len(got) < 2 {
			m := l.next(func(m []jsonMsg) bool { return label(m) == "EVENT" })
			var e nostr.Event
			unmarshal(m[2], &e)
			if e.ID != ann.ID && e.ID != st.ID {
				t.Fatalf("%s's subscriber got %s, want the released announcement and state", name, e.ID)
			}
			got[e.ID] = true
		}
	}
	if !cb.served(ann.ID) || !cb.served(st.ID) {
		t.Fatal("B does not serve the events it released")
	}
	a.eventually("the held events to be served through A", 0, func() bool { return ca.served(ann.ID) && ca.served(st.ID) })
	a.eventually("A's purgatory to forget what B released", 0, func() bool { return a.srv.Purgatory().Len() == 0 })
}

// Writes to one repository through two instances serialise: while A
// holds the repository's lock (as during a push through A), a push through
// B waits for it on PostgreSQL, and goes through once A lets go (issue 17
// part 3).
func TestMulti_PushesThroughAAndBSerialise(t *testing.T) {
	in := newInstances(t, 2, nil)
	a, b := in[0], in[1]
	k := newKey(t)
	w := newWork(t)
	a.release(k, "repo", w, w.commit("one"))
	tip := w.commit("two")
	a.clk.Advance(2 * time.Second) // a later state than the released one
	// held in A's purgatory until its data arrives (G01-P1): no instance
	// serves it before the push below; B's push is authorised by it
	a.dial().mustAccept(a.state(k, "repo", map[string]string{"refs/heads/main": tip}, "refs/heads/main"), purg)

	dir, err := a.srv.Repos().Path(k.repo("repo"))
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := a.srv.Repos().Lock(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	push := w.pushing(b.cloneURL(k, "repo"), "main:refs/heads/main")
	db, err := sql.Open("postgres", a.cfg.Store.PostgresURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if ended, err := push.waitFor(t, "B's push to wait for the repository lock A holds", func() bool {
		var waiting int
		// two-key advisory locks are the repository locks; a side-table
		// transaction's one-key lock may be waited for meanwhile
		err := db.QueryRow(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 AND NOT granted`).Scan(&waiting)
		return err == nil && waiting == 1
	}); ended {
		t.Fatalf("the push through B finished while A held the repository: %v", err)
	}
	if got := lsRemote(t, a.cloneURL(k, "repo"))["refs/heads/main"]; got == tip {
		t.Fatal("the push through B moved main while A held the repository")
	}
	unlock()
	push.mustSucceed(t, "the push through B after A let go")
	if got := lsRemote(t, a.cloneURL(k, "repo"))["refs/heads/main"]; got != tip {
		t.Fatalf("main is %s after the push through B, want %s", got, tip)
	}
}

// pushRun is a push running in the background (pushing).
type pushRun struct{ done chan error }

// pushing starts a push of refspecs to url; its answer (nil, or the error
// with git's output) is read by waitFor or mustSucceed.
func (w *work) pushing(url string, refspecs ...string) *pushRun {
	p := &pushRun{done: make(chan error, 1)}
	go func() {
		out, err := w.push(url, refspecs...)
		if err != nil {
			err = fmt.Errorf("%v\n%s", err, out)
		}
		p.done <- err
	}()
	return p
}

// waitFor waits for cond while the push runs; if the push ends first it
// reports so with its answer, so the test says why instead of waiting on.
func (p *pushRun) waitFor(t *testing.T, what string, cond func() bool) (ended bool, answer error) {
	t.Helper()
	testwait.For(t, what, func() bool {
		select {
		case answer = <-p.done:
			ended = true
			return true
		default:
		}
		return cond()
	})
	return ended, answer
}

// mustSucceed waits for the push to end and fails t unless it went through.
func (p *pushRun) mustSucceed(t *testing.T, what string) {
	t.Helper()
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-testwait.After(t):
		t.Fatalf("%s never finished", what)
	}
}

// One instance leads and runs GRASP-02 sync; the other serves traffic
// only. When the leader stops (its database session ends with it), the
// other takes the lease within lease/3 of its clock and runs sync: it
// connects to the relays the hosted repositories list and brings their
// events in (issue 17 part 4).
func TestMulti_LeaderFailoverTakesOverSync(t *testing.T) {
	const lease = 9 * time.Second
	u := newKhatruPeer(t, khatruOpts{negentropy: true})
	in := newInstances(t, 2, func(c *config.Config) {
		c.Sync.BatchWindow = config.Duration(50 * time.Millisecond)
		c.Store.LeaderLease = config.Duration(lease)
	})
	// both start campaigning at once; under load the second may win the
	// lease first, and then the first never leads: A is whichever leads
	testwait.For(t, "one instance to lead", func() bool { return in[0].leads() || in[1].leads() })
	a, b := in[0], in[1]
	if b.leads() {
		a, b = b, a
	}
	if a.metric("grasp_leader", "") != 1 || b.metric("grasp_leader", "") != 0 {
		t.Fatalf("grasp_leader: A %v, B %v; want 1 and 0", a.metric("grasp_leader", ""), b.metric("grasp_leader", ""))
	}
	k := newKey(t)
	w := newWork(t)
	// published through the instance at the public URL: announcements
	// name that one (whichever instance leads)
	in[0].release(k, "repo", w, w.commit("one"), nostr.Tag{"relays", u.url})
	a.eventually("A's sync to connect to the listed relay", syncStep, func() bool { return a.relayUp(u.url) })
	if b.srv.SyncManager() != nil || b.leads() {
		t.Fatal("the follower runs sync")
	}

	a.stop()
	if err := a.srv.Wait(); err != nil {
		t.Fatalf("A stopped with %v", err)
	}
	b.eventually("B to take the lease and connect to the listed relay", lease/3, func() bool {
		return b.leads() && b.relayUp(u.url)
	})
	if b.metric("grasp_leader", "") != 1 {
		t.Fatal("grasp_leader is not 1 on the new leader")
	}
	// B's sync brings in what is published upstream.
	issue := b.sign(k, 1621, nostr.Tags{{"a", "30617:" + k.PK + ":repo"}, {"subject", "upstream"}}, "from the listed relay")
	u.put(issue)
	u.rl.BroadcastEvent(issue) // live to the subscriptions B's sync holds
	cl := b.dial()
	b.eventually("B to sync the upstream issue", syncStep, func() bool { return cl.served(issue.ID) })
}
