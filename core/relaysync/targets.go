package relaysync

import (
	"slices"
	"strings"

	"github.com/grasp-dev/grasp/core/nip34"
)

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
	// relay (HeldRepos): they keep it connected, for their own
	// announcements and states, but have no layer 2+3 items until their
	// announcement is stored.
	Held      int
	HeldRepos []RepoID
	// Outbox says the relay is kept only as a participant's write relay
	// (GRASP-03), counted against Caps.Outbox.
	Outbox bool
	// OutboxRepos are the repositories of Repos for which the relay is a
	// participant's write relay, not one their announcement lists: it is
	// asked only for the replies to their root events (GRASP-03).
	OutboxRepos []RepoID
}

// Caps bound the relays sync connects to, since announcements are anyone's:
// one never-released announcement listing 1000 relays made sync dial all
// 1000, 8000 times in 17 minutes (audit F14). Zero means no bound.
type Caps struct {
	// PerRepo is how many relays of one repository are synced: the first
	// ones of its (selected) list, this server aside.
	PerRepo int
	// Total bounds the relays synced for stored repositories, bootstrap
	// relays aside; the ones listed by the most repositories are kept.
	Total int
	// Held bounds the further relays connected only for repositories whose
	// announcement is still in purgatory (state-only sync), within Total.
	Held int
	// Outbox bounds the relays synced only as participants' write relays
	// (GRASP-03), outside Total.
	Outbox int
}

// TargetRules are the inputs of DeriveRelayTargets besides the index.
type TargetRules struct {
	Self      []string // this server's relay URLs (every public URL), never targets
	Bootstrap []string // always targets, outside the caps
	Selection Selection
	Caps      Caps
	// Prev are the targets in force: among relays wanted by as many
	// repositories, these are kept, so a newcomer cannot displace a relay
	// already connected.
	Prev map[string]Targets
}

