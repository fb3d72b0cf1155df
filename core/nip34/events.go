package nip34

import (
	"fmt"
	"strings"

	"github.com/nbd-wtf/go-nostr"
)

// PR is a kind-1618 pull request or kind-1619 PR update.
type PR struct {
	EventID    string
	Pubkey     string
	Kind       int
	CreatedAt  nostr.Timestamp
	Repos      []RepoRef // `a` tags naming repositories
	Tip        string    // `c`: the commit that must exist at refs/nostr/<id>
	Clone      []string  // where the tip was pushed
	Root       string    // `E`: the PR a 1619 updates ("" for 1618)
	MergeBase  string
	BranchName string
	Subject    string
	Commits    []string // `r` values (root commit and others)
}

// ParsePR reads a 1618 or 1619 event. A missing or malformed `c` tag is an
// error: without it there is no git data to wait for (N34-6).
func ParsePR(evt *nostr.Event) (PR, error) {
	if evt.Kind != KindPR && evt.Kind != KindPRUpdate {
		return PR{}, fmt.Errorf("kind %d is not a PR (%d) or PR update (%d)", evt.Kind, KindPR, KindPRUpdate)
	}
	p := PR{
		EventID:    evt.ID,
		Pubkey:     evt.PubKey,
		Kind:       evt.Kind,
		CreatedAt:  evt.CreatedAt,
		Repos:      repoRefs(evt.Tags),
		Tip:        normalizeOID(firstValue(evt.Tags, "c")),
		Clone:      tagValues(evt.Tags, "clone"),
		MergeBase:  normalizeOID(firstValue(evt.Tags, "merge-base")),
		BranchName: firstValue(evt.Tags, "branch-name"),
		Subject:    firstValue(evt.Tags, "subject"),
		Commits:    firstValues(evt.Tags, "r"),
	}
	if p.Tip == "" {
		return PR{}, fmt.Errorf("missing 'c' tag (the PR tip commit)")
	}
	if !IsObjectID(p.Tip) {
		return PR{}, fmt.Errorf("'c' tag %q is not a git commit id", p.Tip)
	}
	if evt.Kind == KindPRUpdate {
		for _, v := range firstValues(evt.Tags, "E") {
			if IsHex64(v) {
				p.Root = v
				break
			}
		}
	}
	return p, nil
}

// Issue is a kind-1621 issue.
type Issue struct {
	EventID string
	Pubkey  string
	Repos   []RepoRef
	Subject string
	Labels  []string
}

// ParseIssue reads a kind-1621 event.
func ParseIssue(evt *nostr.Event) (Issue, error) {
	if evt.Kind != KindIssue {
		return Issue{}, fmt.Errorf("kind %d is not an issue (%d)", evt.Kind, KindIssue)
	}
	return Issue{
		EventID: evt.ID,
		Pubkey:  evt.PubKey,
		Repos:   repoRefs(evt.Tags),
		Subject: firstValue(evt.Tags, "subject"),
		Labels:  firstValues(evt.Tags, "t"),
	}, nil
}

// Patch is a kind-1617 patch.
type Patch struct {
	EventID      string
	Pubkey       string
	Repos        []RepoRef
	Commit       string
	ParentCommit string
	Root         bool     // ["t","root"]: first patch of a series
	RootRevision bool     // ["t","root-revision"]: first patch of a revision
	Replies      []string // `e` ids (earlier patches of the series)
}

// ParsePatch reads a kind-1617 event.
func ParsePatch(evt *nostr.Event) (Patch, error) {
	if evt.Kind != KindPatch {
		return Patch{}, fmt.Errorf("kind %d is not a patch (%d)", evt.Kind, KindPatch)
	}
	p := Patch{
		EventID:      evt.ID,
		Pubkey:       evt.PubKey,
		Repos:        repoRefs(evt.Tags),
		Commit:       normalizeOID(firstValue(evt.Tags, "commit")),
		ParentCommit: normalizeOID(firstValue(evt.Tags, "parent-commit")),
		Replies:      hexValues(evt.Tags, "e"),
	}
	for _, t := range firstValues(evt.Tags, "t") {
		switch t {
		case "root":
			p.Root = true
		case "root-revision":
			p.RootRevision = true
		}
	}
	return p, nil
}

