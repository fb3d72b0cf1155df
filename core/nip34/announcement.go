package nip34

import (
	"fmt"
	"strings"

	"github.com/nbd-wtf/go-nostr"
)

// Announcement is a kind-30617 repository announcement.
type Announcement struct {
	EventID     string
	Pubkey      string
	CreatedAt   nostr.Timestamp
	Identifier  string // the `d` tag
	Name        string
	Description string
	Web         []string
	Clone       []string
	Relays      []string
	// Maintainers are the `maintainers` tag's hex pubkeys; npubs are
	// decoded, anything else is dropped so a typo can never widen the
	// maintainer set. On a role-aware announcement they are a compatibility
	// projection and grant nothing (maintainers-v3.md §1.3); on a legacy one
	// they are invitations (Assigns).
	Maintainers []string
	// RoleAware: some tag is named exactly M, m or o, even a malformed one.
	RoleAware bool
	// Roles are the M/m/o records (maintainers-v3.md §1).
	Roles []Role
	EUC   string // earliest unique commit: ["r", <commit>, "euc"]
	// Private is ["private","true"] (GRASP-08): the repository of a roster
	// any of whose confirmed maintainers' announcements carries it is
	// private.
	Private bool
	// Public is ["private","false"] without ["private","true"]: the
	// owner's explicit word that its repository is public again.
	Public    bool
	Upstreams []Upstream // `u` tags: this repo is a subordinate fork
	Hashtags  []string
}

// Upstream is one `u` tag: ["u", "30617:<pk>:<id>" or <git url>, relay hint, author].
type Upstream struct {
	Ref       string
	RelayHint string
	Author    string
}

// Repo returns the coordinate of this announcement.
func (a Announcement) Repo() RepoRef {
	return RepoRef{Pubkey: a.Pubkey, Identifier: a.Identifier}
}

// ParseAnnouncement reads a kind-30617 event. Repeated and multi-value
// clone/relays/maintainers/web tags are merged rather than rejected
// (ngit-grasp rejects more than one clone tag; grasp.md §10.11).
func ParseAnnouncement(evt *nostr.Event) (Announcement, error) {
	if evt.Kind != KindAnnouncement {
		return Announcement{}, fmt.Errorf("kind %d is not a repository announcement (%d)", evt.Kind, KindAnnouncement)
	}
	d, err := identifierOf(evt)
	if err != nil {
		return Announcement{}, err
	}
	a := Announcement{
		EventID:     evt.ID,
		Pubkey:      evt.PubKey,
		CreatedAt:   evt.CreatedAt,
		Identifier:  d,
		Name:        firstValue(evt.Tags, "name"),
		Description: firstValue(evt.Tags, "description"),
		Web:         tagValues(evt.Tags, "web"),
		Clone:       tagValues(evt.Tags, "clone"),
		Relays:      tagValues(evt.Tags, "relays"),
		Hashtags:    tagValues(evt.Tags, "t"),
	}
	tags := make([][]string, len(evt.Tags))
	for i, t := range evt.Tags {
		tags[i] = t
		if len(t) > 0 && (t[0] == RoleLead || t[0] == RoleMaintainer || t[0] == RoleModerator) {
			a.RoleAware = true
		}
	}
	a.Roles = parseRoles(tags)
	a.Private = PrivateFlag(evt.Tags)
	a.Public = PublicFlag(evt.Tags)
	seen := map[string]bool{}
	for _, m := range tagValues(evt.Tags, "maintainers") {
		if hex, ok := PubkeyHex(m); ok && !seen[hex] {
			seen[hex] = true
			a.Maintainers = append(a.Maintainers, hex)
		}
	}
	for _, t := range evt.Tags {
		switch {
		case len(t) >= 3 && t[0] == "r" && t[2] == "euc" && a.EUC == "":
			a.EUC = normalizeOID(t[1])
		case len(t) >= 2 && t[0] == "u" && strings.TrimSpace(t[1]) != "":
			u := Upstream{Ref: strings.TrimSpace(t[1])}
			if len(t) >= 3 {
				u.RelayHint = t[2]
			}
			if len(t) >= 4 {
				u.Author = t[3]
			}
			a.Upstreams = append(a.Upstreams, u)
		}
	}
	return a, nil
}

// PrivateFlag reports ["private","true"] among an announcement's tags
// (GRASP-08), the one reading of the flag.
func PrivateFlag(tags nostr.Tags) bool {
	for _, t := range tags {
		if len(t) >= 2 && t[0] == "private" && t[1] == "true" {
			return true
		}
	}
	return false
}

// PublicFlag reports ["private","false"] among an announcement's tags and
// no ["private","true"]: the owner's explicit word that the repository is
// public (GRASP-08; core/visibility makes a repository that was private
// public again only on it, never on a missing flag).
func PublicFlag(tags nostr.Tags) bool {
	public := false
	for _, t := range tags {
		if len(t) >= 2 && t[0] == "private" {
			switch t[1] {
			case "true":
				return false
			case "false":
				public = true
			}
		}
	}
	return public
}

// identifierOf returns the validated `d` tag of an addressable event.
func identifierOf(evt *nostr.Event) (string, error) {
	for _, t := range evt.Tags {
		if len(t) >= 2 && t[0] == "d" {
			if err := ValidateIdentifier(t[1]); err != nil {
				return "", fmt.Errorf("invalid identifier: %w", err)
			}
			return t[1], nil
		}
	}
	return "", fmt.Errorf("missing 'd' tag (repository identifier)")
}

// PubkeyHex accepts a pubkey as 64-char hex (any case) or npub and returns
// lowercase hex.
func PubkeyHex(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if lower := strings.ToLower(s); IsHex64(lower) {
		return lower, true
	}
	if hex, err := DecodeNpub(s); err == nil {
		return hex, true
	}
	return "", false
}
