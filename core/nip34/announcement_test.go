package nip34

import (
	"reflect"
	"testing"
)

func TestN34_1_AnnouncementMergesMultiValueAndRepeatedTags(t *testing.T) {
	e := ev(KindAnnouncement, pkA,
		[]string{"d", "my repo"},
		[]string{"name", "My Repo"},
		[]string{"description", "desc"},
		[]string{"web", "https://w1", "https://w2"},
		[]string{"clone", "https://a/x.git", "https://b/x.git"},
		[]string{"clone", "https://c/x.git", "https://a/x.git"},
		[]string{"relays", "wss://r1", " wss://r2 "},
		[]string{"relays", "wss://r3"},
		[]string{"maintainers", pkB, Npub(pkC)},
		[]string{"maintainers", "not-a-key", pkB, "BBBB"},
		[]string{"maintainers", pkD},
		[]string{"r", "ABCDEF0123456789abcdef0123456789abcdef01", "euc"},
		[]string{"r", "ffff"},
		[]string{"u", "30617:" + pkD + ":up", "wss://hint", pkD},
		[]string{"t", "go"}, []string{"t", "nostr"},
	)
	a, err := ParseAnnouncement(e)
	if err != nil {
		t.Fatal(err)
	}
	want := Announcement{
		EventID: e.ID, Pubkey: pkA, CreatedAt: 1000, Identifier: "my repo",
		Name: "My Repo", Description: "desc",
		Web:         []string{"https://w1", "https://w2"},
		Clone:       []string{"https://a/x.git", "https://b/x.git", "https://c/x.git"},
		Relays:      []string{"wss://r1", "wss://r2", "wss://r3"},
		Maintainers: []string{pkB, pkC, pkD},
		EUC:         "abcdef0123456789abcdef0123456789abcdef01",
		Upstreams:   []Upstream{{Ref: "30617:" + pkD + ":up", RelayHint: "wss://hint", Author: pkD}},
		Hashtags:    []string{"go", "nostr"},
	}
	if !reflect.DeepEqual(a, want) {
		t.Fatalf("got  %+v\nwant %+v", a, want)
	}
	if a.Repo().String() != "30617:"+pkA+":my repo" {
		t.Fatalf("Repo() = %s", a.Repo())
	}
}

func TestN34_1_AnnouncementErrors(t *testing.T) {
	cases := map[string]*struct {
		kind int
		tags [][]string
	}{
		"wrong kind":    {KindState, [][]string{{"d", "x"}}},
		"no d":          {KindAnnouncement, [][]string{{"name", "x"}}},
		"empty d":       {KindAnnouncement, [][]string{{"d", ""}}},
		"dot-dot d":     {KindAnnouncement, [][]string{{"d", ".."}}},
		"slash in d":    {KindAnnouncement, [][]string{{"d", "a/b"}}},
		"backslash":     {KindAnnouncement, [][]string{{"d", "a\\b"}}},
		"NUL in d":      {KindAnnouncement, [][]string{{"d", "a\x00"}}},
		"first d wins":  {KindAnnouncement, [][]string{{"d", "."}, {"d", "fine"}}},
		"bare d tag":    {KindAnnouncement, [][]string{{"d"}}},
		"only clone":    {KindAnnouncement, [][]string{{"clone", "https://x"}}},
		"bad UTF-8 id":  {KindAnnouncement, [][]string{{"d", "\xc3\x28"}}},
		"control char":  {KindAnnouncement, [][]string{{"d", "a\nb"}}},
		"just a period": {KindAnnouncement, [][]string{{"d", "."}}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseAnnouncement(ev(c.kind, pkA, c.tags...)); err == nil {
				t.Fatal("want error")
			}
		})
	}
}

func TestPubkeyHex(t *testing.T) {
	if h, ok := PubkeyHex(" " + vecNpub + " "); !ok || h != vecHex {
		t.Fatalf("npub: %q %v", h, ok)
	}
	if h, ok := PubkeyHex("7E7E9C42A91BFEF19FA929E5FDA1B72E0EBC1A4C1141673E2794234D86ADDF4E"); !ok || h != vecHex {
		t.Fatalf("upper hex: %q %v", h, ok)
	}
	for _, s := range []string{"", "npub1xyz", pkA[:10], "nsec1abc"} {
		if _, ok := PubkeyHex(s); ok {
			t.Errorf("PubkeyHex(%q) accepted", s)
		}
	}
}

// G08-1: ["private","true"] marks an announcement private; any other value,
// or a tag of another name, does not.
func TestG08_1_AnnouncementPrivateFlag(t *testing.T) {
	for _, c := range []struct {
		tag  []string
		want bool
	}{
		{[]string{"private", "true"}, true},
		{[]string{"private", "false"}, false},
		{[]string{"private"}, false},
		{[]string{"private", "TRUE"}, false},
		{[]string{"privat", "true"}, false},
	} {
		a, err := ParseAnnouncement(ev(KindAnnouncement, pkA, []string{"d", "x"}, c.tag))
		if err != nil {
			t.Fatal(err)
		}
		if a.Private != c.want {
			t.Errorf("%v: Private = %v, want %v", c.tag, a.Private, c.want)
		}
	}
}
