package relaysync

import "strings"

// pubkeys interns the outbox's participants: each key is kept once, as a
// string (what filters and relay lists carry), and everything else — root
// events' participant lists, repositories' people — holds its 4-byte id
// instead of a 16-byte string header. A root event has a few participants,
// and there is one root event per issue or patch series in the store (a
// million on an archive; issue 27 part 2). An id is freed once nothing
// refers to it and reused by the next new key, so a holder must drop its
// reference (unref) in the same step as it drops the id.
type pubkeys struct {
	ids  map[string]uint32
	keys []string // "" at a free id
	refs []uint32
	free []uint32
	dels int // deletes from ids since it was last copied (RepoSyncIndex.compact)
}

func newPubkeys() pubkeys { return pubkeys{ids: map[string]uint32{}} }

// lookup returns the id of key p, if it has one.
func (k *pubkeys) lookup(p string) (uint32, bool) {
	id, ok := k.ids[p]
	return id, ok
}

// key returns the key with id.
func (k *pubkeys) key(id uint32) string { return k.keys[id] }

// ref returns p's id, interning a copy of p if it is new (p may be sliced
// from a larger string: a decoded record), and counts one more reference.
func (k *pubkeys) ref(p string) uint32 {
	id, ok := k.ids[p]
	if !ok {
		p = strings.Clone(p)
		if n := len(k.free); n > 0 {
			id = k.free[n-1]
			k.free = k.free[:n-1]
			k.keys[id], k.refs[id] = p, 0
		} else {
			id = uint32(len(k.keys))
			k.keys = append(k.keys, p)
			k.refs = append(k.refs, 0)
		}
		k.ids[p] = id
	}
	k.refs[id]++
	return id
}

// unref drops one reference to id and frees it with the last.
func (k *pubkeys) unref(id uint32) {
	k.refs[id]--
	if k.refs[id] > 0 {
		return
	}
	delete(k.ids, k.keys[id])
	k.keys[id] = ""
	k.free = append(k.free, id)
	k.dels++
	switch {
	case len(k.ids) == 0:
		*k = newPubkeys()
	case k.dels >= len(k.ids):
		k.ids, k.dels = copyMap(k.ids), 0
	}
}

// len is the number of keys interned.
func (k *pubkeys) len() int { return len(k.ids) }
