package nip34

import (
	"fmt"
	"sort"
	"strings"

	"github.com/nbd-wtf/go-nostr"
)

// State is a kind-30618 repository state: the refs a maintainer says the
// repository must have.
type State struct {
	EventID    string
	Pubkey     string
	CreatedAt  nostr.Timestamp
	Identifier string
	// Refs maps full ref names (refs/heads/*, refs/tags/*, any refs/*) to
	// object ids. Peeled "^{}" entries are not refs and are left out.
	Refs map[string]string
	// HEAD is the ref HEAD points at ("refs/heads/main"), "" if unset.
	HEAD string
}

// ParseState reads a kind-30618 event. HEAD is accepted with or without
// the "ref: " prefix; no refs at all means an empty repository. A ref name
// git would refuse, a malformed object id or one ref listed with two
// different ids is an error, because aligning a repository to it could
// only fail half-way.
func ParseState(evt *nostr.Event) (State, error) {
	if evt.Kind != KindState {
		return State{}, fmt.Errorf("kind %d is not a repository state (%d)", evt.Kind, KindState)
	}
	d, err := identifierOf(evt)
	if err != nil {
		return State{}, err
	}
	s := State{
		EventID:    evt.ID,
		Pubkey:     evt.PubKey,
		CreatedAt:  evt.CreatedAt,
		Identifier: d,
		Refs:       map[string]string{},
	}
	for _, t := range evt.Tags {
		if len(t) < 2 {
			continue
		}
		name := t[0]
		switch {
		case name == "HEAD":
			head := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(t[1]), "ref:"))
			if err := CheckRefName(head); err != nil {
				return State{}, fmt.Errorf("HEAD %q: %w", t[1], err)
			}
			s.HEAD = head
		case strings.HasPrefix(name, "refs/"):
			if strings.HasSuffix(name, "^{}") {
				// The peeled commit of an annotated tag (ngit emits these);
				// git derives it from the tag object, so it is not a ref.
				continue
			}
			if err := CheckRefName(name); err != nil {
				return State{}, err
			}
			oid := normalizeOID(t[1])
			if !IsObjectID(oid) {
				return State{}, fmt.Errorf("ref %s: %q is not a git object id", name, t[1])
			}
			if prev, ok := s.Refs[name]; ok && prev != oid {
				return State{}, fmt.Errorf("ref %s listed twice with different ids", name)
			}
			s.Refs[name] = oid
		}
	}
	return s, nil
}

// Empty reports whether the state describes a repository with no refs.
func (s State) Empty() bool { return len(s.Refs) == 0 }

// OIDs returns the distinct object ids the state needs, sorted.
func (s State) OIDs() []string {
	seen := map[string]bool{}
	var out []string
	for _, oid := range s.Refs {
		if !seen[oid] {
			seen[oid] = true
			out = append(out, oid)
		}
	}
	sort.Strings(out)
	return out
}

// Branches returns the refs/heads/* part keyed by short name.
func (s State) Branches() map[string]string { return s.withPrefix("refs/heads/") }

// Tags returns the refs/tags/* part keyed by short name.
func (s State) Tags() map[string]string { return s.withPrefix("refs/tags/") }

func (s State) withPrefix(p string) map[string]string {
	out := map[string]string{}
	for name, oid := range s.Refs {
		if short, ok := strings.CutPrefix(name, p); ok {
			out[short] = oid
		}
	}
	return out
}

// CheckRefName applies the rules of git check-ref-format that matter for a
// full ref name under refs/.
func CheckRefName(name string) error {
	if !strings.HasPrefix(name, "refs/") || len(name) == len("refs/") {
		return fmt.Errorf("ref name %q must be a full name under refs/", name)
	}
	if len(name) > 1024 {
		return fmt.Errorf("ref name is longer than 1024 bytes")
	}
	if strings.Contains(name, "..") || strings.Contains(name, "@{") || strings.Contains(name, "//") ||
		strings.HasSuffix(name, "/") || strings.HasSuffix(name, ".") || name == "@" {
		return fmt.Errorf("ref name %q is not allowed by git", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < 0x20 || c == 0x7f || strings.IndexByte(" ~^:?*[\\", c) >= 0 {
			return fmt.Errorf("ref name %q contains a character git forbids", name)
		}
	}
	for _, comp := range strings.Split(name, "/") {
		if strings.HasPrefix(comp, ".") || strings.HasSuffix(comp, ".lock") {
			return fmt.Errorf("ref name %q has a component git forbids", name)
		}
	}
	return nil
}
