package hunt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/core/env"
	gitrepo "github.com/grasp-dev/grasp/core/git"
)

// fakeGit stands in for a remote that, unlike git upload-pack, does not
// name the object it lacks, so Fetch must bisect. It keeps the objects the
// remote has and the local repo holds in files under FAKE_STATE (written
// into the script: a fetch runs with an environment of its own).
const fakeGit = `#!/bin/sh
FAKE_STATE=%s
cmd=""; oids=""; eoo=0
while [ $# -gt 0 ]; do
  case "$1" in
    -c|-C) shift 2; continue;;
    cat-file) cmd=cat; shift; continue;;
    fetch) cmd=fetch; shift; continue;;
    --end-of-options) eoo=1; shift 2; continue;;
  esac
  [ $eoo = 1 ] && oids="$oids $1"
  shift
done
if [ "$cmd" = cat ]; then
  while read o; do
    if grep -qx "$o" "$FAKE_STATE/present"; then echo "$o commit"; else echo "$o missing"; fi
  done
  exit 0
fi
echo run >> "$FAKE_STATE/runs"
for o in $oids; do
  grep -qx "$o" "$FAKE_STATE/remote" || { echo "error: remote did not send all necessary objects" >&2; exit 1; }
done
for o in $oids; do echo "$o" >> "$FAKE_STATE/present"; done
`

func TestG02_MultiOIDFetchBisectsWhenTheRemoteNamesNoObject(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "git")
	if err := os.WriteFile(bin, []byte(fmt.Sprintf(fakeGit, shellQuote(dir))), 0o755); err != nil {
		t.Fatal(err)
	}
	has := []string{oid("a"), oid("b"), oid("c"), oid("d")}
	for name, body := range map[string]string{"remote": strings.Join(has, "\n") + "\n", "present": "", "runs": ""} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// the repository exists on disk; every git run is the fake's
	repos, err := gitrepo.NewRepos(gitrepo.RepoOptions{Root: filepath.Join(dir, "repos"), GitBinary: bin}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	repoDir, _ := repos.Path(repoN("r"))
	if err := os.MkdirAll(repoDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repoDir, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gc := &GitContext{Repos: repos, AllowPrivate: true}
	want := []string{oid("a"), oid("m1"), oid("b"), oid("c"), oid("m2"), oid("d")}
	got, err := gc.Fetch(context.Background(), repoN("r"), "https://x.example/r.git", want)
	if !reflect.DeepEqual(sorted(got), sorted(has)) {
		t.Fatalf("fetched %v, want the four the remote has (err %v)", got, err)
	}
	var fe *FetchError
	if !errors.As(err, &fe) || fe.Kind != KindMissing || !reflect.DeepEqual(sorted(fe.Missing), sorted([]string{oid("m1"), oid("m2")})) {
		t.Fatalf("error %v, want the two missing objects", err)
	}
	runs, _ := os.ReadFile(filepath.Join(dir, "runs"))
	if n := strings.Count(string(runs), "run"); n > 2*len(want)+2 {
		t.Fatalf("%d fetch runs for %d objects: bisection unbounded", n, len(want))
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
