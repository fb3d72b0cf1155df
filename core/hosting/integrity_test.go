package hosting

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
)

// `grasp admin integrity-check`: each hosted repository against what the
// signed events prove. A repository nobody announced, one whose state's
// objects are missing, one whose alternates name a missing directory and
// one whose refs drifted are reported; with repair only the drifted one is
// realigned (and said to be), nothing else is guessed at.
func TestIntegrityReportsAndRepairs(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	a, b, c, d := newKey(t), newKey(t), newKey(t), newKey(t)
	drifted, missing, orphan, broken := nip34.RepoRef{Pubkey: a.PK, Identifier: "r"}, nip34.RepoRef{Pubkey: b.PK, Identifier: "r"},
		nip34.RepoRef{Pubkey: c.PK, Identifier: "r"}, nip34.RepoRef{Pubkey: d.PK, Identifier: "r"}
	for _, k := range []key{a, b, d} {
		r.store.save(t, k.sign(t, nip34.KindAnnouncement, nostr.Tags{{"d", "r"}}))
	}
	for _, repo := range []nip34.RepoRef{drifted, missing, orphan, broken} {
		if err := r.repos.Create(ctx, repo); err != nil {
			t.Fatal(err)
		}
	}
	tip := r.commitTo(drifted, "refs/heads/main", "signed")
	r.commitTo(drifted, "refs/heads/main", "pushed around the state")
	r.store.save(t, a.state(t, "r", tip))
	r.store.save(t, b.state(t, "r", strings.Repeat("d", 40)))
	dir, _ := r.repos.Path(broken)
	if err := os.MkdirAll(filepath.Join(dir, "objects", "info"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "objects", "info", "alternates"), []byte(filepath.Join(t.TempDir(), "gone")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	problems := func(fs []Finding) map[string]Finding {
		out := map[string]Finding{}
		for _, f := range fs {
			out[f.Repo+" "+f.Problem] = f
		}
		return out
	}
	fs, err := r.h.Integrity(ctx, false, nip34.RepoRef{})
	if err != nil {
		t.Fatal(err)
	}
	got := problems(fs)
	for _, want := range []string{drifted.String() + " " + ProblemDrifted, missing.String() + " " + ProblemMissingObjects,
		orphan.String() + " " + ProblemNoAnnouncement, broken.String() + " " + ProblemAlternates} {
		if _, ok := got[want]; !ok {
			t.Errorf("no finding %q in %+v", want, fs)
		}
	}
	if len(fs) != 4 {
		t.Errorf("%d findings, want 4: %+v", len(fs), fs)
	}
	if r.refs(drifted)["refs/heads/main"] == tip {
		t.Fatal("a check without repair changed the refs")
	}

	fs, n, err := r.h.IntegrityCounted(ctx, true, drifted)
	if err != nil || n != 1 || len(fs) != 1 || fs[0].Problem != ProblemDrifted || !fs[0].Repaired {
		t.Fatalf("repair of one repository: %+v, checked %d (%v); want the drift repaired", fs, n, err)
	}
	if r.refs(drifted)["refs/heads/main"] != tip {
		t.Fatal("the repaired repository is not at its state")
	}
	if fs, _ := r.h.Integrity(ctx, true, missing); len(fs) != 1 || fs[0].Repaired {
		t.Fatalf("repair with objects missing: %+v, want reported, not repaired", fs)
	}
}
