package githttp

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
)

// GRASP-06: /prs/<signer npub>/<percent-encoded d>.git, served here.
//
// Every well-formed path answers as an empty bare repository until a
// refs/nostr/<event-id> is pushed to it (G06-1): reads of a path with no
// repository are served from the store's shared empty repository
// (git.Repos.EmptyDir), so reading never creates a directory. Only
// refs/nostr/<64-hex> may be pushed (G06-2/3); the repository is created
// (git.Repos.OpenPRs) when such a push has been authorised and admitted by
// the placeholder and /prs/ data quotas (prs_quota.go), and removed again
// whenever it is left without a ref (G06-8) or its data expires unused
// (core/hosting).

// prsPath is the URL path GRASP-06 repositories are served under.
const prsPath = "/prs"

// PRsHost is GRASP-06 as the handler needs it from the event side.
type PRsHost interface {
	// PRMisfit says why the known PR or PR-update event id may not be
	// pushed to the /prs/ repository repo: its signer is not the path's
	// npub, none of its `a` tags has the path's identifier, or none of its
	// `clone` tags names this endpoint (G06-6). "" when it fits or the
	// event is unknown.
	PRMisfit(ctx context.Context, repo nip34.RepoRef, eventID string) (string, error)
}

// splitPRsPath splits /prs/<owner>/<pct-id>.git[/<sub>] without validating
// the owner or identifier.
func splitPRsPath(escapedPath string) (owner, id, sub string, ok bool) {
	rest, found := strings.CutPrefix(escapedPath, prsPath)
	if !found {
		return "", "", "", false
	}
	return git.SplitRepoPath(rest)
}

// servePRs serves /prs/ (G06-1..3): 404 when GRASP-06 is off (G06-0) or the
// path is not well-formed (a hex owner among them); an empty repository for
// every well-formed path without one; pushes of refs/nostr/<id> only.
func (h *handler) servePRs(w http.ResponseWriter, r *http.Request) {
	if h.opts.PRs == nil {
		http.NotFound(w, r)
		return
	}
	owner, id, sub, ok := splitPRsPath(r.URL.EscapedPath())
	if !ok {
		gitNotFound(w)
		return
	}
	if authProbe(r, sub) {
		h.answerProbe(w)
		return
	}
	hex, err := git.DecodeNpub(owner)
	if err != nil || git.ValidateIdentifier(id) != nil {
		gitNotFound(w)
		return
	}
	repo := nip34.PRsRepo(hex, id)
	// GRASP-08: a /prs/ repository holding a private repository's PR is
	// as private as that repository (F27)
	if !h.authorizeRead(w, r, repo) {
		return
	}
	dir, err := h.repos.Path(repo)
	if err != nil {
		gitNotFound(w)
		return
	}
	read := dir
	if !h.repos.Exists(repo) {
		read = h.repos.EmptyDir()
	}
	h.serveService(w, r, sub, repo, read, dir)
}

// authorizePRs gathers the inputs of AuthorizePRs: the refs now (none for
// a repository not yet created), the tips of the known PR events pushed
// and why any of them does not belong here.
func (h *handler) authorizePRs(ctx context.Context, repo nip34.RepoRef, dir string, updates []git.RefUpdate) (Result, error) {
	current := map[string]string{}
	if h.repos.Exists(repo) {
		var err error
		if current, err = h.repos.RefsIn(ctx, dir); err != nil {
			return Result{}, err
		}
	}
	prTips, misfits := map[string]string{}, map[string]string{}
	for _, u := range updates {
		evID, ok := strings.CutPrefix(u.Ref, "refs/nostr/")
		if !ok || !nip34.IsHex64(evID) || u.IsNoop() || u.IsDelete() {
			continue
		}
		tip, known, err := h.auth.PRTip(ctx, evID)
		if err != nil {
			return Result{}, fmt.Errorf("look up PR event %s: %w", evID, err)
		}
		if !known {
			continue
		}
		prTips[evID] = tip
		why, err := h.opts.PRs.PRMisfit(ctx, repo, evID)
		if err != nil {
			return Result{}, fmt.Errorf("look up PR event %s: %w", evID, err)
		}
		if why != "" {
			misfits[evID] = why
		}
	}
	return AuthorizePRs(current, updates, prTips, misfits), nil
}

// ClassNamespace: a /prs/ push touched a ref outside refs/nostr/<id>;
// ClassMisfit: a known PR event pushed to a /prs/ path it does not name.
const (
	ClassNamespace = "namespace"
	ClassMisfit    = "misfit"
)

// AuthorizePRs decides a push to a /prs/ repository (G06-2/3/6). It is
// pure: current is the repository's refs now, prTips the `c` of each known
// PR event pushed, misfits why a known one may not be pushed here. Only
// refs/nostr/<64-hex> may be created or moved; a known event's ref must be
// its tip; one refused ref refuses the whole push, so nothing is written.
func AuthorizePRs(current map[string]string, updates []git.RefUpdate, prTips, misfits map[string]string) Result {
	for _, u := range updates {
		if !strings.HasPrefix(u.Ref, "refs/nostr/") {
			return refuseWhole(updates, u.Ref, ClassNamespace,
				"only refs/nostr/<event-id> may be pushed to /prs/ (GRASP-06); push other refs to the repository's own URL")
		}
		if why := misfits[strings.TrimPrefix(u.Ref, "refs/nostr/")]; why != "" && !u.IsNoop() {
			return refuseWhole(updates, u.Ref, ClassMisfit, why)
		}
	}
	// The rest is GRASP-01's rule for refs/nostr/<id>: a 64-hex id, no
	// deletion, a known PR's tip, the ref as it was fetched.
	return Authorize(current, updates, nil, prTips)
}

// refuseWhole refuses a push as a whole because of one ref.
func refuseWhole(updates []git.RefUpdate, bad, class, why string) Result {
	reasons := map[string]string{bad: rejectPrefix + why}
	refs := make([]string, 0, len(updates))
	for _, u := range updates {
		refs = append(refs, u.Ref)
	}
	sort.Strings(refs)
	for _, ref := range refs {
		if _, ok := reasons[ref]; !ok {
			reasons[ref] = rejectPrefix + "push refused as a whole because another ref was refused"
		}
	}
	return Result{Class: class, Reason: rejectPrefix + why, RefReasons: reasons}
}
