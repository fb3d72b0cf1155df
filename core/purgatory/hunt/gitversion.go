package hunt

import (
	"context"
	"fmt"

	gitrepo "github.com/grasp-dev/grasp/core/git"
)

// MinGit is the oldest git the hunter pins fetches with: git 2.37 added
// http.curloptResolve, and an older git ignores the setting without a word,
// and with it the address check (audit F18d).
var MinGit = gitrepo.Version{Major: 2, Minor: 37}

// GitVersioner reports the version of the git that fetches run
// (*git.Repos).
type GitVersioner interface {
	Version(ctx context.Context) (gitrepo.Version, error)
}

// CheckGit returns why the hunter must not run with the git of repos: with
// the address guard on (allowPrivate false) fetches are pinned, which needs
// MinGit. Pass the result as Options.Disabled.
func CheckGit(ctx context.Context, repos GitVersioner, allowPrivate bool) error {
	if allowPrivate {
		return nil
	}
	v, err := repos.Version(ctx)
	if err != nil {
		return fmt.Errorf("cannot tell which git runs fetches, so cannot tell whether it pins them to checked addresses: %w", err)
	}
	if !v.AtLeast(MinGit) {
		return fmt.Errorf("git %s is older than %s: it would ignore http.curloptResolve and fetch from whatever a clone URL's host resolves to at the time (SSRF); install git %s or newer, or set purgatory.fetch_private_addresses = true if every clone URL may reach your network", v, MinGit, MinGit)
	}
	return nil
}
