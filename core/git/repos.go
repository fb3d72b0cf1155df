package git

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/outcome"
	"github.com/hashicorp/go-hclog"

	"github.com/grasp-dev/grasp/core/nip34"
)

// ErrNotFound is returned when a repository does not exist on disk.
var ErrNotFound = errors.New("repository not found")

// RepoOptions configures a Repos.
type RepoOptions struct {
	// Root is where the repositories live, normally <data_dir>/git; it is
	// created if needed.
	Root string
	// GitBinary is the git executable; "" means "git" from PATH.
	GitBinary string
	// Locker, when set, is taken after this process's own repository lock
	// so that writes of other grasp instances sharing Root serialise with
	// ours; nil: this process is the only writer.
	Locker Locker
}

// Repos is the bare-repository store: <root>/<npub>/<identifier>.git, the
// identifier verbatim. Repositories are named by nip34.RepoRef; the
// directory is derived here and nowhere else. It is safe for concurrent use;
// every write to a repository (push, alignment, propagation, ref edits,
// fetches, maintenance, deletion) takes that repository's lock.
type Repos struct {
	root  string
	git   string
	hooks string // the push gate's hooks (hooks.go)
	empty string // the empty repository /prs/ reads are served from (prs.go)
	log   hclog.Logger
	locks repoLocks
	prs   prsBusy
	// shared is RepoOptions.Locker (nil: none).
	shared Locker
}

// NewRepos opens (creating if needed) the store rooted at opts.Root; it
// logs to e.Log.
func NewRepos(opts RepoOptions, e env.Env) (*Repos, error) {
	root := opts.Root
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("resolve git root %q: %w", root, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("create git root %q: %w", abs, err)
	}
	bin := opts.GitBinary
	if bin == "" {
		bin = "git"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("find git binary %q: %w", bin, err)
	}
	hooks, err := installHooks(abs)
	if err != nil {
		return nil, err
	}
	empty, err := installEmpty(abs)
	if err != nil {
		return nil, err
	}
	return &Repos{root: abs, git: path, hooks: hooks, empty: empty, log: e.OrDefaults().Log, prs: prsBusy{n: map[string]int{}}, shared: opts.Locker}, nil
}

// Root is the directory the store lives in.
func (r *Repos) Root() string { return r.root }

// Path validates repo and returns its directory, <root>/<npub>/<id>.git. No
// combination of inputs yields a path outside the owner's directory under
// the root.
func (r *Repos) Path(repo nip34.RepoRef) (string, error) {
	owner, err := EncodeNpub(repo.Pubkey)
	if err != nil {
		return "", err
	}
	id := repo.Identifier
	if err := ValidateIdentifier(id); err != nil {
		return "", err
	}
	ownerDir := filepath.Join(r.root, owner)
	if repo.PRs {
		// GRASP-06 repositories live apart, under a directory that is not
		// an npub: List, maintenance, the integrity check and alternates
		// never see them.
		ownerDir = filepath.Join(r.root, prsDirName, owner)
	}
	dir := filepath.Join(ownerDir, id+".git")
	if filepath.Dir(dir) != ownerDir {
		return "", outcome.Errorf(outcome.Invalid, "identifier %q escapes the owner directory", id)
	}
	return dir, nil
}

// Exists reports whether the bare repository exists.
func (r *Repos) Exists(repo nip34.RepoRef) bool {
	dir, err := r.Path(repo)
	if err != nil {
		return false
	}
	return isRepoDir(dir)
}

func isRepoDir(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, "HEAD"))
	return err == nil && st.Mode().IsRegular()
}

// List returns every hosted repository, by owner directory then identifier
// (the one listing of hosted repos: maintenance and the hunter's re-check
// walk it).
func (r *Repos) List(ctx context.Context) ([]nip34.RepoRef, error) {
	out, err := r.walk(ctx, r.root, func(hex, id string) nip34.RepoRef {
		return nip34.RepoRef{Pubkey: hex, Identifier: id}
	})
	if err != nil && !errors.Is(err, ctx.Err()) {
		return nil, fmt.Errorf("list owners: %w", err)
	}
	return out, err
}

