package roster

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/nip34"
)

var (
	kA = strings.Repeat("a", 64)
	kB = strings.Repeat("b", 64)
	kC = strings.Repeat("c", 64)
	kD = strings.Repeat("d", 64)
	kE = strings.Repeat("e", 64)
	kL = strings.Repeat("1", 64)
)

// adversarial is an event store that answers like a real one (NIP-01
// filter, newest first, Limit honoured) except that it puts every event
// not authored by a "protected" key first: a reader that scanned the
// identifier instead of walking authors would see only strangers.
type adversarial struct {
	mu        sync.Mutex
	evs       []*nostr.Event
	protected map[string]bool
	filters   []nostr.Filter
}

func (s *adversarial) add(evs ...*nostr.Event) { s.evs = append(s.evs, evs...) }

func (s *adversarial) QueryEvents(ctx context.Context, f nostr.Filter) (chan *nostr.Event, error) {
	s.mu.Lock()
	s.filters = append(s.filters, f)
	var out []*nostr.Event
	for _, e := range s.evs {
		if f.Matches(e) {
			out = append(out, e)
		}
	}
	s.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool {
		pi, pj := s.protected[out[i].PubKey], s.protected[out[j].PubKey]
		if pi != pj {
			return !pi
		}
		return out[i].CreatedAt > out[j].CreatedAt
	})
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	ch := make(chan *nostr.Event, len(out))
	for _, e := range out {
		ch <- e
	}
	close(ch)
	return ch, nil
}

type held struct{ evs []*nostr.Event }

func (h *held) QueryHeld(_ context.Context, f nostr.Filter) ([]*nostr.Event, error) {
	var out []*nostr.Event
	for _, e := range h.evs {
		if f.Matches(e) {
			out = append(out, e)
		}
	}
	return out, nil
}

// ann is an announcement of identifier d by pk at created with tags; id ""
// keeps the computed id.
func ann(pk, d string, created int64, id string, tags ...[]string) *nostr.Event {
	evt := &nostr.Event{Kind: nip34.KindAnnouncement, PubKey: pk, CreatedAt: nostr.Timestamp(created), Tags: nostr.Tags{{"d", d}}}
	for _, t := range tags {
		evt.Tags = append(evt.Tags, t)
	}
	evt.ID = evt.GetID()
	if id != "" {
		evt.ID = id
	}
	return evt
}

func state(pk, d string, created int64) *nostr.Event {
	evt := &nostr.Event{Kind: nip34.KindState, PubKey: pk, CreatedAt: nostr.Timestamp(created), Tags: nostr.Tags{{"d", d}, {"refs/heads/main", strings.Repeat("1", 40)}}}
	evt.ID = evt.GetID()
	return evt
}

func M(pk string, b ...string) []string { return append([]string{"M", pk}, b...) }
func m(pk string, b ...string) []string { return append([]string{"m", pk}, b...) }
func o(pk string) []string              { return []string{"o", pk} }
func mt(pks ...string) []string         { return append([]string{"maintainers"}, pks...) }

type rig struct {
	store *adversarial
	held  *held
	src   *Source
	clk   *clock.Fake
}

func newRig(t *testing.T, protected ...string) *rig {
	t.Helper()
	r := &rig{store: &adversarial{protected: map[string]bool{}}, held: &held{}, clk: clock.NewFake(time.Unix(1_000_000, 0))}
	for _, p := range protected {
		r.store.protected[p] = true
	}
	src, err := New(Options{Events: r.store, Held: r.held}, env.Env{Clock: r.clk})
	if err != nil {
		t.Fatal(err)
	}
	r.src = src
	return r
}

func (r *rig) view(d string) *View { return r.src.View(context.Background(), d, "") }

func pubkeys(es []Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Pubkey)
	}
	sort.Strings(out)
	return out
}

func short(pks []string) string {
	var b strings.Builder
	for _, p := range pks {
		b.WriteString(p[:1])
	}
	return b.String()
}

func sorted(pks ...string) []string { sort.Strings(pks); return pks }

func stranger(i int) string { return fmt.Sprintf("%064x", 0xf000+i) }

