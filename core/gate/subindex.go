package gate

import (
	"slices"
	"strconv"
	"sync"

	"github.com/nbd-wtf/go-nostr"
)

// subIndex files every filter of every open subscription under one of its
// conditions, so that Broadcast tests only the filters an event could
// match instead of all of them (issue 15 part 2). A filter naming ids is
// filed under each id; otherwise one naming tag values under each value of
// one tag (the one with fewest values); otherwise under each author;
// otherwise under each kind; a filter with none of these (or only empty
// lists) is tested against every event. A filter can only match an event
// whose value for the condition it is filed under is one of its values, so
// the filters filed under the event's id, author, kind and tag values, plus
// the unfiled ones, include every filter it matches; each of them is then
// tested whole with Filter.Matches, which alone decides.
type subIndex struct {
	mu sync.RWMutex
	// byKey and unfiled are lists rather than sets: Broadcast walks them
	// for every event, and a slice walks several times faster than a map.
	// Each subFilter remembers its place in each list for O(1) removal.
	byKey   map[string][]*subFilter
	unfiled []*subFilter
}

// subFilter is one filter of one subscription, as filed.
type subFilter struct {
	c      *conn
	subid  string
	sub    *subscription
	filter *nostr.Filter
	keys   []string // where it is filed; none when unfiled
	pos    []int    // its index in byKey[keys[i]], or pos[0] in unfiled
}

func newSubIndex() *subIndex {
	return &subIndex{byKey: map[string][]*subFilter{}}
}

// Index keys: one byte for the condition, then its value.
func idKey(id string) string         { return "i" + id }
func authorKey(pk string) string     { return "p" + pk }
func kindKey(k int) string           { return "k" + strconv.Itoa(k) }
func tagKey(name, val string) string { return "t" + name + "\x00" + val }

// filterKeys says where f is filed, each key once; nil means unfiled.
func filterKeys(f *nostr.Filter) []string {
	keys := filedUnder(f)
	slices.Sort(keys)
	return slices.Compact(keys)
}

func filedUnder(f *nostr.Filter) []string {
	switch {
	case len(f.IDs) > 0:
		keys := make([]string, len(f.IDs))
		for i, id := range f.IDs {
			keys[i] = idKey(id)
		}
		return keys
	case hasTagValues(f):
		name := ""
		for n, vs := range f.Tags {
			if len(vs) > 0 && (name == "" || len(vs) < len(f.Tags[name]) || len(vs) == len(f.Tags[name]) && n < name) {
				name = n
			}
		}
		keys := make([]string, len(f.Tags[name]))
		for i, v := range f.Tags[name] {
			keys[i] = tagKey(name, v)
		}
		return keys
	case len(f.Authors) > 0:
		keys := make([]string, len(f.Authors))
		for i, pk := range f.Authors {
			keys[i] = authorKey(pk)
		}
		return keys
	case len(f.Kinds) > 0:
		keys := make([]string, len(f.Kinds))
		for i, k := range f.Kinds {
			keys[i] = kindKey(k)
		}
		return keys
	}
	return nil
}

func hasTagValues(f *nostr.Filter) bool {
	for _, vs := range f.Tags {
		if len(vs) > 0 {
			return true
		}
	}
	return false
}

// add files every filter of sub; remove takes them out again.
func (x *subIndex) add(c *conn, subid string, sub *subscription) {
	x.mu.Lock()
	defer x.mu.Unlock()
	sub.filed = make([]*subFilter, len(sub.filters))
	for i := range sub.filters {
		sf := &subFilter{c: c, subid: subid, sub: sub, filter: &sub.filters[i], keys: filterKeys(&sub.filters[i])}
		sub.filed[i] = sf
		if sf.keys == nil {
			sf.pos = []int{len(x.unfiled)}
			x.unfiled = append(x.unfiled, sf)
			continue
		}
		sf.pos = make([]int, len(sf.keys))
		for j, k := range sf.keys {
			sf.pos[j] = len(x.byKey[k])
			x.byKey[k] = append(x.byKey[k], sf)
		}
	}
}

func (x *subIndex) remove(sub *subscription) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, sf := range sub.filed {
		if sf.keys == nil {
			x.unfiled = cut(x.unfiled, sf.pos[0], "")
			continue
		}
		for j, k := range sf.keys {
			list := cut(x.byKey[k], sf.pos[j], k)
			if len(list) == 0 {
				delete(x.byKey, k)
			} else {
				x.byKey[k] = list
			}
		}
	}
	sub.filed = nil
}

// cut removes list[i], moving the last element into its place and telling
// that element where it now is in the list filed under key ("" for
// unfiled).
func cut(list []*subFilter, i int, key string) []*subFilter {
	last := len(list) - 1
	if i != last {
		moved := list[last]
		list[i] = moved
		if key == "" {
			moved.pos[0] = i
		} else {
			for j, k := range moved.keys {
				if k == key {
					moved.pos[j] = i
				}
			}
		}
	}
	list[last] = nil
	return list[:last]
}

// delivery is one copy to send: a subscription of a connection.
type delivery struct {
	c     *conn
	subid string
	sub   *subscription
}

// match returns the subscriptions evt matches, each once.
func (x *subIndex) match(evt *nostr.Event) []delivery {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var out []delivery
	// Only a subscription with several filters, or a filter filed under
	// several tag values the event may all carry, can be found twice.
	var seen map[*subscription]struct{}
	try := func(list []*subFilter) {
		for _, sf := range list {
			if !sf.filter.Matches(evt) {
				continue
			}
			if len(sf.sub.filters) > 1 || len(sf.keys) > 1 {
				if _, done := seen[sf.sub]; done {
					continue
				}
				if seen == nil {
					seen = map[*subscription]struct{}{}
				}
				seen[sf.sub] = struct{}{}
			}
			out = append(out, delivery{sf.c, sf.subid, sf.sub})
		}
	}
	try(x.unfiled)
	if len(x.byKey) == 0 {
		return out
	}
	try(x.byKey[idKey(evt.ID)])
	try(x.byKey[authorKey(evt.PubKey)])
	try(x.byKey[kindKey(evt.Kind)])
	var tagsSeen map[string]struct{}
	for _, tag := range evt.Tags {
		if len(tag) < 2 {
			continue
		}
		k := tagKey(tag[0], tag[1])
		list := x.byKey[k]
		if len(list) == 0 {
			continue
		}
		// An event naming the same tag value twice must not deliver a
		// single-filter subscription twice.
		if _, dup := tagsSeen[k]; dup {
			continue
		}
		if tagsSeen == nil {
			tagsSeen = map[string]struct{}{}
		}
		tagsSeen[k] = struct{}{}
		try(list)
	}
	return out
}
