package githttp

import (
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/core/git"
)

func oid(c byte) string { return strings.Repeat(string(c), 40) }

func TestAuthorizeTable(t *testing.T) {
	X, Y, Z, T := oid('1'), oid('2'), oid('3'), oid('4')
	prID := strings.Repeat("e", 64)
	cur := map[string]string{"refs/heads/main": X, "refs/heads/dev": Y, "refs/nostr/" + strings.Repeat("f", 64): Z}
	up := func(ref, old, new string) git.RefUpdate { return git.RefUpdate{Ref: ref, Old: old, New: new} }
	st := func(id string, at int64, refs ...string) StateCandidate { return state(id, at, "", refs...) }
	cases := []struct {
		name      string
		current   map[string]string
		updates   []git.RefUpdate
		states    []StateCandidate
		prs       map[string]string
		allowed   bool
		class     string
		stateID   string
		reasonHas string
	}{
		{"G2a create matches state", nil, []git.RefUpdate{up("refs/heads/main", git.ZeroOID, X)},
			[]StateCandidate{st("s", 1, "refs/heads/main", X)}, nil, true, ClassOK, "s", ""},
		{"G2b wrong commit", nil, []git.RefUpdate{up("refs/heads/main", git.ZeroOID, Z)},
			[]StateCandidate{st("s", 1, "refs/heads/main", X)}, nil, false, ClassMismatch, "", "push gives 3333333333"},
		{"G2c no state", nil, []git.RefUpdate{up("refs/heads/main", git.ZeroOID, X)},
			nil, nil, false, ClassNoState, "", "No state events"},
		{"G2d partial push keeps other refs", cur, []git.RefUpdate{up("refs/heads/main", X, Z)},
			[]StateCandidate{st("s", 1, "refs/heads/main", Z, "refs/heads/dev", Y)}, nil, true, ClassOK, "s", ""},
		{"G2d leftover ref refused", cur, []git.RefUpdate{up("refs/heads/main", X, Z)},
			[]StateCandidate{st("s", 1, "refs/heads/main", Z)}, nil, false, ClassMismatch, "", "refs/heads/dev is not in the state"},
		{"G2d leftover deleted", cur, []git.RefUpdate{up("refs/heads/main", X, Z), up("refs/heads/dev", Y, git.ZeroOID)},
			[]StateCandidate{st("s", 1, "refs/heads/main", Z)}, nil, true, ClassOK, "s", ""},
		{"G2e peeled tag entry ignored", nil, []git.RefUpdate{up("refs/heads/main", git.ZeroOID, X), up("refs/tags/v1", git.ZeroOID, T)},
			[]StateCandidate{st("s", 1, "refs/heads/main", X, "refs/tags/v1", T, "refs/tags/v1^{}", X)}, nil, true, ClassOK, "s", ""},
		{"G2e state's other namespaces ignored", nil, []git.RefUpdate{up("refs/heads/main", git.ZeroOID, X)},
			[]StateCandidate{st("s", 1, "refs/heads/main", X, "refs/remotes/x", Y)}, nil, true, ClassOK, "s", ""},
		{"G2f no-op without state", cur, []git.RefUpdate{up("refs/heads/main", X, X)},
			nil, nil, true, ClassNoop, "", ""},
		{"G3 latest wins", nil, []git.RefUpdate{up("refs/heads/main", git.ZeroOID, X)},
			[]StateCandidate{st("old", 1, "refs/heads/main", X), st("new", 2, "refs/heads/main", Y)}, nil, false, ClassMismatch, "", "new"},
		{"G3 latest matched regardless of order", nil, []git.RefUpdate{up("refs/heads/main", git.ZeroOID, Y)},
			[]StateCandidate{st("new", 2, "refs/heads/main", Y), st("old", 1, "refs/heads/main", X)}, nil, true, ClassOK, "new", ""},
		// Changed by maintainers-v3.md §4 (issue 10 part 2): a same-second
		// tie is decided by the lower id, not "either".
		{"G3 tie: the lower id is authoritative", nil, []git.RefUpdate{up("refs/heads/main", git.ZeroOID, X)},
			[]StateCandidate{st("b", 2, "refs/heads/main", Y), st("a", 2, "refs/heads/main", X)}, nil, true, ClassOK, "a", ""},
		{"G3 tie: the higher id does not authorise", nil, []git.RefUpdate{up("refs/heads/main", git.ZeroOID, Y)},
			[]StateCandidate{st("a", 2, "refs/heads/main", X), st("b", 2, "refs/heads/main", Y)}, nil, false, ClassMismatch, "", "latest state event a"},
		{"purgatory state older than the stored one does not authorise", nil, []git.RefUpdate{up("refs/heads/main", git.ZeroOID, Y)},
			[]StateCandidate{st("stored", 5, "refs/heads/main", X), st("held", 4, "refs/heads/main", Y)}, nil, false, ClassMismatch, "", "stored"},
		// N34-2 (NIP-34 #2325/#2326): an empty 30618 is a valid empty
		// state; a push deleting every ref aligns with it.
		{"N34-2 deleting every ref aligns with an empty state", cur, []git.RefUpdate{up("refs/heads/main", X, git.ZeroOID), up("refs/heads/dev", Y, git.ZeroOID)},
			[]StateCandidate{st("empty", 3)}, nil, true, ClassOK, "empty", ""},
		{"N34-2 control: a ref left behind is refused", cur, []git.RefUpdate{up("refs/heads/main", X, git.ZeroOID)},
			[]StateCandidate{st("empty", 3)}, nil, false, ClassMismatch, "", "refs/heads/dev is not in the state"},
		{"stale old value", cur, []git.RefUpdate{up("refs/heads/main", Z, X)},
			[]StateCandidate{st("s", 1, "refs/heads/main", X, "refs/heads/dev", Y)}, nil, false, ClassStale, "", "fetch and retry"},
		{"G5a short id", nil, []git.RefUpdate{up("refs/nostr/123", git.ZeroOID, X)},
			nil, nil, false, ClassBadRef, "", "Invalid event ID"},
		{"G5a uppercase id", nil, []git.RefUpdate{up("refs/nostr/"+strings.Repeat("E", 64), git.ZeroOID, X)},
			nil, nil, false, ClassBadRef, "", "Invalid event ID"},
		{"G5b/G5g placeholder without state", nil, []git.RefUpdate{up("refs/nostr/"+prID, git.ZeroOID, X)},
			nil, nil, true, ClassOK, "", ""},
		{"G5d known PR wrong tip", nil, []git.RefUpdate{up("refs/nostr/"+prID, git.ZeroOID, X)},
			nil, map[string]string{prID: Y}, false, ClassPRMismatch, "", "specifies commit " + Y},
		{"G5e known PR tip", nil, []git.RefUpdate{up("refs/nostr/"+prID, git.ZeroOID, Y)},
			nil, map[string]string{prID: Y}, true, ClassOK, "", ""},
		{"nostr ref delete refused", cur, []git.RefUpdate{up("refs/nostr/"+strings.Repeat("f", 64), Z, git.ZeroOID)},
			nil, nil, false, ClassBadRef, "", "cannot be deleted"},
		{"mixed: bad nostr ref refuses the whole push", nil, []git.RefUpdate{up("refs/heads/main", git.ZeroOID, X), up("refs/nostr/1", git.ZeroOID, X)},
			[]StateCandidate{st("s", 1, "refs/heads/main", X)}, nil, false, ClassBadRef, "", ""},
		{"other namespace", nil, []git.RefUpdate{up("refs/meta/config", git.ZeroOID, X)},
			nil, nil, false, ClassBadRef, "", "only refs/heads"},
		{"duplicate ref", nil, []git.RefUpdate{up("refs/heads/main", git.ZeroOID, X), up("refs/heads/main", git.ZeroOID, X)},
			[]StateCandidate{st("s", 1, "refs/heads/main", X)}, nil, false, ClassBadRef, "", "twice"},
		{"bad ref name", nil, []git.RefUpdate{up("refs/heads/a..b", git.ZeroOID, X)},
			[]StateCandidate{st("s", 1, "refs/heads/a..b", X)}, nil, false, ClassBadRef, "", "invalid: ref name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := Authorize(c.current, c.updates, c.states, c.prs)
			if res.Allowed != c.allowed || res.Class != c.class {
				t.Fatalf("got allowed=%v class=%s reason=%q, want %v %s", res.Allowed, res.Class, res.Reason, c.allowed, c.class)
			}
			if c.stateID != "" && (res.State == nil || res.State.EventID != c.stateID) {
				t.Fatalf("state = %+v, want %s", res.State, c.stateID)
			}
			if !c.allowed {
				if !strings.HasPrefix(res.Reason, "authorisation failed: ") || !strings.Contains(res.Reason, c.reasonHas) {
					t.Fatalf("reason %q lacks %q", res.Reason, c.reasonHas)
				}
				for _, u := range c.updates {
					if !strings.HasPrefix(res.RefReasons[u.Ref], "authorisation failed: ") {
						t.Fatalf("ref %s has no reason: %v", u.Ref, res.RefReasons)
					}
				}
			}
		})
	}
}

func TestStateHeadRef(t *testing.T) {
	for in, want := range map[string]string{
		"ref: refs/heads/dev": "refs/heads/dev",
		"refs/heads/dev":      "refs/heads/dev",
		"ref:refs/heads/x":    "refs/heads/x",
		"":                    "",
		"ref: ../../etc":      "",
	} {
		if got := (StateCandidate{HEAD: in}).HeadRef(); got != want {
			t.Errorf("HeadRef(%q) = %q, want %q", in, got, want)
		}
	}
}
