package relaysync

// Remove forgets a repository: its coordinate, its relay list and its root
// events (an event another repository also lists stays for that one). It
// reports the id the repository had, which the next new repository may
// reuse, and whether it was known. Memory is returned: positions go to free
// lists, interned relays and events nobody references any more are
// released, and the lookup maps are rebuilt after as many deletes as they
// hold entries, so a busy server's index is bounded by the
// repositories it syncs at once, not by every repository it ever saw.
func (x *RepoSyncIndex) Remove(addr string) (RepoID, bool) {
	id, ok := x.byAddr[addr]
	if !ok {
		return 0, false
	}
	e := &x.repos[id]
	for _, ri := range e.relays {
		x.releaseRelay(ri)
	}
	for _, ri := range e.outbox {
		x.releaseRelay(ri)
	}
	for _, ei := range e.roots {
		x.dropEventOwner(ei, id)
	}
	delete(x.byAddr, addr)
	x.delAddrs++
	x.repos[id] = repoEntry{}
	x.freeRepos = append(x.freeRepos, id)
	x.compact()
	return id, true
}

// releaseRelay drops one repository's reference to an interned relay URL.
func (x *RepoSyncIndex) releaseRelay(ri uint32) {
	x.relayRefs[ri]--
	if x.relayRefs[ri] > 0 {
		return
	}
	delete(x.relayByURL, x.relayURLs[ri])
	x.delRelays++
	x.relayURLs[ri] = ""
	x.freeRelays = append(x.freeRelays, ri)
}

// dropEventOwner removes repo from the owners of event ei and releases the
// event once no repository lists it.
func (x *RepoSyncIndex) dropEventOwner(ei uint32, repo RepoID) {
	more := x.eventMore[ei]
	if x.eventRepo[ei] == repo {
		if len(more) == 0 {
			x.releaseEvent(ei)
			return
		}
		x.eventRepo[ei], more = more[0], more[1:]
	} else {
		for i, r := range more {
			if r == repo {
				more = append(more[:i], more[i+1:]...)
				break
			}
		}
	}
	// sharedEvent is "has an eventMore entry": keep it exact.
	if len(more) == 0 {
		delete(x.eventMore, ei)
	} else {
		x.eventMore[ei] = more
	}
}

func (x *RepoSyncIndex) releaseEvent(ei uint32) {
	x.eventIdx.Remove((*eventIDs)(&x.events), ei)
	x.events[ei], x.eventRepo[ei] = [32]byte{}, 0
	x.delEvents++
	x.freeEvents = append(x.freeEvents, ei)
}

// compact gives memory back. An empty index drops everything; otherwise a
// lookup map that has had as many deletes as it now holds entries is copied
// into a right-sized one: Go maps neither shrink nor reclaim deleted slots
// under delete-and-insert churn (measured: 1.5× growth over ten rounds of
// BenchmarkForgetChurn without this), and a copy after n deletes costs O(1)
// per delete. The slices keep their length, as positions are ids held
// elsewhere; free entries are zeroed and reused first, so they are bounded
// by the most repositories and events held at once.
func (x *RepoSyncIndex) compact() {
	if len(x.byAddr) == 0 {
		*x = *NewRepoSyncIndex()
		return
	}
	if x.delAddrs >= len(x.byAddr) {
		x.byAddr, x.delAddrs = copyMap(x.byAddr), 0
	}
	if x.delRelays >= len(x.relayByURL) {
		x.relayByURL, x.delRelays = copyMap(x.relayByURL), 0
	}
	if x.delEvents >= x.RootEventCount() {
		x.eventIdx.Shrink((*eventIDs)(&x.events))
		x.eventMore = copyMap(x.eventMore)
		x.delEvents = 0
	}
}

func copyMap[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
