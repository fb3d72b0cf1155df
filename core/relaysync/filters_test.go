package relaysync

import (
	"slices"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

func TestG02_2_AnnouncementFilterLayer1(t *testing.T) {
	f := AnnouncementFilter(nil)
	if !slices.Equal(f.Kinds, []int{30617, 30618, 10317}) || f.Since != nil || len(f.Tags) != 0 {
		t.Fatalf("layer 1 without since = %v", f)
	}
	ts := nostr.Timestamp(1000)
	if f := AnnouncementFilter(&ts); f.Since == nil || *f.Since != 1000 {
		t.Fatalf("layer 1 with since = %v", f)
	}
}

func TestG02_2_ItemFilterLayers(t *testing.T) {
	addrs := make([]string, 250)
	for i := range addrs {
		addrs[i] = repoAddr(i)
	}
	ids := make([]string, 101)
	for i := range ids {
		ids[i] = hexID(i)
	}
	ts := nostr.Timestamp(42)
	cases := []struct {
		name        string
		got         []nostr.Filter
		wantLetters string
		wantSizes   []int
		since       bool
	}{
		{"layer 2 in chunks of 100", RepoFilters(addrs, 100, nil), "aAqaAqaAq", []int{100, 100, 100, 100, 100, 100, 50, 50, 50}, false},
		{"layer 3 in chunks of 100", RootEventFilters(ids, 100, &ts), "eEqeEq", []int{100, 100, 100, 1, 1, 1}, true},
		{"layers 2+3", ItemFilters(addrs[:1], ids[:2], 100, nil), "aAqeEq", []int{1, 1, 1, 2, 2, 2}, false},
		{"nothing", ItemFilters(nil, nil, 100, nil), "", nil, false},
		{"zero per filter means one", RepoFilters(addrs[:2], 0, nil), "aAqaAq", []int{1, 1, 1, 1, 1, 1}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := letters(t, c.got); got != c.wantLetters {
				t.Fatalf("letters %q, want %q", got, c.wantLetters)
			}
			var sizes []int
			for _, f := range c.got {
				_, v := tagValues(t, f)
				sizes = append(sizes, len(v))
				if (f.Since != nil) != c.since {
					t.Fatalf("since = %v, want set=%v", f.Since, c.since)
				}
				if len(f.Kinds) != 0 || f.Limit != 0 {
					t.Fatalf("item filter restricted by kind or limit: %v", f)
				}
			}
			if !slices.Equal(sizes, c.wantSizes) {
				t.Fatalf("sizes %v, want %v", sizes, c.wantSizes)
			}
			if n := len(c.got); len(c.wantSizes) > 0 && c.name != "zero per filter means one" && n != FilterCount(countLetter(c.got, "a"), countLetter(c.got, "e"), 100) {
				t.Fatalf("FilterCount disagrees with %d filters", n)
			}
		})
	}
	// The three letters of a chunk filter on the same values.
	fs := RootEventFilters(ids[:3], 100, nil)
	_, e := tagValues(t, fs[0])
	_, q := tagValues(t, fs[2])
	if !slices.Equal(e, q) || !slices.Equal(e, ids[:3]) {
		t.Fatalf("#e %v and #q %v differ", e, q)
	}
}

func countLetter(fs []nostr.Filter, l string) int {
	n := 0
	for _, f := range fs {
		n += len(f.Tags[l])
	}
	return n
}

func TestPackSize(t *testing.T) {
	cases := []struct {
		name          string
		groups        []ItemCount
		budget, least int
		want          int
	}{
		{"fits at the minimum", []ItemCount{{50, 2500}}, 100, 100, 100},            // 3*(1+25)=78
		{"grows to fit", []ItemCount{{50, 2500}}, 34, 100, 250},                    // 3*(1+10)=33
		{"seed 10x per relay", []ItemCount{{100, 5000}}, 34, 100, 500},             // 3*(1+10)=33
		{"two groups", []ItemCount{{1, 11}, {0, 4}}, 12, 2, 6},                     // 3*(1+2)+3*1=12
		{"budget below one chunk per layer", []ItemCount{{5, 5}, {5, 5}}, 6, 2, 5}, // fewest possible: 12
		{"empty", nil, 10, 100, 100},
	}
	for _, c := range cases {
		if got := PackSize(c.groups, c.budget, c.least); got != c.want {
			t.Errorf("%s: PackSize = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestG02_15MinuteRule(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	w := 15 * time.Minute
	cases := []struct {
		name      string
		last      time.Time
		fresh     bool
		wantSince time.Time
	}{
		{"never connected", time.Time{}, true, time.Time{}},
		{"gone 10 minutes", now.Add(-10 * time.Minute), false, now.Add(-25 * time.Minute)},
		{"gone exactly 15 minutes", now.Add(-w), false, now.Add(-30 * time.Minute)},
		{"gone 16 minutes", now.Add(-16 * time.Minute), true, time.Time{}},
	}
	for _, c := range cases {
		fresh, since := ReconnectPlan(c.last, now, w)
		if fresh != c.fresh || !since.Equal(c.wantSince) {
			t.Errorf("%s: fresh=%v since=%v, want %v %v", c.name, fresh, since, c.fresh, c.wantSince)
		}
	}
}

func TestDailyDelay(t *testing.T) {
	lo, hi := 23*time.Hour, 25*time.Hour
	for _, c := range []struct {
		r    float64
		want time.Duration
	}{{0, lo}, {0.5, 24 * time.Hour}, {0.999999, hi - time.Duration(0.000001*float64(2*time.Hour))}} {
		if got := DailyDelay(lo, hi, c.r); got != c.want {
			t.Errorf("DailyDelay(r=%v) = %s, want %s", c.r, got, c.want)
		}
	}
	if got := DailyDelay(hi, lo, 0.5); got != hi {
		t.Errorf("inverted bounds: %s", got)
	}
}