// F03: 600 same-identifier announcements by fresh keys, returned before
// the owner's by the store, cannot displace the owner's announcement or
// its maintainers, because the roster reads announcements by author.
func TestRosterWalksAuthorsNotTheIdentifier(t *testing.T) {
	r := newRig(t, kA, kB)
	r.store.add(ann(kA, "repo", 10, "", mt(kB)), ann(kB, "repo", 10, "", mt(kA)))
	for i := 0; i < 600; i++ {
		// Strangers claim A and B too: claims by others grant nothing.
		r.store.add(ann(stranger(i), "repo", int64(20+i), "", M(stranger(i)), m(kA), m(kB)))
	}
	v := r.view("repo")
	if got := v.Roster(kA).Members(); !slices.Equal(got, sorted(kA, kB)) {
		t.Fatalf("roster of A = %s, want AB", short(got))
	}
	if got := pubkeys(v.Trusted(kA)); !slices.Equal(got, sorted(kA, kB)) {
		t.Fatalf("trusted for A = %s, want AB", short(got))
	}
	if got := pubkeys(v.Owners(kB, nil)); !slices.Equal(got, sorted(kA, kB)) {
		t.Fatalf("owners B speaks for = %s, want AB", short(got))
	}
	for _, f := range r.store.filters {
		if len(f.Authors) == 0 {
			t.Fatalf("query without authors: %v", f)
		}
	}
	// Positive control: the store really puts strangers first, so a
	// bounded scan of the identifier misses the owner.
	ch, _ := r.store.QueryEvents(context.Background(), nostr.Filter{Kinds: []int{nip34.KindAnnouncement}, Tags: nostr.TagMap{"d": {"repo"}}, Limit: 500})
	for e := range ch {
		if e.PubKey == kA {
			t.Fatal("control: a by-identifier scan saw the owner")
		}
	}
}

// Owners, Trusted and Inviters against maintainers-v3.md §5 (the roster
// itself is nip34.Resolve, table-tested there).
func TestRosterAnswersV3Cases(t *testing.T) {
	cases := []struct {
		name     string
		anns     []*nostr.Event
		trustedA string // Trusted(A)
		owners   map[string]string
		inviters map[string]string // author -> authors of Inviters(author's announcement)
	}{
		{name: "case 2: legacy invitee, no announcement", anns: []*nostr.Event{ann(kA, "d", 1, "", mt(kB))},
			trustedA: "a", owners: map[string]string{kA: "a", kB: ""}},
		{name: "case 3: legacy reciprocity", anns: []*nostr.Event{ann(kA, "d", 1, "", mt(kB)), ann(kB, "d", 1, "", mt(kA))},
			trustedA: "ab", owners: map[string]string{kB: "ab"}, inviters: map[string]string{kB: "a", kA: "b"}},
		{name: "case 7: canonical acceptance", anns: []*nostr.Event{ann(kA, "d", 1, "", M(kA), m(kB)), ann(kB, "d", 1, "", M(kA), m(kB))},
			trustedA: "ab", owners: map[string]string{kB: "ab", kA: "ab"}, inviters: map[string]string{kB: "a"}},
		{name: "case 9: self-end vetoes", anns: []*nostr.Event{ann(kA, "d", 1, "", M(kA), m(kB)), ann(kB, "d", 1, "", M(kA), m(kB, "10", "20"))},
			trustedA: "a", owners: map[string]string{kB: ""}, inviters: map[string]string{kB: "a"}},
		{name: "case 14: moderator", anns: []*nostr.Event{ann(kA, "d", 1, "", M(kA), o(kD)), ann(kD, "d", 1, "", M(kA), o(kD))},
			trustedA: "a", owners: map[string]string{kD: ""}, inviters: map[string]string{kD: "a"}},
		{name: "case 18: pending lead", anns: []*nostr.Event{ann(kA, "d", 1, "", M(kL), m(kA))},
			trustedA: "", owners: map[string]string{kA: ""}},
		{name: "case 20: invited fork", anns: []*nostr.Event{ann(kA, "d", 2, "", M(kA), m(kB), mt(kA, kB)), ann(kB, "d", 1, "")},
			trustedA: "a", owners: map[string]string{kB: "b", kA: "a"}, inviters: map[string]string{kB: ""}},
		{name: "case 21: scam listing", anns: []*nostr.Event{ann(kE, "d", 1, "", mt(kA)), ann(kA, "d", 1, "")},
			trustedA: "a", owners: map[string]string{kA: "a", kE: "e"}, inviters: map[string]string{kA: ""}},
		{name: "case 17: walk to a lead", anns: []*nostr.Event{ann(kA, "d", 1, "", M(kL), m(kA)), ann(kL, "d", 1, "", M(kL), m(kA))},
			trustedA: "1a", owners: map[string]string{kA: "1a", kL: "1a"}, inviters: map[string]string{kA: "1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t)
			r.store.add(c.anns...)
			v := r.view("d")
			if got := short(pubkeys(v.Trusted(kA))); got != sortShort(c.trustedA) {
				t.Errorf("Trusted(A) = %q, want %q", got, sortShort(c.trustedA))
			}
			for author, want := range c.owners {
				if got := short(pubkeys(v.Owners(author, nil))); got != sortShort(want) {
					t.Errorf("Owners(%s) = %q, want %q", author[:1], got, sortShort(want))
				}
			}
			for author, want := range c.inviters {
				e, ok := v.Latest(author)
				if !ok {
					t.Fatalf("no announcement of %s", author[:1])
				}
				if got := short(pubkeys(v.Inviters(e.Announcement))); got != sortShort(want) {
					t.Errorf("Inviters(%s) = %q, want %q", author[:1], got, sortShort(want))
				}
			}
		})
	}
}

