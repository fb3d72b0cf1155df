package sync

import "github.com/grasp-dev/grasp/core/nip34"

// Selection is the relay-selection result per repository: coordinate →
// the ordered relays chosen for it. A repository with no entry uses every
// relay its announcement lists; URLs that the announcement does not list are
// ignored, as the RelaySelector contract says.
type Selection map[string][]string

// Targets is what one relay should be syncing: the repositories (and so their
// root events) whose selected relays include it. Bootstrap relays are present
// even with no repositories, because they are connected for discovery.
type Targets struct {
	Repos     []RepoID
	Bootstrap bool
	// Held counts repositories announced only from purgatory that list the
	// relay: they keep it connected, for its layer 1 stream, but have no
	// layer 2+3 items until their announcement is stored.
	Held int
}

// DeriveRelayTargets inverts the repository index into per-relay targets.
// self (this server's relay URL) is never a target. Outside archive mode a
// repository whose announcement does not list this server is not synced
// (G02-7), and a repository without an announcement has no relays yet.
func DeriveRelayTargets(repos *RepoSyncIndex, self string, bootstrap []string, sel Selection, archive bool) map[string]Targets {
	selfURL, _ := nip34.NormalizeRelayURL(self)
	out := make(map[string]Targets)
	for _, b := range bootstrap {
		n, err := nip34.NormalizeRelayURL(b)
		if err != nil || n == selfURL {
			continue
		}
		out[n] = Targets{Bootstrap: true}
	}
	// Relay URLs are interned in the index; resolve self once.
	selfIdx, selfKnown := repos.relayByURL[selfURL]
	var chosen []uint32
	for i := range repos.repos {
		e := &repos.repos[i]
		if !e.announced || len(e.relays) == 0 || (!archive && !e.listsSelf) {
			continue
		}
		chosen = selectRelays(repos, e, sel, chosen[:0])
		for _, ri := range chosen {
			if selfKnown && ri == selfIdx {
				continue
			}
			u := repos.relayURLs[ri]
			t := out[u]
			if e.held {
				t.Held++
			} else {
				t.Repos = append(t.Repos, RepoID(i))
			}
			out[u] = t
		}
	}
	return out
}

func selectRelays(repos *RepoSyncIndex, e *repoEntry, sel Selection, buf []uint32) []uint32 {
	picked, ok := sel[e.addr]
	if !ok {
		return append(buf, e.relays...)
	}
	for _, p := range picked {
		n, err := nip34.NormalizeRelayURL(p)
		if err != nil {
			continue
		}
		ri, known := repos.relayByURL[n]
		if !known {
			continue
		}
		listed, dup := false, false
		for _, have := range e.relays {
			if have == ri {
				listed = true
				break
			}
		}
		for _, have := range buf {
			if have == ri {
				dup = true
				break
			}
		}
		if listed && !dup {
			buf = append(buf, ri)
		}
	}
	return buf
}
