package admin

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nbd-wtf/go-nostr"
)

// VerifyTools are what Verify needs of the store and of git.
type VerifyTools struct {
	// Load fills dataDir's store from a dump (store.Restore).
	Load func(dataDir string, r io.Reader) error
	// Query opens the restored store under dataDir and calls fn with a
	// query of its events (store.Store.Events().QueryEvents), closing it
	// after; nil when the events are not in the backup (postgres).
	Query func(ctx context.Context, dataDir string, fn func(q func(context.Context, nostr.Filter) (chan *nostr.Event, error)) error) error
	// Refs lists a restored repository's refs (git.Repos.RefsIn); Fsck
	// runs git fsck on it (git.Repos.Fsck).
	Refs func(ctx context.Context, dir string) (map[string]string, error)
	Fsck func(ctx context.Context, dir string) error
	// Scratch is where the temporary data dir goes ("" is os.TempDir()).
	Scratch string
}

// VerifyReport is what Verify checked and what it found wrong.
type VerifyReport struct {
	Manifest     Manifest
	Files        int // files whose hash matched the hash manifest
	Events       int // events whose id and signature matched their content
	Repositories int // repositories whose refs matched and which git fsck found whole
	Notes        []string
	Problems     []string
}

// maxListed bounds the problems of one kind a report lists by name.
const maxListed = 20

// Verify checks the backup directory src as a restore would use it: every
// file against the hash manifest (none missing, changed or added), then a
// restore into a temporary data dir under Scratch, where every event's id
// must be the hash of its content and its signature valid, every
// repository's refs must be those recorded while it was copied, and git
// fsck must find every repository whole. The temporary data dir is
// removed. An error is a verification that could not run; what it found
// is in the report's Problems.
func Verify(ctx context.Context, src string, tools VerifyTools) (VerifyReport, error) {
	var rep VerifyReport
	if real, err := filepath.EvalSymlinks(src); err == nil {
		src = real
	}
	m, err := ReadManifest(src)
	if err != nil {
		return rep, err
	}
	rep.Manifest = m
	problem := func(format string, args ...any) { rep.Problems = append(rep.Problems, fmt.Sprintf(format, args...)) }

	if m.Hashes == "" {
		rep.Notes = append(rep.Notes, "the backup has no hash manifest (taken by an older grasp): its files were not checked one by one")
	} else if err := verifyHashes(src, m, &rep, problem); err != nil {
		return rep, err
	}

	scratch, err := os.MkdirTemp(tools.Scratch, "grasp-verify-")
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(scratch)
	data := filepath.Join(scratch, "data")
	if _, err := Restore(src, data, func(r io.Reader) error { return tools.Load(data, r) }); err != nil {
		problem("restore: %v", err)
		return rep, nil
	}

	if tools.Query == nil {
		rep.Notes = append(rep.Notes, "the events are not in this backup (store.backend = postgres): not checked")
	} else if err := tools.Query(ctx, data, func(q func(context.Context, nostr.Filter) (chan *nostr.Event, error)) error {
		return verifyEvents(ctx, q, &rep, problem)
	}); err != nil {
		problem("read the restored events: %v", err)
	}

	refs, err := readRefs(src)
	if err != nil {
		return rep, err
	}
	if refs == nil {
		rep.Notes = append(rep.Notes, "the backup records no refs (taken by an older grasp): refs not compared")
		refs = map[string]map[string]string{}
		for _, d := range restoredRepos(data) {
			refs[d] = nil
		}
	}
	for _, rel := range slices.Sorted(maps.Keys(refs)) {
		dir := filepath.Join(data, filepath.FromSlash(rel))
		ok := true
		if want := refs[rel]; want != nil {
			got, err := tools.Refs(ctx, dir)
			if err != nil {
				problem("%s: %v", rel, err)
				continue
			}
			if d := refsDiff(got, want); d != "" {
				problem("%s: refs differ from those recorded at backup time: %s", rel, d)
				ok = false
			}
		}
		if err := tools.Fsck(ctx, dir); err != nil {
			problem("%s: %v", rel, err)
			ok = false
		}
		if ok {
			rep.Repositories++
		}
	}
	return rep, nil
}

