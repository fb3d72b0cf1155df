package nip34

import (
	"strings"
	"testing"
)

func TestG01G1_ValidateIdentifier(t *testing.T) {
	ok := []string{"repo", "my repo 🚀", "a.b", "x..y", "...", "name:with@sub+delims", strings.Repeat("x", MaxIdentifierBytes)}
	bad := []string{"", ".", "..", "a/b", "a\\b", "a\x00b", "tab\tinside", "del\x7f", strings.Repeat("x", MaxIdentifierBytes+1), "\xff\xfe"}
	for _, id := range ok {
		if err := ValidateIdentifier(id); err != nil {
			t.Errorf("ValidateIdentifier(%q) = %v, want ok", id, err)
		}
	}
	for _, id := range bad {
		if err := ValidateIdentifier(id); err == nil {
			t.Errorf("ValidateIdentifier(%q) = nil, want error", id)
		}
	}
}

func TestN34_3_EscapeIdentifier(t *testing.T) {
	cases := map[string]string{
		"repo":         "repo",
		"my repo 🚀":    "my%20repo%20%F0%9F%9A%80",
		"a~b_c-d.e":    "a~b_c-d.e",
		"x:y@z":        "x%3Ay%40z",
		"100%":         "100%25",
		"plus+sign?#&": "plus%2Bsign%3F%23%26",
	}
	for in, want := range cases {
		got := EscapeIdentifier(in)
		if got != want {
			t.Errorf("EscapeIdentifier(%q) = %q, want %q", in, got, want)
		}
		back, err := UnescapeIdentifier(got)
		if err != nil || back != in {
			t.Errorf("UnescapeIdentifier(%q) = %q, %v; want %q", got, back, err, in)
		}
	}
}

func TestN34_3_UnescapeRejectsTraversal(t *testing.T) {
	for _, seg := range []string{"%2E%2E", "a%2Fb", "a%5Cb", "a%00", "%zz", ""} {
		if id, err := UnescapeIdentifier(seg); err == nil {
			t.Errorf("UnescapeIdentifier(%q) = %q, want error", seg, id)
		}
	}
}
