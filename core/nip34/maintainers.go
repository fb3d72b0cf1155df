package nip34

// MaintainerSet computes who may speak for owner's repository identifier,
// given the accepted announcements with that identifier. It is one
// function so the NIP-34 #2324 M/m/o model (N34-10) can replace the
// current rule everywhere at once: policy, push authorisation and sync all
// call the one they are given.
type MaintainerSet func(owner, identifier string, anns []Announcement) map[string]bool

// RecursiveMaintainers is the GRASP-01 rule: the owner, plus the
// maintainers listed by every announcement (same identifier) whose author
// is already in the set, to a fixed point. Only each author's newest
// announcement counts, so a replaced announcement cannot keep a removed
// maintainer in.
func RecursiveMaintainers(owner, identifier string, anns []Announcement) map[string]bool {
	latest := map[string]Announcement{}
	for _, a := range anns {
		if a.Identifier != identifier {
			continue
		}
		if cur, ok := latest[a.Pubkey]; !ok || newer(a, cur) {
			latest[a.Pubkey] = a
		}
	}
	set := map[string]bool{owner: true}
	queue := []string{owner}
	for len(queue) > 0 {
		pk := queue[0]
		queue = queue[1:]
		a, ok := latest[pk]
		if !ok {
			continue
		}
		for _, m := range a.Maintainers {
			if !set[m] {
				set[m] = true
				queue = append(queue, m)
			}
		}
	}
	return set
}

// newer orders two versions of the same addressable event as relays do:
// later created_at wins, and on a tie the lower id.
func newer(a, b Announcement) bool {
	if a.CreatedAt != b.CreatedAt {
		return a.CreatedAt > b.CreatedAt
	}
	return a.EventID < b.EventID
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
