package githttp

import (
	"fmt"
	"sort"
	"strings"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
)

// StateCandidate is an authorised kind-30618 repository state, adapted by
// the caller from its own event type. Refs maps full ref names to object ids
// as listed in the event (entries outside refs/heads/ and refs/tags/, and
// peeled "^{}" entries, are ignored); HEAD is the event's HEAD value, either
// "ref: refs/heads/x" or "refs/heads/x".
type StateCandidate struct {
	EventID   string
	Author    string
	CreatedAt int64
	Refs      map[string]string
	HEAD      string
}

// HeadRef returns the ref HEAD should point at, or "" if the state has none.
func (s StateCandidate) HeadRef() string { return git.HeadRef(s.HEAD) }

// Reason classes, used as a metrics label and by callers that branch on the
// kind of rejection without parsing text.
const (
	ClassOK         = "ok"
	ClassNoop       = "noop"
	ClassNoState    = "no_state"
	ClassMismatch   = "mismatch"
	ClassBadRef     = "bad_ref"
	ClassPRMismatch = "pr_mismatch"
	ClassStale      = "stale"
	ClassError      = "error"
	// ClassMalformed: the command list itself could not be parsed.
	ClassMalformed = "malformed"
)

// Placeholder is a refs/nostr/<id> ref pushed before its PR event is known
// (G01-G5b). The caller records it with a TTL and removes the ref if no PR
// with a matching `c` tag arrives in time.
type Placeholder struct {
	EventID string
	Tip     string
}

// Result is the outcome of Authorize.
type Result struct {
	Allowed bool
	// Class is one of the Class* constants.
	Class string
	// Reason is a one-line summary, prefixed "authorisation failed: " when
	// the push is refused.
	Reason string
	// RefReasons gives, for a refused push, the reason shown for each ref.
	RefReasons map[string]string
	// State is the state event the push aligns the repository with, or nil
	// when the push touches no refs/heads or refs/tags (no-op or PR refs).
	State *StateCandidate
	// Placeholders are the unknown refs/nostr/<id> refs this push creates.
	Placeholders []Placeholder
}

const rejectPrefix = "authorisation failed: "

// Authorize decides whether a push may run (G01-G2..G5). It is pure:
// current is the repository's refs now (from Repos.Refs), updates the
// commands the client sent, states the authorised state events for this
// repository from purgatory and the store alike (so re-publishing a stored
// state can heal a repository), and prTips the `c` tip of each known PR
// event addressed by a refs/nostr/<id> update.
//
// Rules: refs/heads/* and refs/tags/* must, after the push, equal exactly
// the refs of the latest state (nip34.Later: created_at, then the lower
// id), so refs missing from the state must be deleted by the same
// push; a push whose every update has old==new is accepted without a state;
// refs/nostr/<id> needs a 64-hex id, no state, and the PR's tip when the PR
// is known; no other ref namespace may be pushed. A refused push is refused
// as a whole.
func Authorize(current map[string]string, updates []git.RefUpdate, states []StateCandidate, prTips map[string]string) Result {
	reasons := map[string]string{}
	var placeholders []Placeholder
	var class string
	reject := func(ref, cls, why string) {
		reasons[ref] = rejectPrefix + why
		if class == "" {
			class = cls
		}
	}

	var stateUpdates []git.RefUpdate
	noop := true
	seen := map[string]bool{}
	for _, u := range updates {
		if seen[u.Ref] {
			reject(u.Ref, ClassBadRef, "ref is updated twice in one push")
			continue
		}
		seen[u.Ref] = true
		if err := git.CheckRefName(u.Ref); err != nil {
			reject(u.Ref, ClassBadRef, err.Error())
			continue
		}
		if !u.IsNoop() {
			noop = false
		}
		if cur, ok := current[u.Ref]; (ok && cur != u.Old) || (!ok && !git.IsZeroOID(u.Old)) {
			reject(u.Ref, ClassStale, fmt.Sprintf("ref changed since it was fetched (server has %s), fetch and retry", git.ShortOID(cur)))
			continue
		}
		switch {
		case strings.HasPrefix(u.Ref, "refs/nostr/"):
			if u.IsNoop() {
				continue
			}
			id := strings.TrimPrefix(u.Ref, "refs/nostr/")
			if !nip34.IsHex64(id) {
				reject(u.Ref, ClassBadRef, "Invalid event ID format in ref: "+u.Ref)
				continue
			}
			if u.IsDelete() {
				reject(u.Ref, ClassBadRef, "refs/nostr refs cannot be deleted by a push")
				continue
			}
			if tip, known := prTips[id]; known {
				if tip != u.New {
					reject(u.Ref, ClassPRMismatch, fmt.Sprintf("PR event %s specifies commit %s, but push contains %s", id, tip, u.New))
				}
				continue
			}
			placeholders = append(placeholders, Placeholder{EventID: id, Tip: u.New})
		case strings.HasPrefix(u.Ref, "refs/heads/"), strings.HasPrefix(u.Ref, "refs/tags/"):
			stateUpdates = append(stateUpdates, u)
		default:
			reject(u.Ref, ClassBadRef, "only refs/heads/*, refs/tags/* and refs/nostr/<event-id> may be pushed")
		}
	}

	var chosen *StateCandidate
	if len(reasons) == 0 && !noop && hasChange(stateUpdates) {
		var why string
		chosen, why = matchLatestState(current, stateUpdates, states)
		if chosen == nil {
			cls := ClassMismatch
			if len(states) == 0 {
				cls = ClassNoState
			}
			for _, u := range stateUpdates {
				reject(u.Ref, cls, why)
			}
		}
	}

	if len(reasons) > 0 {
		summary := ""
		refs := make([]string, 0, len(reasons))
		for r := range reasons {
			refs = append(refs, r)
		}
		sort.Strings(refs)
		summary = reasons[refs[0]]
		for _, u := range updates {
			if _, ok := reasons[u.Ref]; !ok {
				reasons[u.Ref] = rejectPrefix + "push refused as a whole because another ref was refused"
			}
		}
		return Result{Class: class, Reason: summary, RefReasons: reasons}
	}
	res := Result{Allowed: true, Class: ClassOK, State: chosen, Placeholders: placeholders}
	if noop {
		res.Class = ClassNoop
	}
	return res
}

