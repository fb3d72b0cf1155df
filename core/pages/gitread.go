package pages

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/outcome"
)

// repoState is a repository's refs at the moment of a request; key names it
// in the cache.
type repoState struct {
	repo    nip34.RepoRef
	head    string // "refs/heads/main"
	headOID string // "" while HEAD names no existing branch
	refs    map[string]string
	key     string
}

// state reads the refs and HEAD, once per RefsStamp: a repeated view runs
// no git process for them.
func (p *Pages) state(ctx context.Context, repo nip34.RepoRef) (repoState, error) {
	stamp, err := p.opts.Repos.RefsStamp(repo)
	if err != nil {
		return repoState{}, err
	}
	if stamp == "" {
		return p.readState(ctx, repo)
	}
	v, err := p.cache.load(ctx, "state|"+repo.String()+"|"+stamp, func(ctx context.Context) (any, int, error) {
		st, err := p.readState(ctx, repo)
		size := 0
		for n := range st.refs {
			size += len(n) + 100
		}
		return st, size, err
	})
	if err != nil {
		return repoState{}, err
	}
	return v.(repoState), nil
}

func (p *Pages) readState(ctx context.Context, repo nip34.RepoRef) (repoState, error) {
	release, err := p.slot(ctx)
	if err != nil {
		return repoState{}, err
	}
	defer release()
	p.gitReads.WithLabelValues("for-each-ref").Inc()
	refs, err := p.opts.Repos.Refs(ctx, repo)
	if err != nil {
		return repoState{}, err
	}
	p.gitReads.WithLabelValues("symbolic-ref").Inc()
	head, err := p.opts.Repos.Head(ctx, repo)
	if err != nil {
		return repoState{}, err
	}
	return repoState{repo: repo, head: head, headOID: refs[head], refs: refs, key: tipsKey(head, refs)}, nil
}

type refEntry struct {
	Name, Full, OID string
	Head            bool
}

