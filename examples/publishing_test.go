package examples_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/policy"
)

// The guide docs/publishing.md cannot rot: its "Without ngit" commands are
// run as written by bash against a real server (the guide's example host
// swapped for the server's address, ~ a temporary home, `go run
// ./examples/publish` the program built from this tree), and what they
// print must be the guide's sample output, ids, commits and npub aside
// (issue 26 part 7). The commands publish a repository in ngit's order
// (announcement held in purgatory, the repository created at once, the
// state held, the push releasing both), clone it back, and send a PR git
// first through refs/nostr/<id>.
func TestPublishingGuideRunsAsWritten(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("bash is needed to run the guide's commands: ", err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	guide, err := os.ReadFile("../docs/publishing.md")
	if err != nil {
		t.Fatal(err)
	}
	// the OK texts the guide explains are the server's own
	for _, msg := range []string{policy.MsgPurgatory, policy.MsgInPurgatory, policy.MsgPRPurgatory("<c>", "<id>")} {
		if !strings.Contains(string(guide), "`"+msg+"`") {
			t.Errorf("docs/publishing.md does not explain the OK message %q", msg)
		}
	}
	commands := fencedAfter(t, string(guide), "<!-- publish: commands -->")
	want := fencedAfter(t, string(guide), "<!-- publish: output -->")

	bin := filepath.Join(t.TempDir(), "publish")
	if out, err := exec.Command(goBin, "build", "-o", bin, "./publish").CombinedOutput(); err != nil {
		t.Fatalf("build examples/publish: %v\n%s", err, out)
	}
	srv := startConfig(t, "the default config", config.Default())
	const exampleHost = "https://git.example.org"
	if !strings.Contains(commands, exampleHost) {
		t.Fatalf("the guide's commands no longer name %s; update this test", exampleHost)
	}
	home := t.TempDir()
	script := "set -euo pipefail\n" +
		// the guide runs `go run ./examples/publish` from a checkout
		`go() { if [ "$1" = run ] && [ "$2" = ./examples/publish ]; then shift 2; "$PUBLISH" "$@"; else command go "$@"; fi; }` + "\n" +
		strings.ReplaceAll(commands, exampleHost, srv.base)
	cmd := exec.Command(bash, "-c", script)
	cmd.Dir = home
	cmd.Env = append(os.Environ(), "HOME="+home, "PUBLISH="+bin, "GIT_TERMINAL_PROMPT=0",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Guide", "GIT_AUTHOR_EMAIL=guide@example.org", "GIT_COMMITTER_NAME=Guide", "GIT_COMMITTER_EMAIL=guide@example.org")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the guide's commands failed: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}

	relay := "ws" + strings.TrimPrefix(srv.base, "http")
	got := strings.NewReplacer(srv.base, exampleHost, relay, "wss://git.example.org").Replace(stdout.String())
	got = regexp.MustCompile(`npub1[02-9ac-hj-np-z]{58}`).ReplaceAllString(got, "<npub>")
	got = regexp.MustCompile(`\b[0-9a-f]{64}\b`).ReplaceAllString(got, "<id>")
	got = regexp.MustCompile(`\b[0-9a-f]{40}\b`).ReplaceAllString(got, "<commit>")
	if strings.TrimSpace(got) != strings.TrimSpace(want) {
		t.Errorf("the guide's sample output is not what its commands print\n--- guide:\n%s\n--- printed:\n%s", want, got)
	}

	// What a user would check next: the clone has the commit, the server
	// holds the PR's commits under refs/nostr/<id>.
	clone := filepath.Join(home, "hello-clone")
	if log := git(t, clone, "log", "--format=%s"); log != "first commit" {
		t.Errorf("the clone's history is %q, want the first commit", log)
	}
	shout := git(t, filepath.Join(home, "src", "hello"), "rev-parse", "shout")
	origin := git(t, clone, "remote", "get-url", "origin")
	if refs := lsRemote(t, origin); !regexp.MustCompile(shout + `\trefs/nostr/[0-9a-f]{64}\n`).MatchString(refs) {
		t.Errorf("the server does not hold the PR's tip %s under refs/nostr/<id>:\n%s", shout, refs)
	}
}

// fencedAfter returns the body of the first fenced code block after marker.
func fencedAfter(t *testing.T, doc, marker string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, marker)
	if !ok {
		t.Fatalf("docs/publishing.md lost its marker %s", marker)
	}
	m := regexp.MustCompile("(?s)\\A\\s*```[a-z]*\\n(.*?)```").FindStringSubmatch(rest)
	if m == nil {
		t.Fatalf("no code block right after %s", marker)
	}
	return m[1]
}
