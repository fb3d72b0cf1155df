package hosting

import "github.com/grasp-dev/grasp/core/nip34"

// notable reports whether an event of kind gets its own info line when it
// is held, stored or released: announcements, states and PRs change what a
// repository is; issues and comments are ordinary traffic, logged at debug.
func notable(kind int) bool {
	switch kind {
	case nip34.KindAnnouncement, nip34.KindState, nip34.KindPR, nip34.KindPRUpdate:
		return true
	}
	return false
}
