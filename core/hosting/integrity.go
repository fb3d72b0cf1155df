package hosting

import (
	"context"
	"fmt"
	"sort"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
)

// Finding is one thing wrong with a hosted repository, as `grasp admin
// integrity-check` reports it.
type Finding struct {
	Repo     string `json:"repo"` // 30617:<hex>:<d>
	Problem  string `json:"problem"`
	Detail   string `json:"detail"`
	Repaired bool   `json:"repaired"`
}

// Problem classes of a Finding.
const (
	ProblemDrifted        = "refs-differ-from-state" // refs are not the authoritative state's
	ProblemMissingObjects = "state-objects-missing"  // the state's git data is not here
	ProblemNoAnnouncement = "no-announcement"        // a bare repo nobody announced
	ProblemAlternates     = "broken-alternates"      // borrowed objects are gone
	ProblemUnreadable     = "unreadable"             // git could not read the repo
)

// Integrity checks every hosted repository (or only the one, when only is
// not zero) against what the signed events prove: its refs against its
// authoritative state (the view's latest: nip34.LatestState over the
// owner's v3 roster), its alternates, and whether anyone announced it. With
// repair, a repo whose refs drifted while every object of its state is here
// is aligned to the state, as a push of that state would have left it;
// everything else is reported, never guessed at.
func (h *Hosting) Integrity(ctx context.Context, repair bool, only nip34.RepoRef) ([]Finding, error) {
	out, _, err := h.IntegrityCounted(ctx, repair, only)
	return out, err
}

// IntegrityCounted is Integrity that also says how many repositories it
// checked (`grasp admin integrity-check` reports it: issue 26).
func (h *Hosting) IntegrityCounted(ctx context.Context, repair bool, only nip34.RepoRef) ([]Finding, int, error) {
	repos, err := h.repos.List(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("list repositories: %w", err)
	}
	o := h.begin(ctx)
	var out []Finding
	checked := 0
	for _, r := range repos {
		if ctx.Err() != nil {
			return out, checked, ctx.Err()
		}
		if !only.IsZero() && r != only {
			continue
		}
		out = append(out, o.integrity(r, repair)...)
		checked++
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Repo < out[j].Repo })
	return out, checked, nil
}

func (o *op) integrity(r nip34.RepoRef, repair bool) []Finding {
	var out []Finding
	add := func(problem, format string, args ...any) *Finding {
		out = append(out, Finding{Repo: r.String(), Problem: problem, Detail: fmt.Sprintf(format, args...)})
		return &out[len(out)-1]
	}
	v := o.view(r.Identifier)
	if _, ok := v.rv.Latest(r.Pubkey); !ok && v.rv.Err() == nil {
		add(ProblemNoAnnouncement, "no announcement by its owner is stored or held")
	}
	if broken, err := o.repos.BrokenAlternates(r); err != nil {
		add(ProblemUnreadable, "%v", err)
		return out
	} else if len(broken) > 0 {
		add(ProblemAlternates, "objects/info/alternates names missing directories: %v", broken)
	}
	st, ok := v.latest(r.Pubkey)
	if !ok {
		return out
	}
	cur, err := o.repos.Refs(o.ctx, r)
	if err != nil {
		add(ProblemUnreadable, "%v", err)
		return out
	}
	if sameRefs(git.StateRefs(cur), st.Refs) {
		return out
	}
	has, err := o.repos.HasObjects(o.ctx, r, values(st.Refs))
	if err != nil {
		add(ProblemUnreadable, "%v", err)
		return out
	}
	var missing []string
	for _, oid := range values(st.Refs) {
		if !has[oid] {
			missing = append(missing, oid)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		add(ProblemMissingObjects, "state %s names %d object(s) not here (the hunter fetches them): %v", st.EventID, len(missing), missing)
		return out
	}
	f := add(ProblemDrifted, "refs differ from state %s", st.EventID)
	if repair {
		// The same alignment a hunt arrival does (align.go), then a fresh
		// read of the refs says whether it took.
		o.alignLatest(r)
		if now, err := o.repos.Refs(o.ctx, r); err == nil && sameRefs(git.StateRefs(now), st.Refs) {
			f.Repaired = true
			o.log.Info("integrity repair: refs realigned to the state", "repo", r.URLPath(), "state", st.EventID)
		} else {
			f.Detail += "; repair did not take (see the log)"
		}
	}
	return out
}