func hasChange(us []git.RefUpdate) bool {
	for _, u := range us {
		if !u.IsNoop() {
			return true
		}
	}
	return false
}

// matchLatestState compares the heads/tags after the push with the latest
// state(s). It returns the matching state, or nil and a diagnosis.
func matchLatestState(current map[string]string, updates []git.RefUpdate, states []StateCandidate) (*StateCandidate, string) {
	if len(states) == 0 {
		return nil, "No state events in purgatory or store for this repository"
	}
	after := map[string]string{}
	for ref, oid := range current {
		if git.IsStateRef(ref) {
			after[ref] = oid
		}
	}
	for _, u := range updates {
		if u.IsDelete() {
			delete(after, u.Ref)
		} else {
			after[u.Ref] = u.New
		}
	}
	// One authoritative state: the Later one (created_at, then the lower
	// id; maintainers-v3.md §4). A held state authorises the push only if it
	// sorts after every stored one, and of two same-second states only the
	// lower id counts.
	s := &states[0]
	for i := range states[1:] {
		c := &states[i+1]
		if nip34.Later(c.CreatedAt, c.EventID, s.CreatedAt, s.EventID) {
			s = c
		}
	}
	if d := diffRefs(after, git.StateRefs(s.Refs)); d != "" {
		return nil, fmt.Sprintf("latest state event %s doesn't match push (%s)", shortID(s.EventID), d)
	}
	return s, ""
}

// diffRefs describes the first few differences, "" when equal.
func diffRefs(got, want map[string]string) string {
	var diffs []string
	keys := map[string]bool{}
	for k := range got {
		keys[k] = true
	}
	for k := range want {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		g, gok := got[k]
		w, wok := want[k]
		switch {
		case gok && !wok:
			diffs = append(diffs, k+" is not in the state and must be deleted")
		case !gok && wok:
			diffs = append(diffs, k+" missing, state has "+git.ShortOID(w))
		case g != w:
			diffs = append(diffs, fmt.Sprintf("%s: state has %s, push gives %s", k, git.ShortOID(w), git.ShortOID(g)))
		}
	}
	if len(diffs) > 3 {
		diffs = append(diffs[:3], fmt.Sprintf("and %d more", len(diffs)-3))
	}
	return strings.Join(diffs, "; ")
}

func shortID(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
