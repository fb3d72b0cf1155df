package githttp

import (
	"testing"

	"github.com/grasp-dev/grasp/core/git"
)

func TestRoutedPaths(t *testing.T) {
	n := "npub180cvv07tjdrrgpa0j7j7tmnyl2yr6yr7l8j4s3evf6u64th6gkwsyjh6w6"
	for p, want := range map[string]bool{
		git.RepoURLPath(n, "x") + "/info/refs": true,
		"/prs/" + n + "/x.git/info/refs":       true,
		"/" + n + "/x":                         false,
		"/":                                    false,
		"/metrics":                             false,
	} {
		if got := Routed(p); got != want {
			t.Errorf("Routed(%q) = %v, want %v", p, got, want)
		}
	}
}
