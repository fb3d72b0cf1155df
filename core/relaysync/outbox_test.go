package relaysync

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/internal/testwait"
)

func relayList(author string, relays ...nostr.Tag) *nostr.Event {
	return &nostr.Event{ID: hexID(1 << 41), PubKey: author, Kind: KindRelayList, Tags: relays}
}

func outboxOn(tweak func(*Options)) func(*Options) {
	return func(o *Options) {
		o.Config.Outbox = true
		if tweak != nil {
			tweak(o)
		}
	}
}

// itemValuesAt returns the tag letter → values of the item subscriptions
// opened on url.
func itemValuesAt(t *testing.T, calls []call, url string) map[string][]string {
	t.Helper()
	_, items := split(calls)
	out := map[string][]string{}
	for _, c := range items {
		if c.url != url {
			continue
		}
		k, v := tagValues(t, c.filters[0])
		out[k] = append(out[k], v...)
	}
	return out
}

// G03-1: an accepted issue's author and a replier's p-tagged key have NIP-65
// write relays no announcement lists: sync connects to them and asks for
// the events tagging the issue (e/E/q) and its repository (a/A/q); read-only
// relays are not followed.
func TestG03_1_ParticipantsWriteRelaysSynced(t *testing.T) {
	h := newHarness(t, outboxOn(nil))
	const w, w2, readOnly = "wss://write.example", "wss://write2.example", "wss://read.example"
	author, replier, mentioned := pubkey(7), pubkey(8), pubkey(9)
	issue := rootEvent(1621, 1, 0)
	issue.PubKey = author
	h.observe(announcement(0, selfURL, r1), issue,
		relayList(author, nostr.Tag{"r", w}, nostr.Tag{"r", readOnly, "read"}))
	got := connects(h.conns.take())
	if !got[r1] || !got[w] || got[readOnly] || len(got) != 2 {
		t.Fatalf("connects %v, want %s and the author's write relay %s only", got, r1, w)
	}
	h.m.Connected(w)
	h.snap()
	if v := h.gauge("grasp_sync_outbox_relays_connected"); v != 1 {
		t.Fatalf("grasp_sync_outbox_relays_connected %v, want 1", v)
	}
	if r := h.m.Role(w); r.Source != SourceOutbox || r.EventsPerDay != config.Default().Sync.OutboxEventsPerRelayPerDay {
		t.Fatalf("role of the outbox relay %+v, want outbox with the daily bound", r)
	}
	if r := h.m.Role(r1); r.Source != SourceRepo || r.EventsPerDay != 0 {
		t.Fatalf("role of the repository relay %+v, want repo, unbounded", r)
	}
	calls := h.conns.take()
	vals := itemValuesAt(t, calls, w)
	for _, l := range []string{"e", "E", "q"} {
		if !slices.Contains(vals[l], hexID(1)) {
			t.Fatalf("outbox relay %s: #%s filters %v lack the issue id", w, l, vals[l])
		}
	}
	// only reply filters: neither the repository's coordinate (layer 2)
	// nor every announcement (layer 1) is asked of a relay anyone's relay
	// list names
	for _, l := range []string{"a", "A"} {
		if len(vals[l]) > 0 {
			t.Fatalf("outbox relay %s asked for repository-wide #%s %v", w, l, vals[l])
		}
	}
	if slices.Contains(vals["q"], repoAddr(0)) {
		t.Fatalf("outbox relay %s asked for #q of the repository", w)
	}
	for _, c := range subsAt(calls, w) {
		if len(c.filters[0].Kinds) > 0 {
			t.Fatalf("outbox relay %s was asked for %v, want only replies", w, c.filters[0])
		}
	}
	// a reply p-tagging someone: both are participants; the mentioned
	// key's write relay is synced once its relay list is known
	reply := &nostr.Event{ID: hexID(2), PubKey: replier, Kind: 1111, Tags: nostr.Tags{{"E", hexID(1)}, {"p", mentioned}}}
	h.observe(reply, relayList(mentioned, nostr.Tag{"r", w2, "write"}))
	if got := connects(h.conns.take()); !got[w2] {
		t.Fatalf("the p-tagged participant's write relay was not dialled: %v", got)
	}
	if s := h.gauge("grasp_sync_outbox_relays"); s != 2 {
		t.Fatalf("grasp_sync_outbox_relays %v, want 2", s)
	}
	h.m.Disconnected(w, nil)
	if v := h.gauge("grasp_sync_outbox_relays_connected"); v != 0 {
		t.Fatalf("grasp_sync_outbox_relays_connected %v after the relay dropped, want 0", v)
	}
	h.conns.take() // its reconnect
	// a reply to an event that is not a root adds nobody
	stranger := pubkey(10)
	h.observe(&nostr.Event{ID: hexID(3), PubKey: stranger, Kind: 1111, Tags: nostr.Tags{{"e", hexID(999)}}},
		relayList(stranger, nostr.Tag{"r", "wss://stranger.example"}))
	if got := connects(h.conns.take()); len(got) != 0 {
		t.Fatalf("a reply to no accepted root made sync dial %v", got)
	}
}

