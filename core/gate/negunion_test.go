package gate

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/negindex"
)

func fakeKind(ts int64, kind int) *nostr.Event {
	evt := fakeEvent(ts)
	evt.Kind = kind
	return evt
}

// NDK's NIP-77 client opens a session with an array of several filters,
// and on a NEG-ERR marks the relay as not speaking NIP-77 for an hour. The
// session reconciles the union of the filters, each id once, from the
// negentropy index and from a scan alike (issue 10 part 4).
func TestG10_NegOpenWithSeveralFiltersReconcilesTheUnion(t *testing.T) {
	for name, newE := range map[string]func(*testing.T, config.Limits) *testEnv{"scan": newEnv, "index": newEnvIndexed} {
		t.Run(name, func(t *testing.T) {
			e := newE(t, config.Limits{NegentropyMaxEvents: 50})
			var k1, k7, k30 []*nostr.Event
			for i := range 30 {
				k1 = append(k1, fakeKind(1_700_000_000+int64(i), 1))
				k7 = append(k7, fakeKind(1_700_000_100+int64(i), 7))
				k30 = append(k30, fakeKind(1_700_000_200+int64(i), 30))
			}
			for _, evt := range append(append(append([]*nostr.Event{}, k1...), k7...), k30...) {
				if err := e.store.SaveEvent(context.Background(), evt); err != nil {
					t.Fatal(err)
				}
			}
			tr := rawTransport{e.dial()}
			// The client holds 5 kind-1 events and one the relay lacks.
			extra := fakeKind(1_700_000_050, 1)
			local := append([]*nostr.Event{extra}, k1[:5]...)
			want := ids(append(append([]*nostr.Event{}, k1[5:]...), k7[:20]...))

			// kinds 1 and 7 (up to the 20 newest of 7 by until): the union,
			// kind 30 left out; overlapping filters list an id once.
			until := nostr.Timestamp(1_700_000_119)
			filters := []nostr.Filter{{Kinds: []int{1}}, {Kinds: []int{7}, Until: &until}, {Kinds: []int{1}, Since: ptr(nostr.Timestamp(1_700_000_010))}}
			haves, haveNots, err := clientSyncAny(tr, "ndk", filters, local)
			if err != nil {
				t.Fatalf("NEG-OPEN with %d filters: %v", len(filters), err)
			}
			if !sameSet(haveNots, want) {
				t.Fatalf("client needs %d ids, want the %d of the union it lacks", len(haveNots), len(want))
			}
			if !sameSet(haves, []string{extra.ID}) {
				t.Fatalf("client has %v to give, want only %s", haves, extra.ID)
			}
			// Control: the first filter alone reconciles kind 1 only.
			_, haveNots, err = clientSyncAny(tr, "one", []nostr.Filter{{Kinds: []int{1}}}, local)
			if err != nil || !sameSet(haveNots, ids(k1[5:])) {
				t.Fatalf("one filter in an array: %d ids, %v; want the 25 kind-1 ids", len(haveNots), err)
			}
			// The union is bounded like one filter's set: 30 + 30 > 50,
			// while each filter alone (30) is within.
			c := tr.c
			c.sendJSON("NEG-OPEN", "big", []nostr.Filter{{Kinds: []int{1}}, {Kinds: []int{30}}}, "6100000200")
			if v := c.expect("NEG-ERR"); v[1] != "big" || !strings.HasPrefix(v[2].(string), "blocked:") {
				t.Fatalf("union of 60 over a bound of 50: %v, want NEG-ERR blocked:", v)
			}
			if _, _, err := clientSyncAny(tr, "k30", []nostr.Filter{{Kinds: []int{30}}}, nil); err != nil {
				t.Fatalf("kind 30 alone (30 <= 50): %v", err)
			}
			// Filters per NEG-OPEN are bounded like filters per REQ.
			many := make([]nostr.Filter, config.DefaultLimits().MaxFiltersPerReq+1)
			for i := range many {
				many[i] = nostr.Filter{Kinds: []int{i}}
			}
			c.sendJSON("NEG-OPEN", "many", many, "6100000200")
			if v := c.expect("NEG-ERR"); !strings.HasPrefix(v[2].(string), "blocked:") {
				t.Fatalf("%d filters: %v, want NEG-ERR blocked:", len(many), v)
			}
			c.reqWorks()
		})
	}
}

func ptr[T any](v T) *T { return &v }

// GRASP-08 holds for every filter of a union: what the connection may not
// read is left out of the set (even when the index could answer), and a
// filter naming something private refuses the whole session, as for a REQ.
// The member (positive control) reconciles everything.
func TestG10_NegOpenUnionKeepsPrivateFiltering(t *testing.T) {
	memberSK := nostr.GeneratePrivateKey()
	memberPK, _ := nostr.GetPublicKey(memberSK)
	st := newLockedStore()
	st.ix = negindex.New(nil)
	e := newEnvStore(t, Options{Private: &fakePrivate{restricting: true, member: memberPK}}, nil, st)
	now := time.Now().Unix()
	secret := signedEvent(t, memberSK, 1, "secret", now)
	public1 := signedEvent(t, memberSK, 1, "public", now+1)
	public7 := signedEvent(t, memberSK, 7, "+", now+2)
	for _, evt := range []*nostr.Event{&secret, &public1, &public7} {
		if err := e.store.SaveEvent(context.Background(), evt); err != nil {
			t.Fatal(err)
		}
	}
	union := []nostr.Filter{{Kinds: []int{1}}, {Kinds: []int{7}}}

	anon := e.dial()
	_, haveNots, err := clientSyncAny(rawTransport{anon}, "u", union, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !sameSet(haveNots, []string{public1.ID, public7.ID}) {
		t.Fatalf("anonymous union: %v, want only the two public ids (the secret one hidden)", haveNots)
	}
	named := nostr.Filter{Kinds: []int{1}, Tags: nostr.TagMap{"t": {"secret"}}}
	anon.sendJSON("NEG-OPEN", "named", []nostr.Filter{{Kinds: []int{7}}, named}, "6100000200")
	if v := anon.expect("NEG-ERR"); v[1] != "named" || !strings.HasPrefix(v[2].(string), "auth-required:") {
		t.Fatalf("anonymous union naming a private thing: %v, want NEG-ERR auth-required:", v)
	}

	member := e.dial()
	challenge, _ := member.expect("AUTH")[1].(string)
	auth := nostr.Event{Kind: 22242, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"relay", e.url}, {"challenge", challenge}}}
	auth.Sign(memberSK)
	member.sendJSON("AUTH", auth)
	if v := member.expect("OK"); v[2] != true {
		t.Fatalf("AUTH: %v", v)
	}
	_, haveNots, err = clientSyncAny(rawTransport{member}, "u", append(union, named), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !sameSet(haveNots, []string{secret.ID, public1.ID, public7.ID}) {
		t.Fatalf("member union: %v, want all three ids", haveNots)
	}
}
