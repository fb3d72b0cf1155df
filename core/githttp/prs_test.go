package githttp

import (
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/core/git"
)

// G06-2/3/6: what a push to /prs/ may do, decided without git.
func TestG06_AuthorizePRs(t *testing.T) {
	a, b := strings.Repeat("a", 40), strings.Repeat("b", 40)
	id1, id2 := strings.Repeat("1", 64), strings.Repeat("2", 64)
	nostr := func(id, old, new string) git.RefUpdate {
		return git.RefUpdate{Ref: "refs/nostr/" + id, Old: old, New: new}
	}
	for _, c := range []struct {
		name    string
		current map[string]string
		updates []git.RefUpdate
		tips    map[string]string
		misfits map[string]string
		ok      bool
		class   string
		reason  string
	}{
		{"placeholder", nil, []git.RefUpdate{nostr(id1, git.ZeroOID, a)}, nil, nil, true, ClassOK, ""},
		{"known PR at its tip", nil, []git.RefUpdate{nostr(id1, git.ZeroOID, a)}, map[string]string{id1: a}, nil, true, ClassOK, ""},
		{"known PR at another tip", nil, []git.RefUpdate{nostr(id1, git.ZeroOID, b)}, map[string]string{id1: a}, nil, false, ClassPRMismatch, "specifies commit"},
		{"a branch", nil, []git.RefUpdate{{Ref: "refs/heads/main", Old: git.ZeroOID, New: a}}, nil, nil, false, ClassNamespace, "only refs/nostr/<event-id>"},
		{"a tag", nil, []git.RefUpdate{{Ref: "refs/tags/v1", Old: git.ZeroOID, New: a}}, nil, nil, false, ClassNamespace, "only refs/nostr/<event-id>"},
		{"mixed", nil, []git.RefUpdate{nostr(id1, git.ZeroOID, a), {Ref: "refs/heads/main", Old: git.ZeroOID, New: a}}, nil, nil, false, ClassNamespace, "only refs/nostr/<event-id>"},
		{"not an event id", nil, []git.RefUpdate{{Ref: "refs/nostr/123", Old: git.ZeroOID, New: a}}, nil, nil, false, ClassBadRef, "Invalid event ID"},
		{"deletion", map[string]string{"refs/nostr/" + id1: a}, []git.RefUpdate{nostr(id1, a, git.ZeroOID)}, nil, nil, false, ClassBadRef, "cannot be deleted"},
		{"misfit", nil, []git.RefUpdate{nostr(id1, git.ZeroOID, a), nostr(id2, git.ZeroOID, a)}, map[string]string{id2: a}, map[string]string{id2: "PR event is signed by someone else"}, false, ClassMisfit, "signed by someone else"},
		{"stale", map[string]string{"refs/nostr/" + id1: b}, []git.RefUpdate{nostr(id1, git.ZeroOID, a)}, nil, nil, false, ClassStale, "changed since"},
	} {
		res := AuthorizePRs(c.current, c.updates, c.tips, c.misfits)
		if res.Allowed != c.ok || res.Class != c.class || !strings.Contains(res.Reason, c.reason) {
			t.Errorf("%s: allowed %v class %q reason %q, want %v %q containing %q", c.name, res.Allowed, res.Class, res.Reason, c.ok, c.class, c.reason)
			continue
		}
		if !c.ok {
			for _, u := range c.updates {
				if res.RefReasons[u.Ref] == "" {
					t.Errorf("%s: no reason for %s: a refused push is refused as a whole", c.name, u.Ref)
				}
			}
		}
		if c.ok && len(res.Placeholders) == 0 && c.tips == nil {
			t.Errorf("%s: no placeholder recorded", c.name)
		}
	}
}