// G03-2: a participant whose 10002 lists 50 relays gets
// outbox_relays_per_participant of them; many participants stop at
// max_outbox_relays, and the announcement's relays are not displaced.
func TestG03_2_OutboxRelaysCapped(t *testing.T) {
	h := newHarness(t, outboxOn(func(o *Options) {
		o.Config.OutboxRelaysPerParticipant, o.Config.OutboxParticipantsPerRoot, o.Config.MaxOutboxRelays = 4, 5, 12
		o.Config.MaxRelays = 3
	}))
	author := pubkey(7)
	issue := rootEvent(1621, 1, 0)
	issue.PubKey = author
	var tags []nostr.Tag
	for _, u := range attackerRelays(0, 50) {
		tags = append(tags, nostr.Tag{"r", u})
	}
	h.observe(announcement(0, selfURL, r1), issue, relayList(author, tags...))
	got := connects(h.conns.take())
	if len(got) != 1+4 || !got[r1] {
		t.Fatalf("%d dials (%v), want %s and 4 of the participant's 50 relays", len(got), got, r1)
	}
	// 20 more participants with 4 fresh relays each, p-tagged in replies:
	// 5 participants per root, 12 outbox relays in all
	for i := 0; i < 20; i++ {
		p := pubkey(100 + i)
		var tags []nostr.Tag
		for _, u := range attackerRelays(1000*(i+1), 4) {
			tags = append(tags, nostr.Tag{"r", u})
		}
		h.observe(relayList(p, tags...),
			&nostr.Event{ID: hexID(1000 + i), PubKey: p, Kind: 1111, Tags: nostr.Tags{{"E", hexID(1)}}})
	}
	h.check()
	h.conns.take()
	s := h.snap()
	if len(s.Relays) != 1+12 {
		t.Fatalf("%d relays tracked, want %s and max_outbox_relays 12", len(s.Relays), r1)
	}
	if v := h.gauge("grasp_sync_outbox_relays"); v != 12 {
		t.Fatalf("grasp_sync_outbox_relays %v, want 12", v)
	}
	if n := len(h.m.outboxParts(hexID(1))); n != 5 {
		t.Fatalf("%d participants kept for the issue, want outbox_participants_per_root 5", n)
	}
	// every bound shows in the metrics
	for _, b := range []string{boundRelaysPerParticipant, boundParticipantsPerRoot} {
		if v := h.counter("grasp_sync_outbox_bounded_total", b); v < 1 {
			t.Fatalf("grasp_sync_outbox_bounded_total{bound=%q} %v, want at least 1", b, v)
		}
	}
	if v := h.gauge("grasp_sync_relays_capped"); v < 1 {
		t.Fatalf("grasp_sync_relays_capped %v, want the outbox relays max_outbox_relays left out", v)
	}
}

