package relaysync

import "github.com/nbd-wtf/go-nostr"

// Layer 1 kinds: repository announcements, repository states and user
// GRASP-server lists, all of them, for discovery. Asked once per connection.
var AnnouncementKinds = []int{30617, 30618, 10317}

// Tag letters of the item layers. A filter's tag conditions are ANDed, so
// each letter needs its own filter over the same values.
var (
	repoTagLetters = [3]string{"a", "A", "q"} // layer 2: repo coordinates
	rootTagLetters = [3]string{"e", "E", "q"} // layer 3: root event ids
)

// FiltersPerChunk is how many filters one chunk of values costs.
const FiltersPerChunk = 3

// AnnouncementFilter is layer 1; since nil means full history.
func AnnouncementFilter(since *nostr.Timestamp) nostr.Filter {
	return nostr.Filter{Kinds: append([]int(nil), AnnouncementKinds...), Since: since}
}

// HeldRepoFilter is layer 1 of a relay connected only for repositories
// still in purgatory: the announcements and states of their identifiers
// ds, no discovery (audit F26).
func HeldRepoFilter(ds []string, since *nostr.Timestamp) nostr.Filter {
	return nostr.Filter{Kinds: []int{30617, 30618}, Tags: nostr.TagMap{"d": ds}, Since: since}
}

// RepoFilters is layer 2: events tagging one of the repository coordinates
// via #a, #A or #q, perFilter coordinates per filter.
func RepoFilters(addrs []string, perFilter int, since *nostr.Timestamp) []nostr.Filter {
	return tagFilters(nil, addrs, perFilter, since, repoTagLetters)
}

// RootEventFilters is layer 3: events tagging one of the root events via
// #e, #E or #q, perFilter ids per filter.
func RootEventFilters(ids []string, perFilter int, since *nostr.Timestamp) []nostr.Filter {
	return tagFilters(nil, ids, perFilter, since, rootTagLetters)
}

// ItemFilters is layers 2 and 3 together.
func ItemFilters(addrs, ids []string, perFilter int, since *nostr.Timestamp) []nostr.Filter {
	out := make([]nostr.Filter, 0, FilterCount(len(addrs), len(ids), perFilter))
	out = tagFilters(out, addrs, perFilter, since, repoTagLetters)
	return tagFilters(out, ids, perFilter, since, rootTagLetters)
}

func tagFilters(out []nostr.Filter, values []string, perFilter int, since *nostr.Timestamp, letters [3]string) []nostr.Filter {
	if perFilter < 1 {
		perFilter = 1
	}
	for start := 0; start < len(values); start += perFilter {
		end := min(start+perFilter, len(values))
		// The three filters share one backing array: the values are the
		// bulk of a filter's memory and none of them is mutated.
		chunk := values[start:end:end]
		for _, l := range letters {
			out = append(out, nostr.Filter{Tags: nostr.TagMap{l: chunk}, Since: since})
		}
	}
	return out
}

// FilterCount is how many layer 2+3 filters repos coordinates and events
// root ids cost at perFilter values per filter.
func FilterCount(repos, events, perFilter int) int {
	if perFilter < 1 {
		perFilter = 1
	}
	return FiltersPerChunk * (ceilDiv(repos, perFilter) + ceilDiv(events, perFilter))
}

// ItemCount is a number of layer 2 and layer 3 values to be filtered on.
type ItemCount struct{ Repos, Events int }

// PackSize is the smallest number of values per filter, at least minPer, that
// puts every group in at most budget filters in total (groups are filtered
// separately, e.g. catch-up with since and new items without). When even one
// chunk per non-empty layer exceeds the budget it returns the size that gives
// exactly that, the fewest filters possible.
func PackSize(groups []ItemCount, budget, minPer int) int {
	if minPer < 1 {
		minPer = 1
	}
	total := func(k int) int {
		n := 0
		for _, g := range groups {
			n += FilterCount(g.Repos, g.Events, k)
		}
		return n
	}
	hi := minPer
	for _, g := range groups {
		hi = max(hi, g.Repos, g.Events)
	}
	if total(minPer) <= budget || total(hi) > budget {
		if total(minPer) <= budget {
			return minPer
		}
		return hi
	}
	lo := minPer // total(lo) > budget, total(hi) <= budget
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if total(mid) <= budget {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

func ceilDiv(n, d int) int { return (n + d - 1) / d }
