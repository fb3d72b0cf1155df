package nip34

import "strconv"

// Event kinds of NIP-34 and the neighbouring NIPs grasp serves.
const (
	KindDeletion = 5
	KindNote     = 1
	KindComment  = 1111
	KindPatch    = 1617
	KindPR       = 1618
	KindPRUpdate = 1619
	KindIssue    = 1621
	// KindCoverNote is GitWorkshop v4's pinned note above an issue, patch
	// or PR (lowercase `e` root); the newest authorised one wins.
	KindCoverNote    = 1624
	KindStatusOpen   = 1630
	KindStatusMerged = 1631 // applied / merged / resolved
	KindStatusClosed = 1632
	KindStatusDraft  = 1633
	// KindLabel is a NIP-32 label: GitWorkshop v4 labels an issue, patch
	// or PR in namespace "#t" and renames it in "#subject".
	KindLabel = 1985
	// KindReview is GitWorkshop v4's PR review: a verdict in `s`, the
	// newest per reviewer wins, and it carries no merge authority.
	KindReview    = 7321
	KindGraspList = 10317
	// KindPrivateGraspList is a user's encrypted list of private GRASP
	// servers (GRASP-08): served only to its authenticated author.
	KindPrivateGraspList = 10318
	KindAnnouncement     = 30617
	KindState            = 30618
)

// IsRootKind reports whether events of this kind start a discussion that
// other events (statuses, comments, replies) attach to. PR updates count:
// they carry their own tip and clone URLs, and clients comment on them.
func IsRootKind(kind int) bool {
	switch kind {
	case KindPatch, KindPR, KindPRUpdate, KindIssue:
		return true
	}
	return false
}

// RootKinds lists the kinds IsRootKind accepts, in kind order, for filters
// (a fresh slice the caller may keep).
func RootKinds() []int { return []int{KindPatch, KindPR, KindPRUpdate, KindIssue} }

// KindName is how text addressed to people (OK messages, log lines, pages)
// names an event of kind: "announcement", "state", "issue", "patch", "PR",
// "PR update", "comment", "status"; any other kind is "kind <n>". Metric
// labels are not names: each metric keeps its own fixed label set.
func KindName(kind int) string {
	switch kind {
	case KindAnnouncement:
		return "announcement"
	case KindState:
		return "state"
	case KindIssue:
		return "issue"
	case KindPatch:
		return "patch"
	case KindPR:
		return "PR"
	case KindPRUpdate:
		return "PR update"
	case KindComment:
		return "comment"
	}
	if IsStatusKind(kind) {
		return "status"
	}
	return "kind " + strconv.Itoa(kind)
}

// IsStatusKind reports whether kind is one of the 1630–1633 statuses.
func IsStatusKind(kind int) bool {
	return kind >= KindStatusOpen && kind <= KindStatusDraft
}

// NeedsGitData reports whether events of this kind are held in purgatory
// until their git data exists (GRASP-01 purgatory: announcements, states,
// PRs and PR updates).
func NeedsGitData(kind int) bool {
	switch kind {
	case KindAnnouncement, KindState, KindPR, KindPRUpdate:
		return true
	}
	return false
}
