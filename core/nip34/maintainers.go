package nip34

import "sort"

// The bounds on discovery (maintainers-v3.md §2.4 [R]): no source sets a
// depth limit, but a server must not walk an unbounded graph that strangers
// can extend. Past either bound the roster is empty (fail closed), and the
// caller logs it and counts it.
const (
	MaxRosterPubkeys = 256
	MaxLeadHops      = 16
)

// Why a roster is empty (Roster.Fail).
const (
	FailNoAnnouncement = "no_announcement" // the owner has no announcement
	FailPendingLead    = "pending_lead"    // the lead walk reaches a key with no lead pointer or no announcement
	FailConflict       = "conflict"        // two lead pointers, or a cycle
	FailDeclined       = "declined"        // the seed left its role
	FailDiscoveryBound = "discovery_bound" // more than MaxRosterPubkeys keys
	FailHopBound       = "hop_bound"       // lead walk longer than MaxLeadHops
)

// Loader returns the latest announcement (Later) of pubkey with the
// identifier being resolved, from the accepted events (stored and held,
// deletions applied), or false when there is none. Resolve asks for one
// pubkey at a time, starting from the owner: it never needs the set of all
// announcements of an identifier, which anyone can fill (F03).
type Loader func(pubkey string) (Announcement, bool)

// Roster is who may speak for one repository path /<owner>/<d>.
type Roster struct {
	// Maintainers may author an authoritative 30618, authorise a push and
	// trigger cross-repository propagation. Empty when Fail is set.
	Maintainers map[string]bool
	// Moderators may publish statuses, labels, subject changes and cover
	// notes; never a state or a push.
	Moderators map[string]bool
	Seed       string
	// Fail says why the roster is empty ("" when it is not).
	Fail string
}

// Has reports whether pk is a confirmed maintainer.
func (r Roster) Has(pk string) bool { return r.Maintainers[pk] }

// Members lists the maintainers, sorted.
func (r Roster) Members() []string {
	out := make([]string, 0, len(r.Maintainers))
	for pk := range r.Maintainers {
		out = append(out, pk)
	}
	sort.Strings(out)
	return out
}

// Resolve computes Maintainers(owner, d) of maintainers-v3.md §2.1 — the
// one maintainer rule of grasp: the lead walk from the owner chooses a seed,
// and keys join only by the reciprocal fixpoint (assigned by a confirmed
// key, acknowledging a confirmed key other than themselves, not declined).
// Current roles only: a state's created_at is never compared with them
// (§2.6). load is called at most MaxRosterPubkeys times per distinct key.
func Resolve(owner string, load Loader) Roster {
	w := walker{load: load, cache: map[string]*Announcement{}}
	fail := func(why string) Roster {
		return Roster{Maintainers: map[string]bool{}, Moderators: map[string]bool{}, Fail: why}
	}

	oa, ok := w.get(owner)
	if !ok {
		return fail(FailNoAnnouncement)
	}
	seed := owner
	if len(oa.LeadPointers()) > 0 {
		x, xa := owner, oa
		visited := map[string]bool{owner: true}
		for hops := 0; ; hops++ {
			lp := xa.LeadPointers()
			if len(lp) > 1 {
				return fail(FailConflict)
			}
			if lp[0] == x {
				seed = x
				break
			}
			next := lp[0]
			if visited[next] {
				return fail(FailConflict)
			}
			if hops >= MaxLeadHops {
				return fail(FailHopBound)
			}
			na, ok := w.get(next)
			if w.over {
				return fail(FailDiscoveryBound)
			}
			if !ok || len(na.LeadPointers()) == 0 {
				return fail(FailPendingLead)
			}
			visited[next] = true
			x, xa = next, na
		}
	}
	sa, ok := w.get(seed)
	if !ok {
		return fail(FailPendingLead)
	}
	if sa.Declined() {
		return fail(FailDeclined)
	}
	confirmed := map[string]bool{seed: true}
	order := []string{seed}
	for changed := true; changed; {
		changed = false
		for i := 0; i < len(order); i++ {
			xa, _ := w.get(order[i])
			for _, c := range xa.Assigns() {
				if confirmed[c] {
					continue
				}
				ca, ok := w.get(c)
				if w.over {
					return fail(FailDiscoveryBound)
				}
				if !ok || ca.Declined() {
					continue
				}
				for _, y := range ca.Assigns() {
					if y != c && confirmed[y] {
						confirmed[c] = true
						order = append(order, c)
						changed = true
						break
					}
				}
			}
		}
	}
	mods := map[string]bool{}
	for _, x := range order {
		xa, _ := w.get(x)
		for _, d := range xa.ModeratorAssigns() {
			if confirmed[d] || mods[d] {
				continue
			}
			da, ok := w.get(d)
			if w.over {
				return fail(FailDiscoveryBound)
			}
			if !ok || !da.selfModerator() {
				continue
			}
			for _, s := range da.activeSubjects() {
				if s != d && confirmed[s] {
					mods[d] = true
					break
				}
			}
		}
	}
	return Roster{Maintainers: confirmed, Moderators: mods, Seed: seed}
}

// walker caches the loader's answers and counts distinct keys.
type walker struct {
	load  Loader
	cache map[string]*Announcement // nil: no announcement
	over  bool
}

func (w *walker) get(pk string) (Announcement, bool) {
	if a, ok := w.cache[pk]; ok {
		if a == nil {
			return Announcement{}, false
		}
		return *a, true
	}
	if len(w.cache) >= MaxRosterPubkeys {
		w.over = true
		return Announcement{}, false
	}
	a, ok := w.load(pk)
	if !ok || a.Pubkey != pk {
		w.cache[pk] = nil
		return Announcement{}, false
	}
	w.cache[pk] = &a
	return a, true
}

// Latest keeps only the newest announcement per (author, identifier).
func Latest(anns []Announcement) []Announcement {
	type key struct{ pk, d string }
	idx := map[key]int{}
	var out []Announcement
	for _, a := range anns {
		k := key{a.Pubkey, a.Identifier}
		if i, ok := idx[k]; ok {
			if newer(a, out[i]) {
				out[i] = a
			}
			continue
		}
		idx[k] = len(out)
		out = append(out, a)
	}
	return out
}

// newer orders two versions of the same announcement (Later).
func newer(a, b Announcement) bool {
	return Later(int64(a.CreatedAt), a.EventID, int64(b.CreatedAt), b.EventID)
}

// LatestState is the authoritative state among states (§4.3): the Later
// one among those whose author is in authorised. Eligibility is the
// current roster only (§2.6): a removed key's states never count, a newly
// confirmed key's earlier states do.
func LatestState(states []State, authorised map[string]bool) (State, bool) {
	var best State
	found := false
	for _, s := range states {
		if !authorised[s.Pubkey] {
			continue
		}
		if !found || Later(int64(s.CreatedAt), s.EventID, int64(best.CreatedAt), best.EventID) {
			best, found = s, true
		}
	}
	return best, found
}
