package nip34

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// The worked examples of maintainers-v3.md §5, one test per row, for the
// repository /A/d. Keys: A, B, C, D, E, L.
var (
	kA = pkA
	kB = pkB
	kC = pkC
	kD = pkD
	kE = strings.Repeat("e", 64)
	kL = strings.Repeat("1", 64)
)

// announce parses an announcement of identifier "d" by pk with the tags,
// created at t with the given id ("" keeps the computed one).
func annV3(t *testing.T, pk string, created int64, id string, tags ...[]string) Announcement {
	t.Helper()
	evt := &nostr.Event{Kind: KindAnnouncement, PubKey: pk, CreatedAt: nostr.Timestamp(created), Tags: nostr.Tags{{"d", "d"}}}
	for _, tg := range tags {
		evt.Tags = append(evt.Tags, nostr.Tag(tg))
	}
	evt.ID = evt.GetID()
	if id != "" {
		evt.ID = id
	}
	a, err := ParseAnnouncement(evt)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// loaderOf is a Loader over anns that keeps the Later version per author,
// counting the keys it is asked about.
func loaderOf(anns []Announcement, asked *int) Loader {
	return func(pk string) (Announcement, bool) {
		if asked != nil {
			*asked++
		}
		var best Announcement
		found := false
		for _, a := range anns {
			if a.Pubkey == pk && (!found || newer(a, best)) {
				best, found = a, true
			}
		}
		return best, found
	}
}

func M(pk string, b ...string) []string    { return append([]string{"M", pk}, b...) }
func m(pk string, b ...string) []string    { return append([]string{"m", pk}, b...) }
func o(pk string, b ...string) []string    { return append([]string{"o", pk}, b...) }
func mt(pks ...string) []string            { return append([]string{"maintainers"}, pks...) }
func keys(pks ...string) []string          { sort.Strings(pks); return pks }
func resolveA(anns ...Announcement) Roster { return Resolve(kA, loaderOf(anns, nil)) }

func wantRoster(t *testing.T, got Roster, want ...string) {
	t.Helper()
	if g := got.Members(); !reflect.DeepEqual(g, keys(want...)) && !(len(g) == 0 && len(want) == 0) {
		t.Fatalf("maintainers = %v, want %v (fail %q)", short(g), short(keys(want...)), got.Fail)
	}
}

func short(pks []string) []string {
	out := make([]string, len(pks))
	for i, p := range pks {
		out[i] = p[:1]
	}
	return out
}

func TestMaintainersV3_Case01_ImplicitSole(t *testing.T) {
	wantRoster(t, resolveA(annV3(t, kA, 1, "")), kA)
}

func TestMaintainersV3_Case02_LegacyInviteeWithoutAnnouncement(t *testing.T) {
	// The flat rule gave {A,B}: B is only invited.
	wantRoster(t, resolveA(annV3(t, kA, 1, "", mt(kB))), kA)
}

func TestMaintainersV3_Case03_LegacyReciprocity(t *testing.T) {
	wantRoster(t, resolveA(annV3(t, kA, 1, "", mt(kB)), annV3(t, kB, 1, "", mt(kA))), kA, kB)
}

func TestMaintainersV3_Case04_UnconfirmedCycleCannotBootstrap(t *testing.T) {
	wantRoster(t, resolveA(annV3(t, kA, 1, "", mt(kB)), annV3(t, kB, 1, "", mt(kC)), annV3(t, kC, 1, "", mt(kB))), kA)
}

func TestMaintainersV3_Case05_RecursionThroughConfirmedKey(t *testing.T) {
	wantRoster(t, resolveA(annV3(t, kA, 1, "", mt(kB)), annV3(t, kB, 1, "", mt(kA, kC)), annV3(t, kC, 1, "", mt(kB))), kA, kB, kC)
}

func TestMaintainersV3_Case06_CompatibilityTagIgnored(t *testing.T) {
	wantRoster(t, resolveA(annV3(t, kA, 1, "", M(kA), m(kB), mt(kA, kB))), kA)
}

func TestMaintainersV3_Case07_CanonicalAcceptance(t *testing.T) {
	wantRoster(t, resolveA(annV3(t, kA, 1, "", M(kA), m(kB)), annV3(t, kB, 1, "", M(kA), m(kB))), kA, kB)
}

func TestMaintainersV3_Case08_AnyEdgeBack(t *testing.T) {
	wantRoster(t, resolveA(annV3(t, kA, 1, "", M(kA), m(kB)), annV3(t, kB, 1, "", mt(kA))), kA, kB)
}

func TestMaintainersV3_Case09_SelfEndVetoes(t *testing.T) {
	wantRoster(t, resolveA(annV3(t, kA, 1, "", M(kA), m(kB)), annV3(t, kB, 1, "", M(kA), m(kB, "10", "20"))), kA)
}

func TestMaintainersV3_Case10_StandingAcceptance(t *testing.T) {
	b := annV3(t, kB, 1, "", M(kA), m(kB, "10"))
	wantRoster(t, resolveA(annV3(t, kA, 1, "", M(kA), m(kB, "10", "20")), b), kA)
	wantRoster(t, resolveA(annV3(t, kA, 2, "", M(kA), m(kB, "10", "20", "30")), b), kA, kB)
}

func TestMaintainersV3_Case11_AcknowledgedRemovalNeedsReacceptance(t *testing.T) {
	a := annV3(t, kA, 1, "", M(kA), m(kB, "10", "20", "30"))
	wantRoster(t, resolveA(a, annV3(t, kB, 1, "", M(kA), m(kB, "10", "20"))), kA)
	wantRoster(t, resolveA(a, annV3(t, kB, 2, "", M(kA), m(kB, "10", "20", "31"))), kA, kB)
}

func TestMaintainersV3_Case12_DeferIsNotAnAssignment(t *testing.T) {
	wantRoster(t, resolveA(annV3(t, kA, 1, "", M(kA), m(kB, "5", "defer")), annV3(t, kB, 1, "", M(kA), m(kB))), kA)
}

func TestMaintainersV3_Case13_DeferCopyIsNeutral(t *testing.T) {
	wantRoster(t, resolveA(
		annV3(t, kA, 1, "", M(kA), m(kB), m(kC)),
		annV3(t, kB, 1, "", M(kA), m(kB), m(kC, "7", "defer")),
		annV3(t, kC, 1, "", M(kA), m(kC)),
	), kA, kB, kC)
}

func TestMaintainersV3_Case14_ModeratorIsNotAMaintainer(t *testing.T) {
	r := resolveA(annV3(t, kA, 1, "", M(kA), o(kD)), annV3(t, kD, 1, "", M(kA), o(kD)))
	wantRoster(t, r, kA)
	if !r.Moderators[kD] || len(r.Moderators) != 1 {
		t.Fatalf("moderators = %v, want {D}", r.Moderators)
	}
	// Positive control: without D's self-o, D is not a moderator.
	r = resolveA(annV3(t, kA, 1, "", M(kA), o(kD)), annV3(t, kD, 1, "", M(kA)))
	if r.Moderators[kD] {
		t.Fatal("D moderator without accepting")
	}
}

func TestMaintainersV3_Case15_ModeratorTagMakesRoleAware(t *testing.T) {
	wantRoster(t, resolveA(annV3(t, kA, 1, "", o(kD), mt(kB)), annV3(t, kB, 1, "", mt(kA))), kA)
}

func TestMaintainersV3_Case16_MalformedRecord(t *testing.T) {
	wantRoster(t, resolveA(annV3(t, kA, 1, "", M(kA), m(kB, "x")), annV3(t, kB, 1, "", M(kA), m(kB))), kA)
}

func TestMaintainersV3_Case17_LeadWalk(t *testing.T) {
	r := resolveA(annV3(t, kA, 1, "", M(kL), m(kA)), annV3(t, kL, 1, "", M(kL), m(kA)))
	wantRoster(t, r, kL, kA)
	if r.Seed != kL {
		t.Fatalf("seed %s, want L", r.Seed[:1])
	}
}

func TestMaintainersV3_Case18_PendingPath(t *testing.T) {
	r := resolveA(annV3(t, kA, 1, "", M(kL), m(kA)))
	wantRoster(t, r)
	if r.Fail != FailPendingLead {
		t.Fatalf("fail %q", r.Fail)
	}
}

func TestMaintainersV3_Case19_ConflictingLeads(t *testing.T) {
	r := resolveA(annV3(t, kA, 1, "", M(kB), M(kC)), annV3(t, kB, 1, "", M(kB)), annV3(t, kC, 1, "", M(kC)))
	wantRoster(t, r)
	if r.Fail != FailConflict {
		t.Fatalf("fail %q", r.Fail)
	}
}

func TestMaintainersV3_Case20_InvitedForkCannotTakeOver(t *testing.T) {
	anns := []Announcement{annV3(t, kA, 2, "", M(kA), m(kB), mt(kA, kB)), annV3(t, kB, 1, "")}
	r := resolveA(anns...)
	wantRoster(t, r, kA)
	sA := State{EventID: "aa", Pubkey: kA, CreatedAt: 5}
	sB := State{EventID: "bb", Pubkey: kB, CreatedAt: 9}
	if got, _ := LatestState([]State{sA, sB}, r.Maintainers); got.EventID != "aa" {
		t.Fatalf("authoritative state %s, want A's (S_B is not authoritative)", got.EventID)
	}
	// Positive control: once B accepts, S_B is authoritative.
	anns[1] = annV3(t, kB, 3, "", M(kA), m(kB))
	r = resolveA(anns...)
	if got, _ := LatestState([]State{sA, sB}, r.Maintainers); got.EventID != "bb" {
		t.Fatalf("after acceptance: %s, want S_B", got.EventID)
	}
}

func TestMaintainersV3_Case21_ScamListingImportsNothing(t *testing.T) {
	anns := []Announcement{annV3(t, kE, 1, "", mt(kA)), annV3(t, kA, 1, "")}
	r := Resolve(kE, loaderOf(anns, nil))
	wantRoster(t, r, kE)
}

func TestMaintainersV3_Case22_SameSecondLowerIDWins(t *testing.T) {
	low := annV3(t, kA, 10, strings.Repeat("0", 64))
	high := annV3(t, kA, 10, strings.Repeat("f", 64), mt(kB))
	b := annV3(t, kB, 1, "", mt(kA))
	wantRoster(t, resolveA(high, low, b), kA)
	wantRoster(t, resolveA(low, high, b), kA)
	// Positive control: with the maintainers version the lower id, B is in.
	low2 := annV3(t, kA, 10, strings.Repeat("0", 64), mt(kB))
	high2 := annV3(t, kA, 10, strings.Repeat("f", 64))
	wantRoster(t, resolveA(high2, low2, b), kA, kB)
}

func TestMaintainersV3_Case23_SameSecondStatesLowerIDAuthoritative(t *testing.T) {
	r := resolveA(annV3(t, kA, 1, "", mt(kB)), annV3(t, kB, 1, "", mt(kA)))
	s1 := State{EventID: "9" + strings.Repeat("0", 63), Pubkey: kA, CreatedAt: 50}
	s2 := State{EventID: "1" + strings.Repeat("0", 63), Pubkey: kB, CreatedAt: 50}
	for _, order := range [][]State{{s1, s2}, {s2, s1}} {
		if got, _ := LatestState(order, r.Maintainers); got.EventID != s2.EventID {
			t.Fatalf("authoritative %s, want the lower id", got.EventID[:1])
		}
	}
}

func TestMaintainersV3_Case24_RemovedKeysStatesIneligible(t *testing.T) {
	c := annV3(t, kC, 1, "", M(kA), m(kC))
	before := resolveA(annV3(t, kA, 1, "", M(kA), m(kC)), c)
	after := resolveA(annV3(t, kA, 2, "", M(kA), m(kC, "1", "2")), c)
	sA := State{EventID: "aa", Pubkey: kA, CreatedAt: 5}
	sC := State{EventID: "cc", Pubkey: kC, CreatedAt: 9}
	if got, _ := LatestState([]State{sA, sC}, before.Maintainers); got.EventID != "cc" {
		t.Fatalf("before removal: %s, want S_C", got.EventID)
	}
	if got, _ := LatestState([]State{sA, sC}, after.Maintainers); got.EventID != "aa" {
		t.Fatalf("after removal: %s, want A's (S_C ineligible)", got.EventID)
	}
}

func TestMaintainersV3_Case25_AcceptanceActivatesEarlierState(t *testing.T) {
	a := annV3(t, kA, 1, "", M(kA), m(kB))
	sA := State{EventID: "aa", Pubkey: kA, CreatedAt: 3}
	sB := State{EventID: "bb", Pubkey: kB, CreatedAt: 5}
	if got, _ := LatestState([]State{sA, sB}, resolveA(a).Maintainers); got.EventID != "aa" {
		t.Fatalf("before acceptance: %s", got.EventID)
	}
	if got, _ := LatestState([]State{sA, sB}, resolveA(a, annV3(t, kB, 20, "", M(kA), m(kB))).Maintainers); got.EventID != "bb" {
		t.Fatalf("after acceptance at t=20: %s, want S_B signed at t=5", got.EventID)
	}
}

// §1.2 and §6.4: malformed records and conflicting duplicates grant
// nothing but make the announcement role-aware; identical copies collapse.
func TestMaintainersV3_MalformedAndDuplicateRecords(t *testing.T) {
	b := annV3(t, kB, 1, "", M(kA), m(kB))
	cases := []struct {
		name string
		tags [][]string
		want []string
	}{
		{"identical copies collapse", [][]string{M(kA), m(kB, "5"), m(kB, "5")}, []string{kA, kB}},
		{"disagreeing copies grant nothing", [][]string{M(kA), m(kB), m(kB, "5", "9")}, []string{kA}},
		{"uppercase hex pubkey", [][]string{M(kA), m(strings.ToUpper(kB))}, []string{kA}},
		{"npub is not a role subject", [][]string{M(kA), m(Npub(kB))}, []string{kA}},
		{"defer in a start position", [][]string{M(kA), m(kB, "defer")}, []string{kA}},
		{"defer not last", [][]string{M(kA), m(kB, "1", "defer", "3")}, []string{kA}},
		{"boundary beyond int64", [][]string{M(kA), m(kB, "99999999999999999999")}, []string{kA}},
		{"negative boundary", [][]string{M(kA), m(kB, "-1")}, []string{kA}},
		{"malformed tag still role-aware: maintainers ignored", [][]string{{"m"}, mt(kB)}, []string{kA}},
		{"positive control: legacy list", [][]string{mt(kB)}, []string{kA, kB}},
		{"positive control: reopened", [][]string{M(kA), m(kB, "1", "2", "3")}, []string{kA, kB}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantRoster(t, resolveA(annV3(t, kA, 1, "", c.tags...), b), c.want...)
		})
	}
}

