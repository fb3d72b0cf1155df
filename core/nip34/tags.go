package nip34

import (
	"strings"

	"github.com/nbd-wtf/go-nostr"
)

// tagValues returns the non-empty values of every tag named name, merging
// repeated tags and multi-value tags (["clone", u1, u2] and two ["clone", u]
// tags mean the same), trimmed and de-duplicated in first-seen order.
func tagValues(tags nostr.Tags, name string) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range tags {
		if len(t) < 2 || t[0] != name {
			continue
		}
		for _, v := range t[1:] {
			v = strings.TrimSpace(v)
			if v == "" || seen[v] {
				continue
			}
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// firstValue returns the first value of the first tag named name.
func firstValue(tags nostr.Tags, name string) string {
	for _, t := range tags {
		if len(t) >= 2 && t[0] == name {
			return t[1]
		}
	}
	return ""
}

// firstValues returns the first value of every tag named name, trimmed,
// de-duplicated. Used for tags whose later positions are hints or markers
// (e, a, q, E, A, g), not more values.
func firstValues(tags nostr.Tags, name string) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range tags {
		if len(t) < 2 || t[0] != name {
			continue
		}
		v := strings.TrimSpace(t[1])
		if v == "" || seen[v] {
			continue
		}
		seen[v] = true
		out = append(out, v)
	}
	return out
}

// References are the coordinates and event ids an event points at through
// its a/A/q and e/E/q tags: what GRASP-01 means by "tags".
type References struct {
	Addresses []Address
	EventIDs  []string
}

// ReferencesOf extracts the references of evt. A `q` tag holds either an
// event id or a coordinate; both are recognised. Malformed values are
// ignored, so they can never anchor an event.
func ReferencesOf(evt *nostr.Event) References {
	var r References
	seenA := map[string]bool{}
	seenE := map[string]bool{}
	addAddr := func(v string) {
		if a, err := ParseAddress(v); err == nil && !seenA[a.String()] {
			seenA[a.String()] = true
			r.Addresses = append(r.Addresses, a)
		}
	}
	addID := func(v string) {
		if IsHex64(v) && !seenE[v] {
			seenE[v] = true
			r.EventIDs = append(r.EventIDs, v)
		}
	}
	for _, t := range evt.Tags {
		if len(t) < 2 {
			continue
		}
		v := strings.TrimSpace(t[1])
		switch t[0] {
		case "a", "A":
			addAddr(v)
		case "e", "E":
			addID(v)
		case "q":
			if IsHex64(v) {
				addID(v)
			} else {
				addAddr(v)
			}
		}
	}
	return r
}

// Repos returns the repository coordinates among the references.
func (r References) Repos() []RepoRef {
	var out []RepoRef
	for _, a := range r.Addresses {
		if a.Kind == KindAnnouncement && ValidateIdentifier(a.D) == nil {
			out = append(out, RepoRef{Pubkey: a.Pubkey, Identifier: a.D})
		}
	}
	return out
}

// Empty reports whether the event references nothing.
func (r References) Empty() bool { return len(r.Addresses) == 0 && len(r.EventIDs) == 0 }

// repoRefs parses the `a` tags of evt that name repositories.
func repoRefs(tags nostr.Tags) []RepoRef {
	var out []RepoRef
	seen := map[RepoRef]bool{}
	for _, v := range firstValues(tags, "a") {
		if r, err := ParseRepoRef(v); err == nil && !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}
