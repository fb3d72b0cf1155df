package nip34

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// FuzzParsers feeds arbitrary tag lists to every parser. They must never
// panic, and whatever they accept must satisfy the invariants other
// packages rely on: identifiers are safe path segments, states hold only
// valid ref names and object ids, references round-trip.
func FuzzParsers(f *testing.F) {
	f.Add(30617, `[["d","my repo 🚀"],["clone","http://d/x.git","https://e/y.git"],["relays","ws://d"],["maintainers","`+strings.Repeat("b", 64)+`"]]`)
	f.Add(30618, `[["d","r"],["refs/heads/main","`+strings.Repeat("1", 40)+`"],["refs/tags/v1^{}","`+strings.Repeat("2", 40)+`"],["HEAD","ref: refs/heads/main"]]`)
	f.Add(1618, `[["a","30617:`+strings.Repeat("a", 64)+`:r"],["c","`+strings.Repeat("3", 40)+`"],["clone","http://d/x.git"]]`)
	f.Add(1630, `[["e","`+strings.Repeat("e", 64)+`","","root"]]`)
	f.Add(1, `[["q","30617:`+strings.Repeat("a", 64)+`:r"],["e","`+strings.Repeat("e", 64)+`"]]`)
	f.Add(30618, `[["d",".."],["refs/heads/../x","zz"]]`)
	f.Fuzz(func(t *testing.T, kind int, tagsJSON string) {
		var tags nostr.Tags
		if json.Unmarshal([]byte(tagsJSON), &tags) != nil {
			return
		}
		e := &nostr.Event{Kind: kind, PubKey: strings.Repeat("a", 64), Tags: tags}
		if a, err := ParseAnnouncement(e); err == nil {
			if ValidateIdentifier(a.Identifier) != nil {
				t.Fatalf("announcement accepted invalid identifier %q", a.Identifier)
			}
			for _, m := range a.Maintainers {
				if !IsHex64(m) {
					t.Fatalf("maintainer %q not hex", m)
				}
			}
			svc, _ := ParseService("http://d")
			ListsService(a, svc)
		}
		if s, err := ParseState(e); err == nil {
			for name, oid := range s.Refs {
				if CheckRefName(name) != nil || !IsObjectID(oid) || strings.HasSuffix(name, "^{}") {
					t.Fatalf("state accepted %q=%q", name, oid)
				}
			}
			if s.HEAD != "" && CheckRefName(s.HEAD) != nil {
				t.Fatalf("state accepted HEAD %q", s.HEAD)
			}
		}
		if p, err := ParsePR(e); err == nil && !IsObjectID(p.Tip) {
			t.Fatalf("PR accepted tip %q", p.Tip)
		}
		ParseIssue(e)
		ParsePatch(e)
		ParseStatus(e)
		ParseComment(e)
		ParseGraspList(e)
		for _, r := range ReferencesOf(e).Repos() {
			back, err := ParseRepoRef(r.String())
			if err != nil || back != r {
				t.Fatalf("repo ref %v does not round-trip: %v", r, err)
			}
		}
	})
}

// FuzzIdentifierEscape checks that escaping round-trips and that an
// escaped identifier is a single, safe path segment.
func FuzzIdentifierEscape(f *testing.F) {
	for _, s := range []string{"repo", "my repo 🚀", "a%2Fb", "..", "x:y@z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		esc := EscapeIdentifier(id)
		if strings.ContainsAny(esc, "/\\ ?#\x00") {
			t.Fatalf("escaped %q contains a separator: %q", id, esc)
		}
		back, err := UnescapeIdentifier(esc)
		if ValidateIdentifier(id) == nil {
			if err != nil || back != id {
				t.Fatalf("round trip %q -> %q -> %q, %v", id, esc, back, err)
			}
		} else if err == nil {
			t.Fatalf("invalid identifier %q unescaped without error", id)
		}
	})
}

// FuzzService checks that nothing but an exact host:port match lists the
// service, whatever URL text is thrown at it.
func FuzzService(f *testing.F) {
	for _, s := range []string{"ws://d.example:7334", "ws://d.example:7334.evil.com", "ws://evil.com/d.example:7334", "ws://d.example:7334@evil", "wss://D.EXAMPLE:7334/"} {
		f.Add(s)
	}
	svc, _ := ParseService("http://d.example:7334")
	f.Fuzz(func(t *testing.T, raw string) {
		if !svc.ListsRelay(raw) {
			return
		}
		ep, err := parseEndpoint(raw)
		if err != nil || ep.host != "d.example" || ep.port != "7334" || strings.Contains(raw, "@") {
			t.Fatalf("%q listed as this relay", raw)
		}
	})
}