func sortShort(s string) string {
	b := []byte(s)
	sort.Slice(b, func(i, j int) bool { return b[i] < b[j] })
	return string(b)
}

// Owners' keep filter: an owner whose announcement keep refuses (it does
// not list this service) is not answered, the others still are.
func TestRosterOwnersKeep(t *testing.T) {
	r := newRig(t)
	r.store.add(ann(kA, "d", 1, "", M(kA), m(kB)), ann(kB, "d", 1, "", M(kA), m(kB)))
	v := r.view("d")
	onlyA := func(e Entry) bool { return e.Pubkey == kA }
	if got := short(pubkeys(v.Owners(kB, onlyA))); got != "a" {
		t.Fatalf("Owners(B, only A) = %q", got)
	}
	if got := short(pubkeys(v.Owners(kB, func(Entry) bool { return false }))); got != "" {
		t.Fatalf("Owners(B, none) = %q", got)
	}
}

// maintainers-v3.md §4.1-2: the latest announcement of an author is the
// nip34.Later one of the stored and the held versions; on a same-second
// tie the lower id wins, whichever side it is on.
func TestRosterLatestStoreVsPurgatory(t *testing.T) {
	lo, hi := strings.Repeat("0", 64), strings.Repeat("f", 64)
	cases := []struct {
		name      string
		stored    *nostr.Event
		held      *nostr.Event
		wantID    string
		wantHeld  bool
		wantFound bool
	}{
		{"held newer wins", ann(kA, "d", 10, "", mt(kB)), ann(kA, "d", 20, "", mt(kC)), "", true, true},
		{"stored newer wins", ann(kA, "d", 20, "", mt(kB)), ann(kA, "d", 10, "", mt(kC)), "", false, true},
		{"tie: held lower id wins", ann(kA, "d", 10, hi, mt(kB)), ann(kA, "d", 10, lo, mt(kC)), lo, true, true},
		{"tie: stored lower id wins", ann(kA, "d", 10, lo, mt(kB)), ann(kA, "d", 10, hi, mt(kC)), lo, false, true},
		{"only held", nil, ann(kA, "d", 10, "", mt(kC)), "", true, true},
		{"none", nil, nil, "", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t)
			if c.stored != nil {
				r.store.add(c.stored)
			}
			if c.held != nil {
				r.held.evs = append(r.held.evs, c.held)
			}
			e, ok := r.view("d").Latest(kA)
			if ok != c.wantFound {
				t.Fatalf("found %v, want %v", ok, c.wantFound)
			}
			if !ok {
				return
			}
			want := c.wantID
			switch {
			case want != "":
			case c.wantHeld:
				want = c.held.ID
			default:
				want = c.stored.ID
			}
			if e.EventID != want || e.Held != c.wantHeld {
				t.Fatalf("latest %s held=%v, want %s held=%v", e.EventID[:8], e.Held, want[:8], c.wantHeld)
			}
		})
	}
	// The roster follows the winner: the stored ff.. invites B, the held
	// 00.. (same second) does not, so B (who lists A back) is out.
	r := newRig(t)
	r.store.add(ann(kA, "d", 10, hi, mt(kB)), ann(kB, "d", 10, "", mt(kA)))
	r.held.evs = append(r.held.evs, ann(kA, "d", 10, lo))
	if got := r.view("d").Roster(kA).Members(); !slices.Equal(got, []string{kA}) {
		t.Fatalf("roster = %s, want A (the lower-id held version is current)", short(got))
	}
	// exclude leaves the version being decided out.
	r = newRig(t)
	old, cur := ann(kA, "d", 10, "", mt(kB)), ann(kA, "d", 20, "")
	r.store.add(old, cur)
	if e, _ := r.src.View(context.Background(), "d", cur.ID).Latest(kA); e.EventID != old.ID {
		t.Fatalf("exclude: latest %s, want the older version", e.EventID[:8])
	}
}

