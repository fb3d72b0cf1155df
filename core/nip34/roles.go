package nip34

import (
	"slices"
	"strconv"
)

// Role letters of NIP-34 #2324 (maintainers-v3.md §1.1).
const (
	RoleLead       = "M" // the author's pointer to their lead; a lead points at itself
	RoleMaintainer = "m" // co-maintainer: an assignment, or a self-acknowledgement
	RoleModerator  = "o" // moderator: statuses and labels, never a state or a push
)

// Role is one role record of an announcement: ["M"|"m"|"o", <pubkey>,
// <b0>, <b1>, ...], boundaries alternating start, end, start...
type Role struct {
	Letter  string
	Subject string // 64 lowercase hex; "" when the record is malformed
	// Valid is false for a malformed record (bad pubkey, bad boundary,
	// misplaced "defer") and for copies of one (letter, subject) that
	// disagree (§1.2, §6.4): such records grant nothing but still make the
	// announcement role-aware.
	Valid bool
	// Active: valid with zero or an odd number of boundaries. A trailing
	// "defer" counts as a boundary, so a deferred record is never active.
	Active bool
	raw    []string
}

// parseRoles reads every M/m/o tag of an announcement, collapsing identical
// copies of one (letter, subject) and invalidating copies that disagree.
func parseRoles(tags [][]string) []Role {
	var out []Role
	index := map[string]int{} // letter + subject -> position in out
	for _, t := range tags {
		if len(t) == 0 || (t[0] != RoleLead && t[0] != RoleMaintainer && t[0] != RoleModerator) {
			continue
		}
		r := parseRole(t)
		if r.Subject == "" {
			out = append(out, r)
			continue
		}
		k := r.Letter + r.Subject
		if i, seen := index[k]; seen {
			if !slices.Equal(out[i].raw, r.raw) {
				out[i].Valid, out[i].Active = false, false
			}
			continue
		}
		index[k] = len(out)
		out = append(out, r)
	}
	return out
}

func parseRole(t []string) Role {
	r := Role{Letter: t[0], raw: t[1:]}
	if len(t) < 2 || !IsHex64(t[1]) {
		return r
	}
	r.Subject = t[1]
	bounds := t[2:]
	for i, b := range bounds {
		if b == "defer" {
			// Legal only last and in an end position (odd 0-based index).
			if i != len(bounds)-1 || i%2 != 1 {
				return r
			}
			continue
		}
		if !isDigits(b) {
			return r
		}
		if _, err := strconv.ParseInt(b, 10, 64); err != nil {
			return r
		}
	}
	r.Valid = true
	r.Active = len(bounds)%2 == 1 || len(bounds) == 0
	return r
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Assigns are the subjects other than the author of the announcement's
// valid active M and m records; for a role-free announcement, its legacy
// `maintainers` entries (§1.4 assigns). Pending invitees are included: an
// assignment is only an invitation until the subject lists back.
func (a Announcement) Assigns() []string {
	if !a.RoleAware {
		var out []string
		for _, m := range a.Maintainers {
			if m != a.Pubkey {
				out = append(out, m)
			}
		}
		return out
	}
	var out []string
	for _, r := range a.Roles {
		if r.Active && (r.Letter == RoleLead || r.Letter == RoleMaintainer) && r.Subject != a.Pubkey && !slices.Contains(out, r.Subject) {
			out = append(out, r.Subject)
		}
	}
	return out
}

// Declined reports §1.4 declined(author): some role record, valid or not,
// names the author, and none of those is a valid active M or m (the author
// left, deferred, or is a moderator only).
func (a Announcement) Declined() bool {
	named := false
	for _, r := range a.Roles {
		if r.Subject != a.Pubkey {
			continue
		}
		named = true
		if r.Active && (r.Letter == RoleLead || r.Letter == RoleMaintainer) {
			return false
		}
	}
	return named
}

// LeadPointers are the subjects of the announcement's valid active M
// records (§1.4 leadPtr).
func (a Announcement) LeadPointers() []string {
	var out []string
	for _, r := range a.Roles {
		if r.Active && r.Letter == RoleLead {
			out = append(out, r.Subject)
		}
	}
	return out
}

// ModeratorAssigns are the subjects of the announcement's valid active o
// records other than the author.
func (a Announcement) ModeratorAssigns() []string {
	var out []string
	for _, r := range a.Roles {
		if r.Active && r.Letter == RoleModerator && r.Subject != a.Pubkey {
			out = append(out, r.Subject)
		}
	}
	return out
}

// selfModerator reports an active self-o record.
func (a Announcement) selfModerator() bool {
	for _, r := range a.Roles {
		if r.Active && r.Letter == RoleModerator && r.Subject == a.Pubkey {
			return true
		}
	}
	return false
}

// activeSubjects are the subjects of every valid active role record.
func (a Announcement) activeSubjects() []string {
	var out []string
	for _, r := range a.Roles {
		if r.Active {
			out = append(out, r.Subject)
		}
	}
	return out
}

// Names reports whether the announcement names pk in any valid M, m or o
// record or in its `maintainers` tag, active or not: the subjects it
// invites (or once invited) to this identifier. It decides only whether
// pk's own announcement of the identifier is worth storing here
// (maintainers-v3.md §3 [R], G01-R2x), never authority.
func (a Announcement) Names(pk string) bool {
	for _, r := range a.Roles {
		if r.Valid && r.Subject == pk {
			return true
		}
	}
	return slices.Contains(a.Maintainers, pk)
}

// Subjects are every pubkey the announcement names (valid role records and
// `maintainers` entries), in tag order, without duplicates.
func (a Announcement) Subjects() []string {
	var out []string
	for _, r := range a.Roles {
		if r.Valid && !slices.Contains(out, r.Subject) {
			out = append(out, r.Subject)
		}
	}
	for _, m := range a.Maintainers {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// CompatMismatch reports a role-aware announcement whose `maintainers` tag
// is not exactly the subjects of its active M and m records (the author
// included): a health error of the client that wrote it, logged, never
// authority (§1.3).
func (a Announcement) CompatMismatch() bool {
	if !a.RoleAware || len(a.Maintainers) == 0 {
		return false
	}
	want := map[string]bool{}
	for _, r := range a.Roles {
		if r.Active && (r.Letter == RoleLead || r.Letter == RoleMaintainer) {
			want[r.Subject] = true
		}
	}
	got := map[string]bool{}
	for _, m := range a.Maintainers {
		got[m] = true
	}
	if len(got) != len(want) {
		return true
	}
	for k := range want {
		if !got[k] {
			return true
		}
	}
	return false
}