// §2.4: discovery is bounded; past a bound the roster is empty.
func TestMaintainersV3_DiscoveryBounds(t *testing.T) {
	// A chain A -> k1 -> k2 ... each listing back: 300 keys.
	var anns []Announcement
	prev := kA
	var chain []string
	for i := 0; i < 300; i++ {
		chain = append(chain, hexKey(i))
	}
	anns = append(anns, annV3(t, kA, 1, "", mt(chain[0])))
	for i, k := range chain {
		next := []string{prev}
		if i+1 < len(chain) {
			next = append(next, chain[i+1])
		}
		anns = append(anns, annV3(t, k, 1, "", mt(next...)))
		prev = k
	}
	asked := 0
	r := Resolve(kA, loaderOf(anns, &asked))
	if r.Fail != FailDiscoveryBound || len(r.Maintainers) != 0 {
		t.Fatalf("300-key roster: fail %q, %d maintainers", r.Fail, len(r.Maintainers))
	}
	if asked > MaxRosterPubkeys {
		t.Fatalf("loader asked %d times, bound %d", asked, MaxRosterPubkeys)
	}
	// Positive control: 200 keys resolve.
	r = Resolve(kA, loaderOf(anns[:201], nil))
	if r.Fail != "" || len(r.Maintainers) != 201 {
		t.Fatalf("200-key roster: fail %q, %d maintainers", r.Fail, len(r.Maintainers))
	}

	// A lead walk of 20 hops.
	var walk []Announcement
	for i := 0; i < 20; i++ {
		walk = append(walk, annV3(t, hexKey(1000+i), 1, "", M(hexKey(1000+i+1))))
	}
	walk = append(walk, annV3(t, hexKey(1020), 1, "", M(hexKey(1020))))
	if r := Resolve(hexKey(1000), loaderOf(walk, nil)); r.Fail != FailHopBound {
		t.Fatalf("20-hop walk: fail %q", r.Fail)
	}
	if r := Resolve(hexKey(1010), loaderOf(walk, nil)); r.Fail != "" || r.Seed != hexKey(1020) {
		t.Fatalf("10-hop walk: fail %q seed %q", r.Fail, r.Seed)
	}
}

func hexKey(i int) string {
	return strings.Repeat("0", 60) + pad4(itoaHex(i))
}

func itoaHex(i int) string {
	const digits = "0123456789abcdef"
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 16 {
		b = append([]byte{digits[i%16]}, b...)
	}
	return string(b)
}

func pad4(s string) string { return strings.Repeat("0", 4-len(s)) + s }

func TestLater_OneOrdering(t *testing.T) {
	lo, hi := strings.Repeat("0", 64), strings.Repeat("f", 64)
	if !Later(2, hi, 1, lo) || Later(1, lo, 2, hi) {
		t.Fatal("greater created_at must win")
	}
	if !Later(5, lo, 5, hi) || Later(5, hi, 5, lo) {
		t.Fatal("same second: the lower id must win")
	}
	if Later(5, lo, 5, lo) {
		t.Fatal("an event is not later than itself")
	}
}
