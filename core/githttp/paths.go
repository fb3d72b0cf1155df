package githttp

import (
	"strings"

	"github.com/grasp-dev/grasp/core/git"
)

// Routed reports whether the relay hands a request for escapedPath (base
// path stripped) to the git handler: a repository's smart-HTTP paths
// (info/refs, git-upload-pack, git-receive-pack), or anything under /prs/
// (GRASP-06: the handler serves it when enabled, 404 otherwise). The
// repository's own page and everything else under it are the pages'.
func Routed(escapedPath string) bool {
	if strings.HasPrefix(escapedPath, prsPath+"/") {
		return true
	}
	_, _, sub, ok := git.SplitRepoPath(escapedPath)
	return ok && (sub == "info/refs" || sub == svcUpload || sub == svcReceive)
}