// verifyHashes checks the hash manifest itself against the manifest, then
// every file against it.
func verifyHashes(src string, m Manifest, rep *VerifyReport, problem func(string, ...any)) error {
	b, err := os.ReadFile(filepath.Join(src, HashesName))
	if err != nil {
		problem("%s: %v", HashesName, err)
		return nil
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != m.Hashes {
		problem("%s does not match the hash the manifest records for it: it was changed", HashesName)
		return nil
	}
	listed := map[string]bool{}
	var bad int
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		want, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || !fs.ValidPath(name) {
			problem("%s: malformed line %q", HashesName, sc.Text())
			continue
		}
		listed[name] = true
		got, err := fileHash(filepath.Join(src, filepath.FromSlash(name)))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			bad++
			if bad <= maxListed {
				problem("%s is missing", name)
			}
		case err != nil:
			return err
		case got != want:
			bad++
			if bad <= maxListed {
				problem("%s is not the file backed up (its SHA-256 differs)", name)
			}
		default:
			rep.Files++
		}
	}
	if bad > maxListed {
		problem("... and %d more files missing or changed", bad-maxListed)
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		rel = filepath.ToSlash(rel)
		if d.Type().IsRegular() && rel != ManifestName && rel != HashesName && !listed[rel] {
			problem("%s is not part of the backup (not in %s)", rel, HashesName)
		}
		return nil
	})
}

func fileHash(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// verifyPage is how many events Verify reads at once (a test shrinks it).
var verifyPage = 5000

// verifyEvents reads every event of the restored store, newest first a
// page at a time, and checks that its id is the hash of its content and
// its signature is valid.
func verifyEvents(ctx context.Context, q func(context.Context, nostr.Filter) (chan *nostr.Event, error), rep *VerifyReport, problem func(string, ...any)) error {
	page := verifyPage
	limit := page
	until := nostr.Timestamp(1<<62 - 1)
	seen := map[string]bool{} // ids at the current until, read already
	var bad int
	for {
		ch, err := q(ctx, nostr.Filter{Until: &until, Limit: limit})
		if err != nil {
			return err
		}
		var evs []*nostr.Event
		for e := range ch {
			evs = append(evs, e)
		}
		fresh := 0
		for _, e := range evs {
			if seen[e.ID] {
				continue
			}
			fresh++
			if ok, err := e.CheckSignature(); e.GetID() != e.ID || !ok || err != nil {
				bad++
				if bad <= maxListed {
					problem("event %s (kind %d): its id or signature does not match its content", e.ID, e.Kind)
				}
				continue
			}
			rep.Events++
		}
		if len(evs) < limit {
			break
		}
		oldest := evs[len(evs)-1].CreatedAt
		if fresh == 0 {
			// A page of one second only, all read: more share it.
			limit *= 2
			continue
		}
		if oldest != until {
			clear(seen)
		}
		for _, e := range evs {
			if e.CreatedAt == oldest {
				seen[e.ID] = true
			}
		}
		until, limit = oldest, page
	}
	if bad > maxListed {
		problem("... and %d more events whose id or signature does not match", bad-maxListed)
	}
	return nil
}

// readRefs reads the refs recorded at backup time (nil when the backup
// has none).
func readRefs(src string) (map[string]map[string]string, error) {
	b, err := os.ReadFile(filepath.Join(src, RefsName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	refs := map[string]map[string]string{}
	if err := json.Unmarshal(b, &refs); err != nil {
		return nil, fmt.Errorf("%s: %w", RefsName, err)
	}
	for k, v := range refs {
		if v == nil {
			refs[k] = map[string]string{}
		}
	}
	return refs, nil
}

// restoredRepos lists the bare repositories under data/git
// ("git/<npub>/<d>.git"), for a backup that records no refs.
func restoredRepos(data string) []string {
	var out []string
	owners, _ := os.ReadDir(filepath.Join(data, "git"))
	for _, o := range owners {
		if !o.IsDir() || strings.HasPrefix(o.Name(), ".") {
			continue
		}
		repos, _ := os.ReadDir(filepath.Join(data, "git", o.Name()))
		for _, r := range repos {
			if r.IsDir() && strings.HasSuffix(r.Name(), ".git") {
				out = append(out, "git/"+o.Name()+"/"+r.Name())
			}
		}
	}
	return out
}

func refsDiff(got, want map[string]string) string {
	var d []string
	for _, ref := range slices.Sorted(maps.Keys(want)) {
		if got[ref] != want[ref] {
			d = append(d, fmt.Sprintf("%s is %q, was %s", ref, got[ref], want[ref]))
		}
	}
	for _, ref := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[ref]; !ok {
			d = append(d, fmt.Sprintf("%s is new (%s)", ref, got[ref]))
		}
	}
	if len(d) > 5 {
		d = append(d[:5], fmt.Sprintf("and %d more", len(d)-5))
	}
	return strings.Join(d, "; ")
}

// Write renders the report for a terminal and reports whether the backup
// verified.
func (r VerifyReport) Write(w io.Writer, src string) bool {
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(w, "PROBLEM %s\n", p)
	}
	fmt.Fprintf(w, "%s (backup of %s taken %s): %d files matched their hashes, %d events their ids and signatures, %d repositories their refs and git fsck; %d problem(s)\n",
		src, r.Manifest.DataDir, r.Manifest.Created.Format("2006-01-02 15:04:05 MST"), r.Files, r.Events, r.Repositories, len(r.Problems))
	return len(r.Problems) == 0
}
