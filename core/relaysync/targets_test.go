package relaysync

import (
	"slices"
	"testing"
)

func TestG02_6_G02_7_DeriveRelayTargets(t *testing.T) {
	const self = "wss://self.example"
	build := func(archived bool) *RepoSyncIndex {
		x := NewRepoSyncIndex()
		x.SetAnnouncement(repoAddr(0), []string{self, "wss://R1.example:443/", "wss://r2.example"}, true)
		// does not list us: hosted here only when archived (GRASP-05)
		x.SetAnnouncement(repoAddr(1), []string{"wss://r1.example", "wss://other.example"}, archived)
		x.SetAnnouncement(repoAddr(2), []string{self, "wss://r2.example", "wss://r3.example", "not a url"}, true)
		if _, err := x.AddRootEvent(repoAddr(3), hexID(1)); err != nil { // root event before any announcement
			t.Fatal(err)
		}
		return x
	}
	type want map[string][]int // relay -> repo indexes
	cases := []struct {
		name      string
		bootstrap []string
		sel       Selection
		archive   bool
		want      want
		boot      []string
	}{
		{
			name: "listing repos only, self excluded, URLs normalised",
			want: want{"wss://r1.example": {0}, "wss://r2.example": {0, 2}, "wss://r3.example": {2}},
		},
		{
			name:    "an archived repo that does not list us is synced",
			archive: true,
			want:    want{"wss://r1.example": {0, 1}, "wss://r2.example": {0, 2}, "wss://r3.example": {2}, "wss://other.example": {1}},
		},
		{
			name:      "bootstrap relays present with no repos, self never",
			bootstrap: []string{"wss://boot.example", self, "https://bogus"},
			want:      want{"wss://boot.example": nil, "wss://r1.example": {0}, "wss://r2.example": {0, 2}, "wss://r3.example": {2}},
			boot:      []string{"wss://boot.example"},
		},
		{
			name: "selection applied per repo; unlisted and duplicate picks ignored",
			sel:  Selection{repoAddr(2): {"wss://r3.example", "wss://unlisted.example", "wss://r3.example/"}},
			want: want{"wss://r1.example": {0}, "wss://r2.example": {0}, "wss://r3.example": {2}},
		},
		{
			name: "empty selection drops the repo",
			sel:  Selection{repoAddr(0): {}},
			want: want{"wss://r2.example": {2}, "wss://r3.example": {2}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := build(c.archive)
			got, _ := DeriveRelayTargets(x, TargetRules{Self: []string{self}, Bootstrap: c.bootstrap, Selection: c.sel})
			if len(got) != len(c.want) {
				t.Fatalf("relays %v, want %v", keys(got), c.want)
			}
			for relay, repos := range c.want {
				tg, ok := got[relay]
				if !ok {
					t.Fatalf("relay %s missing from %v", relay, keys(got))
				}
				var ids []int
				for _, r := range tg.Repos {
					ids = append(ids, int(r))
				}
				if !slices.Equal(ids, repos) {
					t.Fatalf("%s repos %v, want %v", relay, ids, repos)
				}
				if tg.Bootstrap != slices.Contains(c.boot, relay) {
					t.Fatalf("%s bootstrap=%v", relay, tg.Bootstrap)
				}
			}
		})
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestRepoSyncIndexRootEvents(t *testing.T) {
	x := NewRepoSyncIndex()
	for _, c := range []struct {
		repo, id int
		added    bool
	}{{0, 1, true}, {0, 1, false}, {1, 1, true}, {1, 1, false}, {0, 2, true}} {
		added, err := x.AddRootEvent(repoAddr(c.repo), hexID(c.id))
		if err != nil || added != c.added {
			t.Fatalf("AddRootEvent(%d,%d) = %v, %v; want %v", c.repo, c.id, added, err, c.added)
		}
	}
	r0, _ := x.Lookup(repoAddr(0))
	if got := x.RootEvents(r0); !slices.Equal(got, []string{hexID(1), hexID(2)}) || x.Items(r0) != 3 {
		t.Fatalf("repo 0 roots %v items %d", got, x.Items(r0))
	}
	if len(x.events) != 2 {
		t.Fatalf("event stored %d times, want once each", len(x.events))
	}
	for _, bad := range []string{"abc", hexID(1)[:63] + "g"} {
		if _, err := x.AddRootEvent(repoAddr(0), bad); err == nil {
			t.Fatalf("bad id %q accepted", bad)
		}
	}
}

// Two ids sharing the 8-byte lookup prefix must stay distinct.
func TestRepoSyncIndexPrefixCollision(t *testing.T) {
	x := NewRepoSyncIndex()
	a := "00000000000000000000000000000000000000000000000000000000000000aa"
	b := "00000000000000000000000000000000000000000000000000000000000000bb"
	for _, id := range []string{a, b, a, b} {
		if _, err := x.AddRootEvent(repoAddr(0), id); err != nil {
			t.Fatal(err)
		}
	}
	r, _ := x.Lookup(repoAddr(0))
	if got := x.RootEvents(r); !slices.Equal(got, []string{a, b}) {
		t.Fatalf("roots %v, want both, once", got)
	}
}