// branches and tags of the state, sorted by name, HEAD marked.
func (s repoState) named(prefix string) []refEntry {
	var out []refEntry
	for full, oid := range s.refs {
		if name, ok := strings.CutPrefix(full, prefix); ok {
			out = append(out, refEntry{Name: name, Full: full, OID: oid, Head: full == s.head})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// resolve splits "<rev>/<path>" (escaped segments) into a revision this
// repository has and the path: the longest leading run of segments naming a
// branch or tag wins, else the first segment must be an object id. Nothing
// a visitor writes reaches git as a revision: only ref targets and object
// ids do.
func (p *Pages) resolve(ctx context.Context, s repoState, rest string) (rev, oid, path string, err error) {
	segs := strings.Split(rest, "/")
	for i := range segs {
		if segs[i], err = url.PathUnescape(segs[i]); err != nil {
			return "", "", "", err
		}
	}
	for n := len(segs); n > 0; n-- {
		name := strings.Join(segs[:n], "/")
		for _, prefix := range []string{"refs/heads/", "refs/tags/"} {
			if o, ok := s.refs[prefix+name]; ok {
				return name, o, strings.Join(segs[n:], "/"), nil
			}
		}
	}
	if nip34.IsObjectID(segs[0]) {
		t, err := p.read(ctx, s.repo, 256, "cat-file", "-t", segs[0])
		if err == nil && (strings.TrimSpace(string(t)) == "commit" || strings.TrimSpace(string(t)) == "tag") {
			return segs[0], segs[0], strings.Join(segs[1:], "/"), nil
		}
	}
	return "", "", "", errors.New("no such branch, tag or commit")
}

func (p *Pages) read(ctx context.Context, repo nip34.RepoRef, max int, args ...string) ([]byte, error) {
	return p.readLimited(ctx, repo, git.ReadLimits{MaxBytes: max}, args...)
}

// slot takes one of the MaxGitReads slots, waiting (and counted as
// waiting) while all are taken.
func (p *Pages) slot(ctx context.Context) (release func(), err error) {
	select {
	case p.slots <- struct{}{}:
		return func() { <-p.slots }, nil
	default:
	}
	p.waiting.Inc()
	defer p.waiting.Dec()
	select {
	case p.slots <- struct{}{}:
		return func() { <-p.slots }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for a git read slot: %w", ctx.Err())
	}
}

// readLimited runs one git read in one of the MaxGitReads slots: what a
// crawler asking for many distinct commits costs is bounded in processes.
func (p *Pages) readLimited(ctx context.Context, repo nip34.RepoRef, lim git.ReadLimits, args ...string) ([]byte, error) {
	release, err := p.slot(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	p.gitReads.WithLabelValues(args[0]).Inc()
	return p.opts.Repos.Read(ctx, repo, lim, nil, args...)
}

type commitInfo struct {
	OID, Short, Author, Email, Subject, Body string
	Parents                                  []string
	When                                     time.Time
}

const logFormat = "--format=%H%x1f%P%x1f%an%x1f%ae%x1f%at%x1f%s%x1f%b%x1e"

func parseCommits(out []byte) []commitInfo {
	var list []commitInfo
	for _, rec := range bytes.Split(out, []byte{0x1e}) {
		f := strings.Split(strings.TrimLeft(string(rec), "\n"), "\x1f")
		if len(f) < 7 || !nip34.IsObjectID(f[0]) {
			continue
		}
		sec, _ := strconv.ParseInt(f[4], 10, 64)
		list = append(list, commitInfo{OID: f[0], Short: f[0][:10], Parents: strings.Fields(f[1]), Author: f[2], Email: f[3],
			When: time.Unix(sec, 0).UTC(), Subject: f[5], Body: strings.TrimSpace(f[6])})
	}
	return list
}

// commits lists up to n commits reachable from oid that touch path ("":
// all of them), after skip.
func (p *Pages) commits(ctx context.Context, repo nip34.RepoRef, oid, path string, n, skip int) ([]commitInfo, error) {
	args := []string{"log", "--no-color", logFormat, "-n", strconv.Itoa(n), "--skip", strconv.Itoa(skip), oid, "--"}
	if path != "" {
		args = append(args, path)
	}
	out, err := p.read(ctx, repo, 1<<20, args...)
	if err != nil && !errors.Is(err, git.ErrReadTruncated) {
		return nil, err
	}
	return parseCommits(out), nil
}

type treeEntry struct {
	Mode, Type, OID, Name, Path string
	Size                        int64 // -1 for trees and submodules
}

// tree lists the directory dir ("" for the root) of the tree-ish oid, or,
// with self, the entry dir itself.
func (p *Pages) tree(ctx context.Context, repo nip34.RepoRef, oid, dir string, self bool) ([]treeEntry, error) {
	args := []string{"ls-tree", "-l", "-z", oid}
	if dir != "" {
		if !self {
			dir += "/"
		}
		args = append(args, "--", dir)
	}
	out, err := p.read(ctx, repo, 4<<20, args...)
	if err != nil && !errors.Is(err, git.ErrReadTruncated) {
		return nil, err
	}
	var list []treeEntry
	for _, rec := range bytes.Split(out, []byte{0}) {
		meta, name, ok := strings.Cut(string(rec), "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 4 {
			continue
		}
		size, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			size = -1
		}
		base := name[strings.LastIndex(name, "/")+1:]
		list = append(list, treeEntry{Mode: f[0], Type: f[1], OID: f[2], Size: size, Path: name, Name: base})
	}
	sort.SliceStable(list, func(i, j int) bool {
		if (list[i].Type == "tree") != (list[j].Type == "tree") {
			return list[i].Type == "tree"
		}
		return list[i].Name < list[j].Name
	})
	return list, nil
}

// blob reads up to max bytes of a blob; truncated says there was more.
func (p *Pages) blob(ctx context.Context, repo nip34.RepoRef, oid string, max int) (data []byte, truncated bool, err error) {
	if !nip34.IsObjectID(oid) {
		return nil, false, outcome.Errorf(outcome.Invalid, "%q is not an object id", oid)
	}
	out, err := p.read(ctx, repo, max, "cat-file", "blob", oid)
	if errors.Is(err, git.ErrReadTruncated) {
		return out, true, nil
	}
	return out, false, err
}

// binary is git's own test: a NUL in the first 8000 bytes; text that is
// not UTF-8 is shown as binary too rather than as mojibake.
func binary(b []byte) bool {
	head := b[:min(len(b), 8000)]
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	return !utf8Valid(head)
}

// utf8Valid tolerates a multi-byte character cut at the end of a prefix.
func utf8Valid(b []byte) bool {
	for i := 0; i < 4 && len(b) > 0; i++ {
		if utf8.Valid(b) {
			return true
		}
		b = b[:len(b)-1]
	}
	return utf8.Valid(b)
}
