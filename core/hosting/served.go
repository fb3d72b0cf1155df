package hosting

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/grasp-dev/grasp/core/nip34"
)

// Served is what a repository serves against what its maintainers signed,
// for its page (issue 26 part 5). It is read only: the same view the
// integrity check and push authorisation build, never acted on.
type Served struct {
	// Signed is the authoritative stored state (nip34.LatestState over the
	// owner's v3 roster); nil when there is none.
	Signed *SignedState
	// Differs lists the refs whose served target is not the signed one,
	// sorted by ref; empty when they agree.
	Differs []RefDiff
	// Missing counts the signed state's objects not in the repository:
	// then the hunter is after them.
	Missing int
	// Held are the newer states by the roster's keys waiting in purgatory
	// for their git data, oldest first.
	Held []SignedState
}

// SignedState is one state event.
type SignedState struct {
	EventID, Author string
	Signed          time.Time // its created_at
	HeldSince       time.Time // zero unless in purgatory
	Refs            int       // heads and tags it lists
}

// RefDiff is one ref that differs: "" for absent.
type RefDiff struct {
	Ref, Signed, Served string
}

// maxRefDiffs bounds the differences listed.
const maxRefDiffs = 50

// Served compares served (the repository's refs, as the caller read them)
// with repo's authoritative state.
func (h *Hosting) Served(ctx context.Context, repo nip34.RepoRef, served map[string]string) (Served, error) {
	o := h.begin(ctx)
	v := o.view(repo.Identifier)
	var out Served
	st, ok := v.latest(repo.Pubkey)
	if err := v.rv.Err(); err != nil {
		return out, err
	}
	if ok {
		out.Signed = &SignedState{EventID: st.EventID, Author: st.Author, Signed: time.Unix(st.CreatedAt, 0).UTC(), Refs: len(st.Refs)}
		want := map[string]string{}
		for ref, oid := range st.Refs {
			if !strings.HasSuffix(ref, "^{}") {
				want[ref] = oid
			}
		}
		have := map[string]string{}
		for ref, oid := range served {
			if strings.HasPrefix(ref, "refs/heads/") || strings.HasPrefix(ref, "refs/tags/") {
				have[ref] = oid
			}
		}
		for ref, oid := range want {
			if have[ref] != oid {
				out.Differs = append(out.Differs, RefDiff{Ref: ref, Signed: oid, Served: have[ref]})
			}
		}
		for ref, oid := range have {
			if _, ok := want[ref]; !ok {
				out.Differs = append(out.Differs, RefDiff{Ref: ref, Served: oid})
			}
		}
		sort.Slice(out.Differs, func(i, j int) bool { return out.Differs[i].Ref < out.Differs[j].Ref })
		if len(out.Differs) > 0 {
			oids := values(st.Refs)
			has, err := h.repos.HasObjects(ctx, repo, oids)
			if err != nil {
				return out, err
			}
			for _, oid := range oids {
				if !has[oid] {
					out.Missing++
				}
			}
		}
		out.Differs = out.Differs[:min(len(out.Differs), maxRefDiffs)]
	}
	maint := v.maintainers(repo.Pubkey)
	for _, evt := range v.load(repo.Pubkey).held {
		if !maint[evt.PubKey] || (ok && !nip34.Later(int64(evt.CreatedAt), evt.ID, st.CreatedAt, st.EventID)) {
			continue
		}
		s := SignedState{EventID: evt.ID, Author: evt.PubKey, Signed: evt.CreatedAt.Time().UTC()}
		if c, ok := candidate(evt); ok {
			s.Refs = len(c.Refs)
		}
		if e, found := h.purg.Get(evt.ID); found {
			s.HeldSince = e.HeldAt.UTC()
		}
		out.Held = append(out.Held, s)
	}
	sort.Slice(out.Held, func(i, j int) bool { return out.Held[i].Signed.Before(out.Held[j].Signed) })
	return out, nil
}
