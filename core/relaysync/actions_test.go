package relaysync

import (
	"slices"
	"testing"
)

func TestG02_ComputeActions(t *testing.T) {
	x := NewRepoSyncIndex()
	x.SetAnnouncement(repoAddr(0), []string{"wss://a.example", "wss://b.example"}, true)
	x.SetAnnouncement(repoAddr(1), []string{"wss://a.example"}, true)
	for i := 1; i <= 4; i++ {
		if _, err := x.AddRootEvent(repoAddr(0), hexID(i)); err != nil {
			t.Fatal(err)
		}
	}
	// Event 4 tags both repos: it must be filtered on once.
	if _, err := x.AddRootEvent(repoAddr(1), hexID(4)); err != nil {
		t.Fatal(err)
	}
	targets, _ := DeriveRelayTargets(x, TargetRules{})
	connected := func(confirmed map[RepoID]uint32) *RelayState {
		rs := newRelayState("", false)
		rs.Status = Connected
		maps := rs.Confirmed
		for k, v := range confirmed {
			maps[k] = v
		}
		return rs
	}
	type exp struct {
		relay  string
		kind   ActionKind
		addrs  []string
		events []string
	}
	cases := []struct {
		name      string
		confirmed RelaySyncIndex
		pending   PendingSyncIndex
		want      []exp
	}{
		{
			name: "unknown relays get Connect",
			want: []exp{{relay: "wss://a.example", kind: ActConnect}, {relay: "wss://b.example", kind: ActConnect}},
		},
		{
			name: "connecting and disconnected relays are skipped",
			confirmed: RelaySyncIndex{
				"wss://a.example": &RelayState{Status: Connecting},
				"wss://b.example": &RelayState{Status: Disconnected},
			},
		},
		{
			name:      "nothing confirmed: everything, shared event once",
			confirmed: RelaySyncIndex{"wss://a.example": connected(nil), "wss://b.example": connected(nil)},
			want: []exp{
				{"wss://a.example", ActAddFilters, []string{repoAddr(0), repoAddr(1)}, []string{hexID(1), hexID(2), hexID(3), hexID(4)}},
				{"wss://b.example", ActAddFilters, []string{repoAddr(0)}, []string{hexID(1), hexID(2), hexID(3), hexID(4)}},
			},
		},
		{
			name: "confirmed prefix and pending batch are subtracted",
			confirmed: RelaySyncIndex{
				"wss://a.example": connected(map[RepoID]uint32{0: 2, 1: 2}),
				"wss://b.example": connected(map[RepoID]uint32{0: 5}),
			},
			pending: PendingSyncIndex{"wss://a.example": {{Items: []ItemRange{{Repo: 0, From: 2, To: 4}}}}},
			want:    []exp{{"wss://a.example", ActAddFilters, nil, []string{hexID(4)}}},
		},
		{
			name: "all pending: nothing",
			confirmed: RelaySyncIndex{
				"wss://a.example": connected(nil),
				"wss://b.example": connected(map[RepoID]uint32{0: 5}),
			},
			pending: PendingSyncIndex{"wss://a.example": {
				{Items: []ItemRange{{Repo: 0, From: 0, To: 3}}},
				{Items: []ItemRange{{Repo: 0, From: 3, To: 5}, {Repo: 1, From: 0, To: 2}}},
			}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.confirmed == nil {
				c.confirmed = RelaySyncIndex{}
			}
			got := ComputeActions(x, targets, c.pending, c.confirmed, 100)
			if len(got) != len(c.want) {
				t.Fatalf("%d actions, want %d: %+v", len(got), len(c.want), got)
			}
			for i, w := range c.want {
				a := got[i]
				if a.Relay != w.relay || a.Kind != w.kind || !slices.Equal(a.Addrs, w.addrs) || !slices.Equal(a.Events, w.events) {
					t.Fatalf("action %d = %s kind %d addrs %v events %v; want %+v", i, a.Relay, a.Kind, a.Addrs, a.Events, w)
				}
				if a.Kind == ActAddFilters {
					if want := FilterCount(len(w.addrs), len(w.events), 100); len(a.Filters) != want {
						t.Fatalf("%d filters, want %d", len(a.Filters), want)
					}
				}
			}
		})
	}
}

func TestConfirmOutOfOrder(t *testing.T) {
	rs := newRelayState("wss://a.example", false)
	rs.confirm([]ItemRange{{Repo: 0, From: 3, To: 5}})
	if rs.Confirmed[0] != 0 {
		t.Fatalf("later range confirmed before the gap closed: %d", rs.Confirmed[0])
	}
	rs.confirm([]ItemRange{{Repo: 0, From: 0, To: 3}, {Repo: 1, From: 0, To: 1}})
	if rs.Confirmed[0] != 5 || rs.Confirmed[1] != 1 || rs.ahead != nil {
		t.Fatalf("confirmed %v ahead %v", rs.Confirmed, rs.ahead)
	}
	if r, e := rs.ConfirmedCounts(); r != 2 || e != 4 {
		t.Fatalf("counts %d repos %d events", r, e)
	}
}
