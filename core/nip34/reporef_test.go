package nip34

import "testing"

func TestRepoRefParseFormat(t *testing.T) {
	r, err := ParseRepoRef("30617:" + pkA + ":my repo:v2")
	if err != nil {
		t.Fatal(err)
	}
	if r.Pubkey != pkA || r.Identifier != "my repo:v2" {
		t.Fatalf("parsed %+v", r)
	}
	if got := r.String(); got != "30617:"+pkA+":my repo:v2" {
		t.Fatalf("String() = %q", got)
	}
	if got := r.StateAddress().String(); got != "30618:"+pkA+":my repo:v2" {
		t.Fatalf("StateAddress() = %q", got)
	}
	bad := []string{
		"", "30617", "30617:" + pkA, "30618:" + pkA + ":x", "30617:" + pkA + ":",
		"30617:" + pkA + ":..", "30617:ABC:x", "30617:" + pkA[:63] + ":x",
		"030617:" + pkA + ":x", "+30617:" + pkA + ":x", "30617:" + pkA + ":a/b",
	}
	for _, s := range bad {
		if r, err := ParseRepoRef(s); err == nil {
			t.Errorf("ParseRepoRef(%q) = %+v, want error", s, r)
		}
	}
}

func TestParseAddressOtherKinds(t *testing.T) {
	a, err := ParseAddress("30618:" + pkB + ":")
	if err != nil {
		t.Fatal(err)
	}
	if a.Kind != 30618 || a.Pubkey != pkB || a.D != "" {
		t.Fatalf("got %+v", a)
	}
	if _, err := ParseAddress("70000:" + pkB + ":x"); err == nil {
		t.Fatal("kind above 65535 accepted")
	}
}