// counter reads a counter's value with the given label value ("" for
// an unlabelled counter).
func (h *harness) counter(name, label string) float64 {
	h.t.Helper()
	h.snap()
	mfs, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label == "" && len(m.GetLabel()) == 0 {
				return m.GetCounter().GetValue() // an unlabelled counter
			}
			for _, l := range m.GetLabel() {
				if l.GetValue() == label {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// G03-3: with outbox off nothing of this is followed.
func TestG03_3_OutboxOff(t *testing.T) {
	h := newHarness(t, nil)
	issue := rootEvent(1621, 1, 0)
	issue.PubKey = pubkey(7)
	h.observe(announcement(0, selfURL, r1), issue, relayList(pubkey(7), nostr.Tag{"r", "wss://write.example"}))
	if got := connects(h.conns.take()); len(got) != 1 || !got[r1] {
		t.Fatalf("outbox off: connects %v, want %s only", got, r1)
	}
}

// gauge reads a gauge's value from the harness registry.
func (h *harness) gauge(name string) float64 {
	h.t.Helper()
	h.snap()
	mfs, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	h.t.Fatalf("no metric %s", name)
	return 0
}

// outboxParts reads the participants of a root in the actor.
func (m *Manager) outboxParts(root string) []string {
	reply := make(chan []string, 1)
	m.send(func() {
		ei, ok := m.rootPosition(root)
		if !ok {
			reply <- nil
			return
		}
		var out []string
		for _, k := range m.outbox.participantsOf(ei, &[1]uint32{}) {
			out = append(out, m.outbox.keys.key(k))
		}
		reply <- out
	})
	return <-reply
}

// G03-6: after a restart the outbox relays come back from the store's
// history: the relay lists and the replies (stored newer than the root they
// answer, so they are read after it) name the same participants again.
func TestG03_6_OutboxRelaysFromHistoryAfterRestart(t *testing.T) {
	r := newSubRig(t)
	conns := &fakeConns{}
	m, err := NewManager(Options{Conns: conns, Health: &fakeHealth{}, Self: []string{selfURL}, Rand: func() float64 { return 0.5 },
		Config: config.Sync{Outbox: true, DisconnectCheckInterval: config.Duration(time.Hour)}}, env.Env{Clock: r.clk, Metrics: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSubscriber(SubscriberOptions{Manager: m, Events: r.events, Held: r.purg}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	const w = "wss://replier-write.example"
	issue := rootEvent(1621, 1, 0)
	issue.CreatedAt = 100
	reply := &nostr.Event{ID: hexID(2), PubKey: pubkey(8), Kind: 1111, CreatedAt: 200, Tags: nostr.Tags{{"E", hexID(1)}}}
	list := relayList(pubkey(8), nostr.Tag{"r", w})
	list.CreatedAt = 300
	ann := announcement(0, selfURL, r1)
	ann.CreatedAt = 50
	r.store(ann, issue, reply, list)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	testwait.Stepping(t, "the replier's write relay after start", func() { r.clk.Advance(m.o.Config.BatchWindow.D()) }, func() bool {
		snap, err := m.Snapshot(testwait.Context(t))
		if err != nil {
			return false
		}
		for _, rs := range snap.Relays {
			if rs.URL == w {
				return true
			}
		}
		return false
	})
}

// G03-8: a relay one repository's announcement lists and another's issue
// author names as write relay is asked for the first repository's
// coordinate and the second's issue, never the second's coordinate; its
// layer 1 stays, as for any announcement relay.
func TestG03_8_ListedRelayIsAskedOnlyForRepliesOfOutboxRepos(t *testing.T) {
	h := newHarness(t, outboxOn(nil))
	const w = "wss://both.example"
	author := pubkey(7)
	issue := rootEvent(1621, 1, 0)
	issue.PubKey = author
	h.observe(announcement(0, selfURL, r1), announcement(1, selfURL, w), issue, relayList(author, nostr.Tag{"r", w}))
	h.conns.take()
	h.m.Connected(w)
	h.snap()
	if r := h.m.Role(w); r.Source != SourceRepo || r.EventsPerDay != 0 {
		t.Fatalf("role of a relay an announcement lists %+v, want repo, unbounded", r)
	}
	calls := h.conns.take()
	vals := itemValuesAt(t, calls, w)
	if !slices.Contains(vals["a"], repoAddr(1)) || slices.Contains(vals["a"], repoAddr(0)) {
		t.Fatalf("#a on %s is %v, want repository 1 (listed there) and not repository 0 (outbox only)", w, vals["a"])
	}
	if !slices.Contains(vals["E"], hexID(1)) {
		t.Fatalf("#E on %s is %v, want the issue of repository 0", w, vals["E"])
	}
	if l1 := announcementSubs(calls, w); len(l1) != 1 {
		t.Fatalf("layer 1 on %s: %v, want one announcement subscription", w, l1)
	}
}

func subsAt(calls []call, url string) []call {
	var out []call
	for _, c := range ops(calls, "sub") {
		if c.url == url {
			out = append(out, c)
		}
	}
	return out
}

// announcementSubs are the layer 1 subscriptions opened on url.
func announcementSubs(calls []call, url string) []call {
	var out []call
	for _, c := range subsAt(calls, url) {
		if len(c.filters[0].Kinds) > 0 && len(c.filters[0].Authors) == 0 {
			out = append(out, c)
		}
	}
	return out
}

// peopleAt are the authors of the people subscriptions opened on url.
func peopleAt(calls []call, url string) []string {
	var out []string
	for _, c := range subsAt(calls, url) {
		if f := c.filters[0]; len(f.Authors) > 0 {
			if !slices.Equal(f.Kinds, PeopleKinds) {
				panic("people filter with kinds " + fmt.Sprint(f.Kinds))
			}
			out = append(out, f.Authors...)
		}
	}
	return out
}

// openPeople replays calls on url into the people subscriptions still open
// (sub id → authors).
func openPeople(open map[string][]string, calls []call, url string) {
	for _, c := range calls {
		if c.url != url {
			continue
		}
		switch c.op {
		case "sub":
			if f := c.filters[0]; len(f.Authors) > 0 {
				open[c.sub] = f.Authors
			}
		case "unsub":
			delete(open, c.sub)
		}
	}
}

// G03-10 (part 2): the people of a synced repository — its announcement's
// author, the issue author, a replier and the key the reply p-tags — are
// asked for their kinds 0, 10002 and 10317 on the repository's relay and on
// the bootstrap relay, never on an outbox relay; a later participant is
// asked for alone; a quick reconnect asks again from just before the gap;
// people of a repository still in purgatory are not asked for.
func TestG03_10_PeopleProfilesFromRepoAndBootstrapRelays(t *testing.T) {
	const boot, w = "wss://boot.example", "wss://write.example"
	h := newHarness(t, outboxOn(func(o *Options) { o.Config.BootstrapRelays = []string{boot} }))
	h.snap()
	h.m.Connected(boot)
	author, replier, mentioned, late := pubkey(7), pubkey(8), pubkey(9), pubkey(10)
	issue := rootEvent(1621, 1, 0)
	issue.PubKey = author
	reply := &nostr.Event{ID: hexID(2), PubKey: replier, Kind: 1111, Tags: nostr.Tags{{"E", hexID(1)}, {"p", mentioned}}}
	held := announcement(5, selfURL, r1)
	h.m.ObserveHeld(held)
	h.observe(announcement(0, selfURL, r1), issue, reply, relayList(author, nostr.Tag{"r", w}))
	h.m.Connected(r1)
	h.m.Connected(w)
	h.snap()
	calls := h.conns.take()
	want := []string{pubkey(0), author, replier, mentioned}
	for _, u := range []string{r1, boot} {
		got := peopleAt(calls, u)
		for _, p := range want {
			if !slices.Contains(got, p) {
				t.Fatalf("people asked of %s: %v, missing %s", u, got, p)
			}
		}
		if slices.Contains(got, pubkey(5)) {
			t.Fatalf("%s was asked for the author of a repository still in purgatory", u)
		}
	}
	if got := peopleAt(calls, w); len(got) != 0 {
		t.Fatalf("outbox relay %s asked for people %v", w, got)
	}
	for _, c := range subsAt(calls, r1) {
		if len(c.filters[0].Authors) > 0 && c.filters[0].Since != nil {
			t.Fatalf("first people subscription on %s has since %v, want full history", r1, *c.filters[0].Since)
		}
	}

	// a later participant: asked for alone
	h.observe(&nostr.Event{ID: hexID(3), PubKey: late, Kind: 1111, Tags: nostr.Tags{{"e", hexID(1)}}})
	calls = h.conns.take()
	for _, u := range []string{r1, boot} {
		if got := peopleAt(calls, u); !slices.Equal(got, []string{late}) {
			t.Fatalf("%s asked for %v after a new participant, want only %s", u, got, late)
		}
	}

	// quick reconnect: everyone again, from just before the gap
	h.m.Disconnected(r1, nil)
	h.clk.Advance(time.Minute)
	h.snap()
	h.conns.take()
	h.m.Connected(r1)
	h.snap()
	calls = h.conns.take()
	got := peopleAt(calls, r1)
	for _, p := range append(want, late) {
		if !slices.Contains(got, p) {
			t.Fatalf("after a quick reconnect %s was asked for %v, missing %s", r1, got, p)
		}
	}
	for _, c := range subsAt(calls, r1) {
		if f := c.filters[0]; len(f.Authors) > 0 && (f.Since == nil || f.Since.Time().Before(h.clk.Now().Add(-16*time.Minute))) {
			t.Fatalf("people after a quick reconnect asked with since %v, want just before the gap", f.Since)
		}
	}
}

// G03-11: many people arriving in many batches stay within the
// connection's people filter budget: the filters are packed, and every
// person is still asked for.
func TestG03_11_PeopleFiltersPacked(t *testing.T) {
	h := newHarness(t, outboxOn(func(o *Options) { o.Config.TagsPerFilter = 2 }))
	issue := rootEvent(1621, 1, 0)
	h.observe(announcement(0, selfURL, r1), issue)
	h.m.Connected(r1)
	h.snap()
	open := map[string][]string{}
	openPeople(open, h.conns.take(), r1)
	everyone := []string{pubkey(0), issue.PubKey}
	budget := h.m.peopleFilterBudget()
	for i := 0; i < 40; i++ {
		p := pubkey(100 + i)
		everyone = append(everyone, p)
		h.observe(&nostr.Event{ID: hexID(100 + i), PubKey: p, Kind: 1111, Tags: nostr.Tags{{"E", hexID(1)}}})
		openPeople(open, h.conns.take(), r1)
		if len(open) > budget {
			t.Fatalf("%d people filters open on %s after %d participants, budget %d", len(open), r1, i+1, budget)
		}
	}
	var asked []string
	for _, a := range open {
		asked = append(asked, a...)
	}
	// participants per root default to 20: the first 20 of the issue
	for _, p := range everyone[:20] {
		if !slices.Contains(asked, p) {
			t.Fatalf("person %s not in any open people filter (%d asked)", p, len(asked))
		}
	}
}

// G03-1 with forget (issue 27 part 2): participants are 4-byte ids of keys
// held once, freed with the last root or repository that names them and
// reused by the next new key. Forgetting a repository releases its roots'
// participants and people, and a key that takes a freed id brings only its
// own write relays.
func TestG03_1_ForgottenParticipantsReleasedAndTheirIDsReused(t *testing.T) {
	h := newHarness(t, outboxOn(nil))
	const w, w2 = "wss://write.example", "wss://write2.example"
	author, replier, mentioned := pubkey(7), pubkey(8), pubkey(9)
	issue := rootEvent(1621, 1, 0)
	issue.PubKey = author
	h.observe(announcement(0, selfURL, r1), issue, relayList(author, nostr.Tag{"r", w}),
		&nostr.Event{ID: hexID(2), PubKey: replier, Kind: 1111, Tags: nostr.Tags{{"E", hexID(1)}, {"p", mentioned}}})
	if got := connects(h.conns.take()); !got[w] {
		t.Fatalf("the author's write relay was not dialled: %v", got)
	}
	h.m.Forget(repoAddr(0))
	h.clk.Advance(h.m.o.Config.BatchWindow.D())
	h.check()
	type state struct {
		roots, keys, people int
		parts, keyRoots     int
		outbox              []string
	}
	read := func(addr string) state {
		reply := make(chan state, 1)
		h.m.send(func() {
			ob := h.m.outbox
			s := state{roots: ob.rootCount, keys: ob.keys.len(), people: len(ob.people), parts: len(ob.parts), keyRoots: len(ob.roots)}
			if id, ok := h.m.repos.Lookup(addr); ok {
				s.outbox = h.m.repos.Outbox(id)
			}
			reply <- s
		})
		return <-reply
	}
	if s := read(""); s.roots != 0 || s.keys != 0 || s.people != 0 || s.parts != 0 || s.keyRoots != 0 {
		t.Fatalf("after forgetting the only repository the outbox holds %+v, want nothing", s)
	}
	h.conns.take()
	// A new repository whose root's author is a new key: it takes the
	// freed ids, and the outbox is its own write relay only.
	other := pubkey(20)
	root := rootEvent(1621, 3, 1)
	root.PubKey = other
	h.observe(announcement(1, selfURL, r1), root, relayList(other, nostr.Tag{"r", w2}))
	h.conns.take()
	s := read(repoAddr(1))
	if !slices.Equal(s.outbox, []string{w2}) || s.roots != 1 || s.keys != 2 { // the root's author and the announcement's
		t.Fatalf("the new repository's outbox state %+v, want outbox [%s], 1 root, 2 keys", s, w2)
	}
	// the forgotten author's relay list changing marks nothing of the new one
	h.observe(relayList(author, nostr.Tag{"r", "wss://moved.example"}))
	if s := read(repoAddr(1)); !slices.Equal(s.outbox, []string{w2}) {
		t.Fatalf("outbox %v after a forgotten participant's relay list, want [%s]", s.outbox, w2)
	}
}