// walk lists the repositories under base laid out as <npub>/<id>.git,
// naming each with ref; it stops with ctx's error when ctx ends and
// skips what is not an npub directory or not a repository.
func (r *Repos) walk(ctx context.Context, base string, ref func(hex, id string) nip34.RepoRef) ([]nip34.RepoRef, error) {
	owners, err := os.ReadDir(base)
	if err != nil {
		return nil, err
	}
	var out []nip34.RepoRef
	for _, o := range owners {
		if !o.IsDir() || !strings.HasPrefix(o.Name(), "npub1") {
			continue
		}
		hex, err := DecodeNpub(o.Name())
		if err != nil {
			continue
		}
		entries, _ := os.ReadDir(filepath.Join(base, o.Name()))
		for _, e := range entries {
			id, ok := strings.CutSuffix(e.Name(), ".git")
			if !ok || !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			if err := ctx.Err(); err != nil {
				return out, err
			}
			rr := ref(hex, id)
			if dir, err := r.Path(rr); err == nil && isRepoDir(dir) {
				out = append(out, rr)
			}
		}
	}
	return out, nil
}

// Create makes an empty bare repository; it is a no-op if one exists. The
// repository is initialised in a temporary directory and renamed into
// place, so a reader never sees a half-created repository.
func (r *Repos) Create(ctx context.Context, repo nip34.RepoRef) error {
	dir, err := r.Path(repo)
	if err != nil {
		return err
	}
	if isRepoDir(dir) {
		return nil
	}
	owner, id := repo.Npub(), repo.Identifier
	ownerDir := filepath.Dir(dir)
	if err := os.MkdirAll(ownerDir, 0o755); err != nil {
		return fmt.Errorf("create owner directory for %s/%s: %w", owner, id, err)
	}
	tmp, err := os.MkdirTemp(ownerDir, ".init-*")
	if err != nil {
		return fmt.Errorf("create temp directory for %s/%s: %w", owner, id, err)
	}
	defer os.RemoveAll(tmp)
	if err := initBare(tmp); err != nil {
		return fmt.Errorf("init bare repository %s/%s: %w", owner, id, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if isRepoDir(dir) {
			return nil
		}
		return fmt.Errorf("move new repository %s/%s into place: %w", owner, id, err)
	}
	r.log.Debug("created repository", "repo", repo.URLPath())
	return nil
}

// bareConfig is what `git init --bare` writes, and all a repository here
// needs: every other setting is passed on git's command line.
const bareConfig = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n"

// initBare lays out the smallest bare repository git accepts (HEAD, config,
// objects/, refs/: 5 inodes, 20 KiB) without starting git: anyone can
// announce a repository, and each held announcement has one. `git init
// --bare --template=` took 9 inodes, 36 KiB and a process (audit 2026-11,
// F13: 2000 announcements took 18.5 s); git creates objects/pack,
// objects/info and refs/heads itself when it first writes there.
func initBare(dir string) error {
	for _, d := range []string{"objects", "refs"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "config"), []byte(bareConfig), 0o644); err != nil {
		return err
	}
	// HEAD last: isRepoDir looks for it.
	return os.WriteFile(filepath.Join(dir, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
}

// Delete removes a repository. Repositories of the same identifier that
// borrow its objects through alternates first take copies of what they
// borrow (git repack -a -d), so deleting one maintainer's copy never breaks
// another's.
func (r *Repos) Delete(ctx context.Context, repo nip34.RepoRef) error {
	dir, err := r.Path(repo)
	if err != nil {
		return err
	}
	owner, id := repo.Npub(), repo.Identifier
	objects := filepath.Join(dir, "objects")
	dependents, err := r.dependents(id, objects)
	if err != nil {
		return err
	}
	keys := append([]string{dir}, dependents...)
	sort.Strings(keys)
	for _, k := range keys {
		unlock, err := r.lock(ctx, k)
		if err != nil {
			return fmt.Errorf("delete %s/%s: %w", owner, id, err)
		}
		defer unlock()
	}
	for _, dep := range dependents {
		if _, err := r.run(ctx, dep, nil, "repack", "-a", "-d", "-q"); err != nil {
			return fmt.Errorf("delete %s/%s: copy borrowed objects into %s: %w", owner, id, dep, err)
		}
		if err := editAlternates(dep, func(lines []string) []string {
			out := lines[:0]
			for _, l := range lines {
				if filepath.Clean(l) != objects {
					out = append(out, l)
				}
			}
			return out
		}); err != nil {
			return fmt.Errorf("delete %s/%s: %w", owner, id, err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("delete repository %s/%s: %w", owner, id, err)
	}
	return nil
}

// dependents lists repositories with the same identifier whose alternates
// name objectsDir.
func (r *Repos) dependents(id, objectsDir string) ([]string, error) {
	owners, err := os.ReadDir(r.root)
	if err != nil {
		return nil, fmt.Errorf("list owners: %w", err)
	}
	var deps []string
	for _, o := range owners {
		if !o.IsDir() || !strings.HasPrefix(o.Name(), "npub1") {
			continue
		}
		dir := filepath.Join(r.root, o.Name(), id+".git")
		if filepath.Join(dir, "objects") == objectsDir {
			continue
		}
		lines, err := readAlternates(dir)
		if err != nil {
			continue
		}
		for _, l := range lines {
			if filepath.Clean(l) == objectsDir {
				deps = append(deps, dir)
				break
			}
		}
	}
	return deps, nil
}

// Refs returns every ref of the repository with the object it names.
func (r *Repos) Refs(ctx context.Context, repo nip34.RepoRef) (map[string]string, error) {
	dir, err := r.existing(repo)
	if err != nil {
		return nil, err
	}
	return r.refsAt(ctx, dir)
}

func (r *Repos) refsAt(ctx context.Context, dir string) (map[string]string, error) {
	out, err := r.run(ctx, dir, nil, "for-each-ref", "--format=%(objectname) %(refname)")
	if err != nil {
		return nil, fmt.Errorf("list refs of %s: %w", dir, err)
	}
	refs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if oid, ref, ok := strings.Cut(line, " "); ok {
			refs[ref] = oid
		}
	}
	return refs, nil
}

// Head returns the ref HEAD points at ("refs/heads/main").
func (r *Repos) Head(ctx context.Context, repo nip34.RepoRef) (string, error) {
	dir, err := r.existing(repo)
	if err != nil {
		return "", err
	}
	out, err := r.run(ctx, dir, nil, "symbolic-ref", "HEAD")
	if err != nil {
		return "", fmt.Errorf("read HEAD of %s: %w", dir, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// SetHead points HEAD at ref, which may be given as "ref: refs/heads/x" or
// "refs/heads/x" (G01-G4 part 2).
func (r *Repos) SetHead(ctx context.Context, repo nip34.RepoRef, ref string) error {
	dir, err := r.existing(repo)
	if err != nil {
		return err
	}
	unlock, err := r.lock(ctx, dir)
	if err != nil {
		return err
	}
	defer unlock()
	return r.setHeadAt(ctx, dir, ref)
}

// SetHeadIn points HEAD of the repository at dir at ref, for a caller that
// holds its lock already (the push gate, once the refs moved).
func (r *Repos) SetHeadIn(ctx context.Context, dir, ref string) error {
	return r.setHeadAt(ctx, dir, ref)
}

func (r *Repos) setHeadAt(ctx context.Context, dir, ref string) error {
	target := HeadRef(ref)
	if !strings.HasPrefix(target, "refs/heads/") {
		return outcome.Errorf(outcome.Invalid, "HEAD %q must name a branch under refs/heads/", Clip(ref, 120))
	}
	if _, err := r.run(ctx, dir, nil, "symbolic-ref", "HEAD", target); err != nil {
		return fmt.Errorf("set HEAD of %s to %s: %w", dir, target, err)
	}
	return nil
}

// HasObjects reports which of oids exist in the repository (its alternates
// included), using one `git cat-file --batch-check` process.
func (r *Repos) HasObjects(ctx context.Context, repo nip34.RepoRef, oids []string) (map[string]bool, error) {
	dir, err := r.existing(repo)
	if err != nil {
		return nil, err
	}
	res := make(map[string]bool, len(oids))
	var in bytes.Buffer
	for _, o := range oids {
		// Only object ids reach cat-file: it would also resolve revision
		// expressions such as "HEAD~3".
		if !nip34.IsObjectID(o) {
			return nil, outcome.Errorf(outcome.Invalid, "%q is not an object id", Clip(o, 80))
		}
		res[o] = false
		in.WriteString(o + "\n")
	}
	if len(oids) == 0 {
		return res, nil
	}
	out, err := r.run(ctx, dir, &in, "cat-file", "--batch-check=%(objectname) %(objecttype)")
	if err != nil {
		return nil, fmt.Errorf("check objects in %s: %w", dir, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		oid, kind, _ := strings.Cut(sc.Text(), " ")
		if kind != "missing" && kind != "" {
			res[oid] = true
		}
	}
	return res, nil
}

// Align makes the repository's refs/heads/* and refs/tags/* exactly equal
// refs (creating, moving and deleting refs in one atomic `git update-ref
// --stdin` transaction; peeled "^{}" entries and other namespaces are
// ignored) and, if head is not empty, points HEAD at it. refs/nostr/* are
// left alone. Every object must already exist; otherwise nothing changes.
func (r *Repos) Align(ctx context.Context, repo nip34.RepoRef, refs map[string]string, head string) error {
	dir, err := r.existing(repo)
	if err != nil {
		return err
	}
	unlock, err := r.lock(ctx, dir)
	if err != nil {
		return err
	}
	defer unlock()
	return r.alignAt(ctx, dir, refs, head)
}

func (r *Repos) alignAt(ctx context.Context, dir string, refs map[string]string, head string) error {
	want := StateRefs(refs)
	cur, err := r.refsAt(ctx, dir)
	if err != nil {
		return err
	}
	var tx bytes.Buffer
	names := make([]string, 0, len(want))
	for ref := range want {
		names = append(names, ref)
	}
	sort.Strings(names)
	for _, ref := range names {
		oid := want[ref]
		if err := CheckRefName(ref); err != nil {
			return err
		}
		if !nip34.IsObjectID(oid) || IsZeroOID(oid) {
			return outcome.Errorf(outcome.Invalid, "%s points at %q, not an object id", ref, Clip(oid, 80))
		}
		old, ok := cur[ref]
		if ok && old == oid {
			continue
		}
		if !ok {
			old = strings.Repeat("0", len(oid))
		}
		fmt.Fprintf(&tx, "update %s %s %s\n", ref, oid, old)
	}
	for ref, old := range cur {
		if _, keep := want[ref]; !keep && IsStateRef(ref) {
			fmt.Fprintf(&tx, "delete %s %s\n", ref, old)
		}
	}
	if tx.Len() > 0 {
		if _, err := r.run(ctx, dir, &tx, "update-ref", "--stdin"); err != nil {
			return fmt.Errorf("align refs of %s: %w", dir, err)
		}
	}
	if head != "" {
		return r.setHeadAt(ctx, dir, head)
	}
	return nil
}

// Target is one repository Propagate brings to a state. Borrow lets it
// borrow the source's objects through objects/info/alternates; it must be
// set only when the source's owner is in the target's authorised
// maintainer set (security audit F01: a stranger's repository must never
// become the object store of the owner's). Otherwise the objects are
// copied (see the package doc for the measurement behind both).
type Target struct {
	Repo   nip34.RepoRef
	Borrow bool
}

// Propagate brings the repositories to (same identifier as from) to refs
// and head (G01-G4 part 3), borrowing from's objects or copying them as
// each Target says. Targets without a repository here are skipped. Each
// target is locked on its own, never together with the source, so
// concurrent propagations cannot deadlock.
func (r *Repos) Propagate(ctx context.Context, from nip34.RepoRef, to []Target, refs map[string]string, head string) error {
	src, err := r.existing(from)
	if err != nil {
		return fmt.Errorf("propagate from %s: %w", from, err)
	}
	var errs []error
	for _, t := range to {
		if t.Repo == from {
			continue
		}
		if t.Repo.Identifier != from.Identifier {
			errs = append(errs, fmt.Errorf("propagate %s to %s: identifiers differ", from, t.Repo))
			continue
		}
		dst, err := r.existing(t.Repo)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := r.propagateOne(ctx, src, dst, t.Borrow, refs, head); err != nil {
			errs = append(errs, fmt.Errorf("propagate %s to %s: %w", from, t.Repo.Npub(), err))
		}
	}
	return errors.Join(errs...)
}

func (r *Repos) propagateOne(ctx context.Context, src, dst string, borrow bool, refs map[string]string, head string) error {
	unlock, err := r.lock(ctx, dst)
	if err != nil {
		return err
	}
	defer unlock()
	if borrow {
		srcObjects := filepath.Join(src, "objects")
		if err := editAlternates(dst, func(lines []string) []string {
			for _, l := range lines {
				if filepath.Clean(l) == srcObjects {
					return lines
				}
			}
			return append(lines, srcObjects)
		}); err != nil {
			return err
		}
	} else if err := r.copyObjects(ctx, src, dst, refs); err != nil {
		return err
	}
	return r.alignAt(ctx, dst, refs, head)
}

// copyObjects fetches what refs need from the repository at src into dst
// (a local fetch: git sends only what dst lacks, as one pack).
func (r *Repos) copyObjects(ctx context.Context, src, dst string, refs map[string]string) error {
	var want []string
	seen := map[string]bool{}
	for _, oid := range StateRefs(refs) {
		if !nip34.IsObjectID(oid) || seen[oid] {
			continue
		}
		seen[oid] = true
		want = append(want, oid)
	}
	if len(want) == 0 {
		return nil
	}
	sort.Strings(want)
	args := append([]string{"-c", "uploadpack.allowAnySHA1InWant=true", "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--", src}, want...)
	if _, err := r.run(ctx, dst, nil, args...); err != nil {
		return fmt.Errorf("copy objects: %w", err)
	}
	return nil
}

func readAlternates(repoDir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(repoDir, "objects", "info", "alternates"))
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return lines, nil
}

// editAlternates rewrites objects/info/alternates atomically (temp file +
// rename), so a concurrent git reader sees the old or the new list.
func editAlternates(repoDir string, edit func([]string) []string) error {
	lines, err := readAlternates(repoDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read alternates of %s: %w", repoDir, err)
	}
	before := strings.Join(lines, "\n")
	lines = edit(lines)
	if strings.Join(lines, "\n") == before {
		return nil
	}
	infoDir := filepath.Join(repoDir, "objects", "info")
	if err := os.MkdirAll(infoDir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", infoDir, err)
	}
	final := filepath.Join(infoDir, "alternates")
	if len(lines) == 0 {
		if err := os.Remove(final); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove alternates of %s: %w", repoDir, err)
		}
		return nil
	}
	tmp := final + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return fmt.Errorf("write alternates of %s: %w", repoDir, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return fmt.Errorf("install alternates of %s: %w", repoDir, err)
	}
	return nil
}

func (r *Repos) existing(repo nip34.RepoRef) (string, error) {
	dir, err := r.Path(repo)
	if err != nil {
		return "", err
	}
	if !isRepoDir(dir) {
		return "", fmt.Errorf("%s/%s: %w", repo.Npub(), repo.Identifier, ErrNotFound)
	}
	return dir, nil
}

// gitEnv is the environment of every git process: the caller's environment
// without GIT_* variables (a stray GIT_DIR would redirect git elsewhere) and
// without the user's global and system config, so the server behaves the
// same on every machine; what it needs is passed with -c.
func gitEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	env = append(env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0")
	return append(env, extra...)
}

// run executes a short git command and returns its stdout; stderr becomes
// part of the error.
func (r *Repos) run(ctx context.Context, dir string, stdin io.Reader, args ...string) ([]byte, error) {
	return r.runEnv(ctx, dir, nil, stdin, args...)
}

// runEnv is run with extra environment variables.
func (r *Repos) runEnv(ctx context.Context, dir string, extraEnv []string, stdin io.Reader, args ...string) ([]byte, error) {
	name := ""
	for _, a := range args {
		if !strings.HasPrefix(a, "-") && !strings.Contains(a, "=") {
			name = a
			break
		}
	}
	if dir != "" {
		args = append([]string{"--git-dir=" + dir}, args...)
	}
	cmd := exec.CommandContext(ctx, r.git, args...)
	cmd.Env = gitEnv(extraEnv...)
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 400 {
			msg = msg[:400] + "…"
		}
		return nil, fmt.Errorf("git %s: %w: %s", name, err, msg)
	}
	return stdout.Bytes(), nil
}

// Maintain runs `git gc --auto` on a repository, under its lock like every
// other write. Pushes run with receive.autogc=false so that no request waits
// for a repack; the maintenance loop calls this instead. A repository whose
// objects another one borrows (alternates) never prunes: an object
// unreachable here may be what the borrower's refs point at (security
// audit F01, step 6).
func (r *Repos) Maintain(ctx context.Context, repo nip34.RepoRef) error {
	dir, err := r.existing(repo)
	if err != nil {
		return err
	}
	deps, err := r.dependents(repo.Identifier, filepath.Join(dir, "objects"))
	if err != nil {
		return fmt.Errorf("maintain %s: %w", dir, err)
	}
	unlock, err := r.lock(ctx, dir)
	if err != nil {
		return err
	}
	defer unlock()
	args := []string{"-c", "gc.autoDetach=false"}
	if len(deps) > 0 {
		args = append(args, "-c", "gc.pruneExpire=never")
	}
	if _, err := r.run(ctx, dir, nil, append(args, "gc", "--auto", "--quiet")...); err != nil {
		return fmt.Errorf("maintain %s: %w", dir, err)
	}
	return nil
}

// SetRef points one ref at oid (e.g. refs/nostr/<id> for a PR whose commit
// already exists, G01-G5c). oldOID, if not empty, must be the ref's current
// value (ZeroOID: the ref must not exist), so a concurrent change is not
// overwritten.
func (r *Repos) SetRef(ctx context.Context, repo nip34.RepoRef, ref, oid, oldOID string) error {
	if !nip34.IsObjectID(oid) || IsZeroOID(oid) {
		return outcome.Errorf(outcome.Invalid, "%q is not an object id", Clip(oid, 80))
	}
	return r.updateRef(ctx, repo, ref, "update "+ref+" "+oid, oldOID)
}

// DeleteRef removes one ref, e.g. an expired refs/nostr/<id> placeholder
// (G01-G5f). oldOID, if not empty, must be its current value; deleting a
// ref that does not exist is not an error.
func (r *Repos) DeleteRef(ctx context.Context, repo nip34.RepoRef, ref, oldOID string) error {
	return r.updateRef(ctx, repo, ref, "delete "+ref, oldOID)
}

func (r *Repos) updateRef(ctx context.Context, repo nip34.RepoRef, ref, cmd, oldOID string) error {
	if err := CheckRefName(ref); err != nil {
		return err
	}
	if oldOID != "" {
		if !nip34.IsObjectID(oldOID) {
			return outcome.Errorf(outcome.Invalid, "%q is not an object id", Clip(oldOID, 80))
		}
		cmd += " " + oldOID
	}
	dir, err := r.existing(repo)
	if err != nil {
		return err
	}
	unlock, err := r.lock(ctx, dir)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := r.run(ctx, dir, strings.NewReader(cmd+"\n"), "update-ref", "--stdin"); err != nil {
		return fmt.Errorf("%s in %s: %w", strings.SplitN(cmd, " ", 2)[0], dir, err)
	}
	return nil
}