// States reads by the roster's authors: a stranger's and an invitee's
// states of the identifier are not returned.
func TestRosterStatesByMembers(t *testing.T) {
	r := newRig(t)
	r.store.add(ann(kA, "d", 1, "", mt(kB, kC)), ann(kB, "d", 1, "", mt(kA)))
	sa, sb, sc, sx := state(kA, "d", 5), state(kB, "d", 6), state(kC, "d", 7), state(stranger(1), "d", 8)
	r.store.add(sa, sb, sx)
	r.held.evs = append(r.held.evs, sc)
	st, hd := r.view("d").States(kA)
	var ids []string
	for _, e := range append(st, hd...) {
		ids = append(ids, e.ID)
	}
	if !slices.Contains(ids, sa.ID) || !slices.Contains(ids, sb.ID) || len(ids) != 2 {
		t.Fatalf("states = %d events, want A's and B's only (C is invited, X a stranger)", len(ids))
	}
}

// The index of recently rejected states: 16 per identifier (oldest
// dropped), 4096 in total (oldest overall evicted), forgotten after
// RejectedTTL, each state once.
func TestRejectedIndexBounds(t *testing.T) {
	t.Run("per identifier", func(t *testing.T) {
		r := newRig(t)
		var all []*nostr.Event
		for i := 0; i < rejectedPerD+4; i++ {
			s := state(stranger(i), "d", int64(i))
			all = append(all, s)
			r.src.RememberRejected(s)
			r.clk.Advance(time.Second)
		}
		got := r.src.TakeRejected("d")
		if len(got) != rejectedPerD {
			t.Fatalf("%d kept, want %d", len(got), rejectedPerD)
		}
		for i, e := range got {
			if e.ID != all[4+i].ID {
				t.Fatalf("kept[%d] is not the %d-th state: the oldest must go first", i, 4+i)
			}
		}
		if again := r.src.TakeRejected("d"); len(again) != 0 {
			t.Fatalf("taken twice: %d", len(again))
		}
		if r.src.rejected.total != 0 {
			t.Fatalf("total %d after taking everything", r.src.rejected.total)
		}
	})
	t.Run("total", func(t *testing.T) {
		r := newRig(t)
		ids := rejectedTotalMax / rejectedPerD
		first := map[string]*nostr.Event{}
		for i := 0; i < ids; i++ {
			d := fmt.Sprintf("d%d", i)
			for j := 0; j < rejectedPerD; j++ {
				s := state(stranger(j), d, int64(j))
				if j == 0 {
					first[d] = s
				}
				r.src.RememberRejected(s)
				r.clk.Advance(time.Millisecond)
			}
		}
		if r.src.rejected.total != rejectedTotalMax {
			t.Fatalf("total %d, want %d", r.src.rejected.total, rejectedTotalMax)
		}
		// Full: one more evicts the oldest overall (d0's first).
		r.src.RememberRejected(state(kA, "new", 1))
		if r.src.rejected.total != rejectedTotalMax {
			t.Fatalf("total %d after eviction, want %d", r.src.rejected.total, rejectedTotalMax)
		}
		// Full again: one more for d0, whose second is now the oldest
		// overall, evicts that one from the very list being appended to.
		second := r.src.rejected.byD["d0"][0].evt
		extra := state(kB, "d0", 99)
		r.src.RememberRejected(extra)
		if r.src.rejected.total != rejectedTotalMax {
			t.Fatalf("total %d after evicting from the same identifier, want %d", r.src.rejected.total, rejectedTotalMax)
		}
		d0 := r.src.TakeRejected("d0")
		has := func(l []*nostr.Event, e *nostr.Event) bool {
			return slices.ContainsFunc(l, func(x *nostr.Event) bool { return x.ID == e.ID })
		}
		if len(d0) != rejectedPerD-1 || has(d0, first["d0"]) || has(d0, second) || d0[len(d0)-1].ID != extra.ID {
			t.Fatalf("d0: %d kept, want %d: its two oldest evicted, the new one last", len(d0), rejectedPerD-1)
		}
		if d1 := r.src.TakeRejected("d1"); len(d1) != rejectedPerD || !has(d1, first["d1"]) {
			t.Fatalf("d1: %d kept, want all %d", len(d1), rejectedPerD)
		}
		if n := len(r.src.TakeRejected("new")); n != 1 {
			t.Fatalf("new: %d", n)
		}
		if want := rejectedTotalMax - (rejectedPerD - 1) - rejectedPerD - 1; r.src.rejected.total != want {
			t.Fatalf("total %d after taking three identifiers, want %d", r.src.rejected.total, want)
		}
		count := 0
		for _, l := range r.src.rejected.byD {
			count += len(l)
		}
		if count != r.src.rejected.total {
			t.Fatalf("total %d but %d entries held", r.src.rejected.total, count)
		}
	})
	t.Run("expiry", func(t *testing.T) {
		r := newRig(t)
		old, fresh := state(kA, "d", 1), state(kB, "d", 2)
		r.src.RememberRejected(old)
		r.clk.Advance(time.Minute)
		r.src.RememberRejected(fresh)
		r.clk.Advance(RejectedTTL - time.Minute)
		// old is exactly RejectedTTL old: still kept.
		if got := r.src.TakeRejected("d"); len(got) != 2 {
			t.Fatalf("at the TTL: %d, want both", len(got))
		}
		r.src.RememberRejected(old)
		r.clk.Advance(RejectedTTL + time.Second)
		r.src.RememberRejected(fresh)
		got := r.src.TakeRejected("d")
		if len(got) != 1 || got[0].ID != fresh.ID {
			t.Fatalf("past the TTL: %d states, want only the fresh one", len(got))
		}
	})
	t.Run("once, states only", func(t *testing.T) {
		r := newRig(t)
		s := state(kA, "d", 1)
		r.src.RememberRejected(s)
		r.src.RememberRejected(s)
		r.src.RememberRejected(ann(kA, "d", 1, ""))
		r.src.RememberRejected(nil)
		if got := r.src.TakeRejected("d"); len(got) != 1 {
			t.Fatalf("%d, want the state once", len(got))
		}
		if got := r.src.TakeRejected("other"); len(got) != 0 {
			t.Fatalf("other identifier: %d", len(got))
		}
	})
}

