package git

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/grasp-dev/grasp/core/nip34"
)

// GRASP-06: /prs/<signer npub>/<percent-encoded d>.git.
//
// Every well-formed path answers as an empty bare repository until a
// refs/nostr/<event-id> is pushed to it (G06-1): reads of a path with no
// repository are served from one shared empty repository, so reading never
// creates a directory. Only refs/nostr/<64-hex> may be pushed (G06-2/3); the
// repository is created when such a push has been authorised and admitted
// by the placeholder and /prs/ data quotas (prs_quota.go), and removed
// again whenever it is left without a ref (G06-8) or its data expires
// unused (core/hosting). These repositories live under <root>/prs/, which is not an
// npub: List, maintenance, the integrity check and alternates never see
// them.

// prsDirName is where GRASP-06 repositories live under the root.
const prsDirName = "prs"

// emptyDirName is the empty repository /prs/ reads of a path without a
// repository are served from. It is never written after start-up.
const emptyDirName = ".grasp-empty.git"

// PRsHost is GRASP-06 as the handler needs it from the event side.
type PRsHost interface {
	// PRMisfit says why the known PR or PR-update event id may not be
	// pushed to the /prs/ repository repo: its signer is not the path's
	// npub, none of its `a` tags has the path's identifier, or none of its
	// `clone` tags names this endpoint (G06-6). "" when it fits or the
	// event is unknown.
	PRMisfit(ctx context.Context, repo nip34.RepoRef, eventID string) (string, error)
}

// installEmpty makes the shared empty repository (once) and returns its
// directory.
func installEmpty(root string) (string, error) {
	dir := filepath.Join(root, emptyDirName)
	if isRepoDir(dir) {
		return dir, nil
	}
	tmp, err := os.MkdirTemp(root, ".init-empty-*")
	if err != nil {
		return "", fmt.Errorf("create the empty repository: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := initBare(tmp); err != nil {
		return "", fmt.Errorf("create the empty repository: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil && !isRepoDir(dir) {
		return "", fmt.Errorf("create the empty repository: %w", err)
	}
	return dir, nil
}

// prsBusy counts the pushes in progress per /prs/ repository directory: a
// repository a push is writing into is never removed for having no ref.
type prsBusy struct {
	mu sync.Mutex
	n  map[string]int
}

// OpenPRs creates the /prs/ repository repo if needed for a push that has
// been authorised and admitted, and marks it busy until done is called;
// done removes it again if the push left it without a ref (G06-8).
func (r *Repos) OpenPRs(ctx context.Context, repo nip34.RepoRef) (done func(), err error) {
	if !repo.PRs {
		return nil, errors.New("OpenPRs: not a /prs/ repository")
	}
	dir, err := r.Path(repo)
	if err != nil {
		return nil, err
	}
	r.prs.mu.Lock()
	r.prs.n[dir]++
	err = r.Create(ctx, repo)
	r.prs.mu.Unlock()
	var once sync.Once
	done = func() {
		once.Do(func() {
			r.prs.mu.Lock()
			if r.prs.n[dir]--; r.prs.n[dir] <= 0 {
				delete(r.prs.n, dir)
			}
			r.prs.mu.Unlock()
			if _, err := r.RemoveIfEmpty(context.WithoutCancel(ctx), repo); err != nil {
				r.log.Warn("remove a /prs/ repository left without refs", "repo", repo.URLPath(), "error", err)
			}
		})
	}
	if err != nil {
		done()
		return nil, err
	}
	return done, nil
}

// RemoveIfEmpty removes the /prs/ repository repo when it has no ref and no
// push is writing into it (G06-8: at the end of a push, after a mismatch or
// an expiry, and by the start-up scan). It reports whether it removed it.
func (r *Repos) RemoveIfEmpty(ctx context.Context, repo nip34.RepoRef) (bool, error) {
	return r.removePRs(ctx, repo, true)
}

// ListPRs returns every /prs/ repository on disk (the start-up scan).
func (r *Repos) ListPRs(ctx context.Context) ([]nip34.RepoRef, error) {
	out, err := r.walk(ctx, filepath.Join(r.root, prsDirName), nip34.PRsRepo)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil
	case err != nil && !errors.Is(err, ctx.Err()):
		return nil, fmt.Errorf("list /prs/ owners: %w", err)
	}
	return out, err
}

// CopyRef copies ref at oid from one repository into another (G06-7: a PR
// released through /prs/ is mirrored into the owner's repository here):
// the objects are fetched locally, never borrowed (the /prs/ repository
// holds a stranger's data), then the ref is set. A ref already at oid is
// left alone.
func (r *Repos) CopyRef(ctx context.Context, from, to nip34.RepoRef, ref, oid string) error {
	if err := CheckRefName(ref); err != nil {
		return err
	}
	if !nip34.IsObjectID(oid) || isZeroOID(oid) {
		return fmt.Errorf("invalid: %q is not an object id", truncate(oid, 80))
	}
	src, err := r.existing(from)
	if err != nil {
		return err
	}
	dst, err := r.existing(to)
	if err != nil {
		return err
	}
	unlock, err := r.locks.acquire(ctx, dst)
	if err != nil {
		return err
	}
	defer unlock()
	if refs, err := r.refsAt(ctx, dst); err == nil && refs[ref] == oid {
		return nil
	}
	if _, err := r.run(ctx, dst, nil, "-c", "uploadpack.allowAnySHA1InWant=true", "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--", src, oid); err != nil {
		return fmt.Errorf("copy %s into %s: %w", ref, to.URLPath(), err)
	}
	if _, err := r.run(ctx, dst, strings.NewReader("update "+ref+" "+oid+"\n"), "update-ref", "--stdin"); err != nil {
		return fmt.Errorf("set %s in %s: %w", ref, to.URLPath(), err)
	}
	return nil
}

// splitPRsPath splits /prs/<owner>/<pct-id>.git[/<sub>] without validating
// the owner or identifier.
func splitPRsPath(escapedPath string) (owner, id, sub string, ok bool) {
	rest, found := strings.CutPrefix(escapedPath, "/"+prsDirName)
	if !found {
		return "", "", "", false
	}
	return splitRepoPath(rest)
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
	hex, err := DecodeNpub(owner)
	if err != nil || ValidateIdentifier(id) != nil {
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
	if !isRepoDir(dir) {
		read = h.repos.empty
	}
	h.serveService(w, r, sub, repo, read, dir)
}

// authorizePRs gathers the inputs of AuthorizePRs: the refs now (none for
// a repository not yet created), the tips of the known PR events pushed
// and why any of them does not belong here.
func (h *handler) authorizePRs(ctx context.Context, repo nip34.RepoRef, dir string, updates []RefUpdate) (Result, error) {
	current := map[string]string{}
	if isRepoDir(dir) {
		var err error
		if current, err = h.repos.refsAt(ctx, dir); err != nil {
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
func AuthorizePRs(current map[string]string, updates []RefUpdate, prTips, misfits map[string]string) Result {
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
func refuseWhole(updates []RefUpdate, bad, class, why string) Result {
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