// Status is a kind-1630..1633 status of a patch, PR or issue.
type Status struct {
	EventID          string
	Pubkey           string
	Kind             int
	Roots            []string // `e` ids marked "root" (all `e` ids if none is marked)
	Repos            []RepoRef
	MergeCommit      string
	AppliedAsCommits []string
}

// ParseStatus reads a status event. A status must name what it is about.
func ParseStatus(evt *nostr.Event) (Status, error) {
	if !IsStatusKind(evt.Kind) {
		return Status{}, fmt.Errorf("kind %d is not a status (%d-%d)", evt.Kind, KindStatusOpen, KindStatusDraft)
	}
	s := Status{
		EventID:          evt.ID,
		Pubkey:           evt.PubKey,
		Kind:             evt.Kind,
		Repos:            repoRefs(evt.Tags),
		MergeCommit:      normalizeOID(firstValue(evt.Tags, "merge-commit")),
		AppliedAsCommits: tagValues(evt.Tags, "applied-as-commits"),
	}
	s.Roots = rootIDs(evt.Tags)
	if len(s.Roots) == 0 {
		return Status{}, fmt.Errorf("status has no 'e' tag naming the patch, PR or issue it is about")
	}
	return s, nil
}

// Comment is a NIP-22 kind-1111 comment: uppercase tags name the root
// scope, lowercase ones the direct parent.
type Comment struct {
	EventID     string
	Pubkey      string
	RootIDs     []string
	RootAddrs   []Address
	RootKind    string
	ParentIDs   []string
	ParentAddrs []Address
	ParentKind  string
}

// ParseComment reads a kind-1111 event.
func ParseComment(evt *nostr.Event) (Comment, error) {
	if evt.Kind != KindComment {
		return Comment{}, fmt.Errorf("kind %d is not a comment (%d)", evt.Kind, KindComment)
	}
	return Comment{
		EventID:     evt.ID,
		Pubkey:      evt.PubKey,
		RootIDs:     hexValues(evt.Tags, "E"),
		RootAddrs:   addrValues(evt.Tags, "A"),
		RootKind:    firstValue(evt.Tags, "K"),
		ParentIDs:   hexValues(evt.Tags, "e"),
		ParentAddrs: addrValues(evt.Tags, "a"),
		ParentKind:  firstValue(evt.Tags, "k"),
	}, nil
}

// GraspList is a kind-10317 user grasp list: preferred GRASP servers in
// order (N34-9).
type GraspList struct {
	Pubkey  string
	Servers []string // ws:// or wss:// URLs from `g` tags
}

// ParseGraspList reads a kind-10317 event. Entries that are not ws/wss URLs
// are dropped; a list with none left is an error.
func ParseGraspList(evt *nostr.Event) (GraspList, error) {
	if evt.Kind != KindGraspList {
		return GraspList{}, fmt.Errorf("kind %d is not a grasp list (%d)", evt.Kind, KindGraspList)
	}
	g := GraspList{Pubkey: evt.PubKey}
	for _, v := range firstValues(evt.Tags, "g") {
		lv := strings.ToLower(v)
		if strings.HasPrefix(lv, "wss://") || strings.HasPrefix(lv, "ws://") {
			if _, err := parseEndpoint(v); err == nil {
				g.Servers = append(g.Servers, v)
			}
		}
	}
	if len(g.Servers) == 0 {
		return GraspList{}, fmt.Errorf("grasp list has no 'g' tag with a ws:// or wss:// URL")
	}
	return g, nil
}

func hexValues(tags nostr.Tags, name string) []string {
	var out []string
	for _, v := range firstValues(tags, name) {
		if IsHex64(v) {
			out = append(out, v)
		}
	}
	return out
}

func addrValues(tags nostr.Tags, name string) []Address {
	var out []Address
	for _, v := range firstValues(tags, name) {
		if a, err := ParseAddress(v); err == nil {
			out = append(out, a)
		}
	}
	return out
}
