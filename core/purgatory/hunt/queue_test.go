package hunt

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/throttle"
)

func TestG02_8_BackoffDoublesFrom20sCappedAt2m(t *testing.T) {
	base, max := 20*time.Second, 2*time.Minute
	for _, tc := range []struct {
		attempt int
		want    time.Duration
	}{
		{0, 20 * time.Second}, {1, 20 * time.Second}, {2, 40 * time.Second}, {3, 80 * time.Second},
		{4, 2 * time.Minute}, {5, 2 * time.Minute}, {1 << 30, 2 * time.Minute},
	} {
		if got := Backoff(tc.attempt, base, max); got != tc.want {
			t.Errorf("Backoff(%d) = %v, want %v", tc.attempt, got, tc.want)
		}
	}
}

func TestG02_1_DelaysUserExpectsPushSyncedHuntsSoon(t *testing.T) {
	hs := newHarness(t, DefaultOptions(), throttle.Limits{})
	url := "https://a.example/r.git"
	hs.sc.remote(url, KindOther, oid("x"))
	hs.h.Need(Need{Repo: repoN("user"), OIDs: []string{oid("x")}, Sources: []string{url}})
	hs.h.Need(Need{Repo: repoN("sync"), OIDs: []string{oid("x")}, Sources: []string{url}, FromSync: true})
	hs.advance(400*time.Millisecond, 100*time.Millisecond)
	if n := len(hs.sc.getCalls()); n != 0 {
		t.Fatalf("%d fetches before the 500 ms sync delay", n)
	}
	hs.advance(100*time.Millisecond, 100*time.Millisecond)
	calls := hs.sc.getCalls()
	if len(calls) != 1 || calls[0].repo != "sync" || !calls[0].at.Equal(t0.Add(500*time.Millisecond)) {
		t.Fatalf("after 500 ms: %+v, want one fetch for the synced repo", calls)
	}
	hs.advance(3*time.Minute-600*time.Millisecond, 10*time.Second)
	if n := len(hs.sc.getCalls()); n != 1 {
		t.Fatalf("user-submitted repo hunted before 3 min (%d fetches)", n)
	}
	hs.advance(100*time.Millisecond, 100*time.Millisecond)
	calls = hs.sc.getCalls()
	if len(calls) != 2 || calls[1].repo != "user" || !calls[1].at.Equal(t0.Add(3*time.Minute)) {
		t.Fatalf("after 3 min: %+v", calls)
	}
}

func TestG02_1_BurstForOneRepoIsOneFetch(t *testing.T) {
	hs := newHarness(t, DefaultOptions(), throttle.Limits{})
	url := "https://a.example/r.git"
	hs.sc.remote(url, KindOther, oid("a"), oid("b"), oid("c"))
	r := repoN("r")
	for i, o := range []string{"a", "b", "c"} {
		hs.h.Need(Need{Repo: r, OIDs: []string{oid(o)}, EventID: o, Sources: []string{url}, FromSync: true})
		if i < 2 {
			hs.advance(100*time.Millisecond, 100*time.Millisecond)
		}
	}
	hs.advance(time.Second, 100*time.Millisecond)
	calls := hs.sc.getCalls()
	if len(calls) != 1 || len(calls[0].oids) != 3 {
		t.Fatalf("calls %+v, want one fetch of 3 objects", calls)
	}
	if !calls[0].at.Equal(t0.Add(500 * time.Millisecond)) {
		t.Fatalf("fetched at %v, want the first need's deadline", calls[0].at.Sub(t0))
	}
	if st := hs.h.Stats(); st.Repos != 0 || st.OIDsFetched != 3 || hs.sc.arrivals("r") != 1 {
		t.Fatalf("stats %+v arrivals %d", st, hs.sc.arrivals("r"))
	}
}

func callTimes(cs []call) []time.Duration {
	out := make([]time.Duration, len(cs))
	for i, c := range cs {
		out[i] = c.at.Sub(t0)
	}
	return out
}

func TestG02_8_BackoffScheduleBetweenRounds(t *testing.T) {
	hs := newHarness(t, DefaultOptions(), throttle.Limits{})
	url := "https://a.example/r.git"
	hs.sc.remote(url, KindOther) // has nothing
	hs.h.Need(Need{Repo: repoN("r"), OIDs: []string{oid("x")}, Sources: []string{url}, FromSync: true})
	hs.advance(7*time.Minute, 500*time.Millisecond)
	ms := time.Millisecond
	want := []time.Duration{500 * ms, 20500 * ms, 60500 * ms, 140500 * ms, 260500 * ms, 380500 * ms}
	if got := callTimes(hs.sc.getCalls()); !reflect.DeepEqual(got, want) {
		t.Fatalf("fetch times %v, want %v", got, want)
	}
	if st := hs.h.Stats(); st.Repos != 1 || st.Hunting != 0 {
		t.Fatalf("stats %+v, want the repo kept in backoff", st)
	}
}