// DeriveRelayTargets inverts the repository index into per-relay targets.
// Self is never a target. A repository not hosted here (its announcement
// does not list this server and GRASP-05 does not archive it) is not
// synced (G02-7), and a
// repository without an announcement has no relays yet. Within the caps,
// stored repositories' relays come first (a relay wanted only by held
// announcements is connected only while room is left), then the relays the
// most repositories list. It also returns how many relays the caps left out.
func DeriveRelayTargets(repos *RepoSyncIndex, r TargetRules) (map[string]Targets, int) {
	bootstrap, sel, caps := r.Bootstrap, r.Selection, r.Caps
	self := make(map[string]bool, len(r.Self))
	for _, u := range r.Self {
		if n, err := nip34.NormalizeRelayURL(u); err == nil {
			self[n] = true
		}
	}
	out := make(map[string]Targets)
	// per interned relay: 1 bootstrap, 2 kept for stored repos, 3 kept for
	// held ones; 0 not (yet) kept
	const (
		boot = iota + 1
		keptStored
		keptHeld
		keptOutbox
	)
	mark := make([]uint8, len(repos.relayURLs))
	for _, b := range bootstrap {
		n, err := nip34.NormalizeRelayURL(b)
		if err != nil || self[n] {
			continue
		}
		out[n] = Targets{Bootstrap: true}
		if ri, ok := repos.relayByURL[n]; ok {
			mark[ri] = boot
		}
	}
	isSelf := make([]bool, len(repos.relayURLs))
	for u := range self {
		if ri, ok := repos.relayByURL[u]; ok {
			isSelf[ri] = true
		}
	}

	// The chosen relays of every synced repository, capped per repository.
	type span struct {
		id       RepoID
		from, to int
		held     bool
	}
	var (
		spans []span
		picks []uint32
		buf   []uint32
	)
	for i := range repos.repos {
		e := &repos.repos[i]
		if len(e.relays) == 0 || !synced(e) {
			continue
		}
		buf = selectRelays(repos, e.addr, e.relays, sel, buf[:0])
		from := len(picks)
		for _, ri := range buf {
			if isSelf[ri] {
				continue
			}
			if caps.PerRepo > 0 && len(picks)-from >= caps.PerRepo {
				break
			}
			picks = append(picks, ri)
		}
		if len(picks) > from {
			spans = append(spans, span{id: RepoID(i), from: from, to: len(picks), held: e.held})
		}
	}

	// Keep the relays most repositories want, stored ones first.
	dropped := 0
	keep := func(spans []span, picks []uint32, held bool, limit int, as uint8) int {
		count := map[uint32]int{}
		for _, s := range spans {
			if s.held != held {
				continue
			}
			for _, ri := range picks[s.from:s.to] {
				if mark[ri] == 0 {
					count[ri]++
				}
			}
		}
		cands := make([]uint32, 0, len(count))
		for ri := range count {
			cands = append(cands, ri)
		}
		if limit >= 0 && len(cands) > limit {
			slices.SortFunc(cands, func(a, b uint32) int {
				if count[a] != count[b] {
					return count[b] - count[a]
				}
				_, pa := r.Prev[repos.relayURLs[a]]
				_, pb := r.Prev[repos.relayURLs[b]]
				if pa != pb {
					if pa {
						return -1
					}
					return 1
				}
				return strings.Compare(repos.relayURLs[a], repos.relayURLs[b])
			})
			dropped += len(cands) - limit
			cands = cands[:limit]
		}
		for _, ri := range cands {
			mark[ri] = as
		}
		return len(cands)
	}
	total, held := -1, -1
	if caps.Total > 0 {
		total = caps.Total
	}
	n := keep(spans, picks, false, total, keptStored)
	if total >= 0 {
		held = total - n
	}
	if caps.Held > 0 && (held < 0 || caps.Held < held) {
		held = caps.Held
	}
	keep(spans, picks, true, held, keptHeld)

	// GRASP-03: the participants' write relays of stored, synced
	// repositories, in their own budget so that strangers' relay lists
	// cannot push out the relays announcements list.
	var ospans []span
	var opicks []uint32
	for i := range repos.repos {
		e := &repos.repos[i]
		if len(e.outbox) == 0 || e.held || !synced(e) {
			continue
		}
		buf = selectRelays(repos, e.addr, e.outbox, sel, buf[:0])
		from := len(opicks)
		for _, ri := range buf {
			if isSelf[ri] || slices.Contains(e.relays, ri) {
				continue
			}
			opicks = append(opicks, ri)
		}
		if len(opicks) > from {
			ospans = append(ospans, span{id: RepoID(i), from: from, to: len(opicks)})
		}
	}
	olimit := -1
	if caps.Outbox > 0 {
		olimit = caps.Outbox
	}
	keep(ospans, opicks, false, olimit, keptOutbox)

	// Each kept relay gets the repositories whose picks include it.
	assign := func(spans []span, picks []uint32, outbox bool) {
		for _, s := range spans {
			for _, ri := range picks[s.from:s.to] {
				if mark[ri] == 0 {
					continue
				}
				u := repos.relayURLs[ri]
				t := out[u]
				if s.held {
					t.Held++
					t.HeldRepos = append(t.HeldRepos, s.id)
				} else {
					t.Repos = append(t.Repos, s.id)
				}
				if outbox {
					t.OutboxRepos = append(t.OutboxRepos, s.id)
				}
				t.Outbox = mark[ri] == keptOutbox
				out[u] = t
			}
		}
	}
	assign(ospans, opicks, true)
	assign(spans, picks, false)
	return out, dropped
}

// synced is the one place that says whether a repository's events are
// synced at all (announcement relays and GRASP-03 outbox alike): it is
// announced and hosted here (Options.Hosted: it lists this server, or
// GRASP-05 archives it).
func synced(e *repoEntry) bool {
	return e.announced && e.listsSelf
}

// selectRelays is the selection's order of the relays of list (a
// repository's announcement relays or its outbox relays).
func selectRelays(repos *RepoSyncIndex, addr string, list []uint32, sel Selection, buf []uint32) []uint32 {
	picked, ok := sel[addr]
	if !ok {
		return append(buf, list...)
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
		for _, have := range list {
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