// Invited: a pending invitee of a confirmed maintainer (the operator's
// trace of a one-way listing), not a confirmed one, not a stranger.
func TestRosterInvited(t *testing.T) {
	cases := []struct {
		name string
		anns []*nostr.Event
		pk   string
		want bool
	}{
		{"case 2: listed, no announcement", []*nostr.Event{ann(kA, "d", 1, "", mt(kB))}, kB, true},
		{"case 9: listed, declined", []*nostr.Event{ann(kA, "d", 1, "", M(kA), m(kB)), ann(kB, "d", 1, "", M(kA), m(kB, "10", "20"))}, kB, true},
		{"case 7: confirmed", []*nostr.Event{ann(kA, "d", 1, "", M(kA), m(kB)), ann(kB, "d", 1, "", M(kA), m(kB))}, kB, false},
		{"case 4: C invited by unconfirmed B only", []*nostr.Event{ann(kA, "d", 1, "", mt(kB)), ann(kB, "d", 1, "", mt(kC)), ann(kC, "d", 1, "", mt(kB))}, kC, false},
		{"case 14: moderator is not invited as maintainer", []*nostr.Event{ann(kA, "d", 1, "", M(kA), o(kD)), ann(kD, "d", 1, "", M(kA), o(kD))}, kD, false},
		{"stranger", []*nostr.Event{ann(kA, "d", 1, "", mt(kB))}, kC, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t)
			r.store.add(c.anns...)
			if got := r.view("d").Invited(kA, c.pk); got != c.want {
				t.Fatalf("Invited(A, %s) = %v, want %v", c.pk[:1], got, c.want)
			}
		})
	}
}