func TestG02_FreshStartResetsAttempts(t *testing.T) {
	hs := newHarness(t, DefaultOptions(), throttle.Limits{})
	url := "https://a.example/r.git"
	hs.sc.remote(url, KindOther)
	r := repoN("r")
	hs.h.Need(Need{Repo: r, OIDs: []string{oid("x")}, Sources: []string{url}, FromSync: true})
	hs.advance(70*time.Second, 500*time.Millisecond) // rounds at 0.5, 20.5, 60.5; next due at 140.5
	hs.h.Need(Need{Repo: r, OIDs: []string{oid("y")}, Sources: []string{url}, FromSync: true})
	hs.advance(30*time.Second, 500*time.Millisecond)
	ms := time.Millisecond
	want := []time.Duration{500 * ms, 20500 * ms, 60500 * ms, 70500 * ms, 90500 * ms}
	if got := callTimes(hs.sc.getCalls()); !reflect.DeepEqual(got, want) {
		t.Fatalf("fetch times %v, want %v (new need hunts at once, backoff restarts at 20 s)", got, want)
	}
}

func TestG02_PartialSuccessAggregatesAcrossURLs(t *testing.T) {
	hs := newHarness(t, DefaultOptions(), throttle.Limits{})
	u1, u2 := "https://one.example/r.git", "https://two.example/r.git"
	hs.sc.remote(u1, KindOther, oid("x"))
	hs.sc.remote(u2, KindOther, oid("y"))
	hs.h.Need(Need{Repo: repoN("r"), OIDs: []string{oid("x"), oid("y")}, Sources: []string{u1, u2}, FromSync: true})
	hs.advance(time.Second, 500*time.Millisecond)
	calls := hs.sc.getCalls()
	if len(calls) != 2 || calls[0].url != u1 || calls[1].url != u2 {
		t.Fatalf("calls %v", callURLs(calls))
	}
	if !reflect.DeepEqual(calls[1].oids, []string{oid("y")}) {
		t.Fatalf("second fetch asked for %v, want only the object still missing", calls[1].oids)
	}
	if got := hs.sc.arrivals("r"); got != 2 {
		t.Fatalf("Arrived called %d times, want after each partial fetch (2)", got)
	}
	if st := hs.h.Stats(); st.Repos != 0 || st.OIDsFetched != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestG02_ObjectsAlreadyPresentAreNotFetched(t *testing.T) {
	hs := newHarness(t, DefaultOptions(), throttle.Limits{})
	r := repoN("r")
	hs.sc.put(r, oid("x"))
	hs.h.Need(Need{Repo: r, OIDs: []string{oid("x")}, Sources: []string{"https://a.example/r.git"}, FromSync: true})
	hs.advance(time.Second, 500*time.Millisecond)
	if n := len(hs.sc.getCalls()); n != 0 {
		t.Fatalf("%d fetches for an object already here", n)
	}
	if hs.sc.arrivals("r") != 1 || hs.h.Stats().Repos != 0 {
		t.Fatal("present object did not release and complete the entry")
	}
}

func TestG02_SourcesAddedDuringARoundAreTried(t *testing.T) {
	hs := newHarness(t, DefaultOptions(), throttle.Limits{})
	hs.sc.took = 10 * time.Second
	u1, u2 := "https://one.example/r.git", "https://two.example/r.git"
	hs.sc.remote(u1, KindOther)
	hs.sc.remote(u2, KindOther, oid("x"))
	r := repoN("r")
	hs.h.Need(Need{Repo: r, OIDs: []string{oid("x")}, Sources: []string{u1}, FromSync: true})
	hs.advance(5*time.Second, 500*time.Millisecond)
	hs.h.Need(Need{Repo: r, OIDs: []string{oid("x")}, Sources: []string{u2}, FromSync: true})
	hs.advance(20*time.Second, 500*time.Millisecond)
	calls := hs.sc.getCalls()
	if len(calls) != 2 || calls[1].url != u2 || calls[1].at.Sub(t0) != 10500*time.Millisecond {
		t.Fatalf("calls %v at %v", callURLs(calls), callTimes(calls))
	}
	if hs.h.Stats().Repos != 0 {
		t.Fatal("entry not complete")
	}
}

func TestG01P5_ForgetStopsTheHunt(t *testing.T) {
	hs := newHarness(t, DefaultOptions(), throttle.Limits{})
	hs.sc.took = 10 * time.Second
	url := "https://a.example/r.git"
	hs.sc.remote(url, KindOther, oid("x"))
	r := repoN("r")
	hs.h.Need(Need{Repo: r, OIDs: []string{oid("x")}, Sources: []string{url}, FromSync: true})
	hs.advance(time.Second, 500*time.Millisecond) // fetch in flight
	if st := hs.h.Stats(); st.InFlight["a.example"] != 1 {
		t.Fatalf("stats %+v, want one fetch in flight", st)
	}
	hs.h.Forget(r)
	hs.settle()
	if st := hs.h.Stats(); st.Repos != 0 {
		t.Fatalf("after Forget: %+v", st)
	}
	hs.advance(10*time.Second, 500*time.Millisecond) // the cancelled fetch returns its slot
	if st := hs.h.Stats(); len(st.InFlight) != 0 {
		t.Fatalf("slot not returned: %+v", st)
	}
	hs.advance(5*time.Minute, 10*time.Second)
	if n := len(hs.sc.getCalls()); n != 1 || hs.sc.arrivals("r") != 0 {
		t.Fatalf("fetches %d, arrivals %d after Forget", n, hs.sc.arrivals("r"))
	}
	if p := hs.clk.Pending(); p != 0 {
		t.Fatalf("%d timers armed with an empty queue", p)
	}
}

func TestG01P5_ForgetEventDropsOnlyItsObjects(t *testing.T) {
	hs := newHarness(t, DefaultOptions(), throttle.Limits{})
	r := repoN("r")
	hs.h.Need(Need{Repo: r, OIDs: []string{oid("x"), oid("s")}, EventID: "e1"})
	hs.h.Need(Need{Repo: r, OIDs: []string{oid("y"), oid("s")}, EventID: "e2"})
	hs.h.Need(Need{Repo: repoN("q"), OIDs: []string{oid("z")}}) // a recheck: no event
	hs.h.ForgetEvent(r, "e1")
	hs.settle()
	if st := hs.h.Stats(); st.Repos != 2 || st.NeededOIDs != 3 {
		t.Fatalf("after forgetting e1: %+v, want y, s and z needed", st)
	}
	hs.h.ForgetEvent(r, "e2")
	hs.h.ForgetEvent(repoN("q"), "e9")
	hs.settle()
	if st := hs.h.Stats(); st.Repos != 1 || st.NeededOIDs != 1 {
		t.Fatalf("after forgetting e2: %+v, want only the recheck left", st)
	}
}

func TestRunTwiceAtOnceIsRefused(t *testing.T) {
	hs := newHarness(t, DefaultOptions(), throttle.Limits{})
	hs.h.Need(Need{Repo: repoN("r"), OIDs: []string{oid("x")}})
	hs.settle() // the first Run is in its loop
	if err := hs.h.Run(context.Background()); err == nil {
		t.Fatal("second concurrent Run accepted")
	}
}

func TestG02_RecheckQueuesDriftedRepos(t *testing.T) {
	hs := newHarness(t, DefaultOptions(), throttle.Limits{})
	url := "https://a.example/r.git"
	hs.sc.remote(url, KindOther, oid("x"))
	hs.sc.drifted = []Need{{Repo: repoN("d"), OIDs: []string{oid("x")}, Sources: []string{url}}}
	if err := hs.h.Recheck(context.Background()); err != nil {
		t.Fatal(err)
	}
	hs.advance(time.Second, 500*time.Millisecond)
	calls := hs.sc.getCalls()
	if len(calls) != 1 || calls[0].repo != "d" || calls[0].at.Sub(t0) != 500*time.Millisecond {
		t.Fatalf("calls %+v, want the drifted repo hunted with the sync delay", calls)
	}
}

func TestInvalidNeedsAreIgnored(t *testing.T) {
	hs := newHarness(t, DefaultOptions(), throttle.Limits{})
	hs.h.Need(Need{Repo: repoN("bad"), OIDs: []string{"xyz", "ABC", ""}, Sources: []string{"https://a.example/r.git"}})
	hs.h.Need(Need{Repo: repoN("r"), OIDs: []string{oid("x")}, FromSync: true, Sources: []string{
		"file:///etc/passwd", "ssh://git@a.example/r.git", "ext::sh -c id", "https://user:pw@a.example/r.git", "-u", "",
	}})
	hs.advance(2*time.Second, 500*time.Millisecond)
	if st := hs.h.Stats(); st.Repos != 1 || st.NeededOIDs != 1 {
		t.Fatalf("stats %+v: a need without valid objects must not queue", st)
	}
	if n := len(hs.sc.getCalls()); n != 0 {
		t.Fatalf("%d fetches from unusable sources", n)
	}
}
