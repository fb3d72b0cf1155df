package git

import (
	"strings"

	"github.com/grasp-dev/grasp/core/outcome"
)

// ZeroOID is how git spells "no object" in ref-update commands (SHA-1 repos).
const ZeroOID = "0000000000000000000000000000000000000000"

// RefUpdate is one ref-update command of a push: "<old> <new> <ref>".
// An all-zero Old creates the ref, an all-zero New deletes it.
type RefUpdate struct {
	Ref string
	Old string
	New string
}

// IsDelete reports whether the update deletes its ref.
func (u RefUpdate) IsDelete() bool { return IsZeroOID(u.New) }

// IsNoop reports whether the update leaves its ref unchanged.
func (u RefUpdate) IsNoop() bool { return u.Old == u.New }

// IsZeroOID reports whether s is git's "no object" (all zeros).
func IsZeroOID(s string) bool {
	return s != "" && strings.Trim(s, "0") == ""
}

// CheckRefName applies git's check-ref-format rules (plus "must start with
// refs/") so that no ref git would refuse, and nothing that could walk out of
// the refs directory, reaches the authoriser or the repository.
func CheckRefName(ref string) error {
	bad := func(why string) error {
		return outcome.Errorf(outcome.Invalid, "ref name %q %s", Clip(ref, 120), why)
	}
	if !strings.HasPrefix(ref, "refs/") {
		return bad("must start with refs/")
	}
	if len(ref) > 1024 {
		return bad("is too long")
	}
	if strings.Contains(ref, "..") || strings.Contains(ref, "//") || strings.Contains(ref, "@{") || ref == "@" {
		return bad("contains '..', '//' or '@{'")
	}
	if strings.HasSuffix(ref, "/") || strings.HasSuffix(ref, ".") {
		return bad("ends with '/' or '.'")
	}
	for _, c := range []byte(ref) {
		if c < 0x20 || c == 0x7f || strings.IndexByte(" ~^:?*[\\", c) >= 0 {
			return bad("contains a control character, space or one of ~^:?*[\\")
		}
	}
	for _, comp := range strings.Split(ref, "/") {
		if comp == "" || strings.HasPrefix(comp, ".") || strings.HasSuffix(comp, ".lock") {
			return bad("has an empty component, one starting with '.' or ending with '.lock'")
		}
	}
	return nil
}

// HeadRef reads a state's HEAD value, "ref: refs/heads/x" or
// "refs/heads/x", into the ref HEAD should point at, "" when it names none.
func HeadRef(head string) string {
	h := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(head), "ref:"))
	if CheckRefName(h) != nil {
		return ""
	}
	return h
}

// StateRefs filters a state's refs to what a repository is aligned with:
// refs/heads/* and refs/tags/*, without peeled "^{}" entries.
func StateRefs(refs map[string]string) map[string]string {
	out := map[string]string{}
	for ref, oid := range refs {
		if IsStateRef(ref) && !strings.HasSuffix(ref, "^{}") {
			out[ref] = oid
		}
	}
	return out
}

// IsStateRef reports whether ref is one a state event lists (and a push
// must leave equal to it): refs/heads/* and refs/tags/*.
func IsStateRef(ref string) bool {
	return strings.HasPrefix(ref, "refs/heads/") || strings.HasPrefix(ref, "refs/tags/")
}

// ShortOID is how a message or log line shows an object id: its first ten
// characters, "nothing" for none.
func ShortOID(s string) string {
	if s == "" {
		return "nothing"
	}
	if len(s) > 10 {
		return s[:10]
	}
	return s
}
