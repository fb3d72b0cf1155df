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

// G01-G4 part 3: a repository announced again whose data is already here
// is brought to its stored state after the OK, and its announcement
// released without a push.
func TestG01_G4_AdoptDataAlreadyInTheRepo(t *testing.T) {
	r := newRig(t)
	a := newKey(t)
	repo := nip34.RepoRef{Pubkey: a.PK, Identifier: "r"}
	if err := r.repos.Create(context.Background(), repo); err != nil {
		t.Fatal(err)
	}
	tip := r.commitTo(repo, "refs/heads/old", "kept from before")
	r.store.save(t, a.state(t, "r", tip))
	ann, _ := r.announce(a, "r")
	if r.isPublished(ann) {
		t.Fatal("the announcement was released before the adoption ran")
	}
	r.runSpawned()
	if refs := r.refs(repo); refs["refs/heads/main"] != tip || len(refs) != 1 {
		t.Fatalf("refs %v, want exactly the stored state's", refs)
	}
	if !r.isPublished(ann) || r.held(ann) {
		t.Fatal("the announcement of a repository with its data stays held")
	}
}

// G01-G4 part 3 for a maintainer who announces after the push: the new
// repository takes the state from the co-maintainer's copy, borrowing its
// objects (its owner is a confirmed maintainer, F01), and is released.
func TestG01_G4_AdoptFromAMaintainersCopy(t *testing.T) {
	r := newRig(t)
	a, b := newKey(t), newKey(t)
	repoB := nip34.RepoRef{Pubkey: b.PK, Identifier: "r"}
	r.store.save(t, b.sign(t, nip34.KindAnnouncement, nostr.Tags{{"d", "r"}, {"maintainers", a.PK}}))
	if err := r.repos.Create(context.Background(), repoB); err != nil {
		t.Fatal(err)
	}
	tip := r.commit(repoB)
	r.store.save(t, b.state(t, "r", tip))

	ann, repoA := r.announce(a, "r", nostr.Tag{"maintainers", b.PK})
	r.runSpawned()
	if refs := r.refs(repoA); refs["refs/heads/main"] != tip {
		t.Fatalf("a's new repository refs %v, want the state from b's copy", refs)
	}
	if !r.isPublished(ann) {
		t.Fatal("a's announcement stays held though its repository has the state")
	}
	dirA, _ := r.repos.Path(repoA)
	dirB, _ := r.repos.Path(repoB)
	alt, err := os.ReadFile(filepath.Join(dirA, "objects", "info", "alternates"))
	if err != nil || !strings.Contains(string(alt), filepath.Join(dirB, "objects")) {
		t.Fatalf("alternates %q (%v), want a's repository borrowing from its confirmed maintainer's", alt, err)
	}
}

// Without a stored state (or its objects) a new announcement waits for a
// push: nothing is adopted.
func TestAdoptWithoutAStateWaits(t *testing.T) {
	r := newRig(t)
	a := newKey(t)
	ann, repo := r.announce(a, "r")
	r.runSpawned()
	if r.isPublished(ann) || !r.held(ann) || len(r.refs(repo)) != 0 {
		t.Fatal("an announcement without data was released or its repository changed")
	}
	r.store.save(t, a.state(t, "r", strings.Repeat("7", 40)))
	ann2, _ := r.announce(a, "r", nostr.Tag{"description", "again"})
	r.runSpawned()
	if r.isPublished(ann2) || len(r.refs(repo)) != 0 {
		t.Fatal("an announcement whose state's objects are nowhere was released")
	}
}
