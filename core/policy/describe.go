package policy

import (
	"fmt"
	"strings"
)

// AcceptanceCriteria is the NIP-11 repo_acceptance_criteria sentence
// (G01-N3), generated from the configuration actually in force rather than
// a fixed "None" (grasp.md §10.4).
func AcceptanceCriteria(opts Options) string {
	svc := opts.Service
	var b strings.Builder
	if sc := opts.Archive; sc.Enabled() {
		// GRASP-05: the archive scope comes first, it is what decides.
		fmt.Fprintf(&b, "GRASP-05 archive: %s; announcements in that scope are accepted whether or not they list this service. ", sc.Curation())
		if sc.ReadOnly() {
			b.WriteString("Announcements outside it are refused and archived repositories take no pushes. ")
		}
	}
	fmt.Fprintf(&b, "Repository announcements (kind 30617) must list this service in both 'clone' (%s/<npub>/<identifier>.git) and 'relays' (%s); ",
		svc.BaseURL(), svc.RelayURL())
	b.WriteString("announcements by maintainers of a repository hosted here are accepted without listing it. ")
	b.WriteString("New repositories, repository states (only from the maintainers who listed back: NIP-34 v3 roles, an invitee must list the inviter), PRs and PR updates are held until their git data is pushed")
	if opts.PurgatoryTTL > 0 {
		fmt.Fprintf(&b, " and discarded after %s without it", opts.PurgatoryTTL)
	}
	b.WriteString(". Other events must tag, or be tagged by, an accepted repository, issue, patch or PR.")
	if opts.GRASP06 {
		fmt.Fprintf(&b, " GRASP-06: PRs and PR updates for repositories not hosted here are accepted when a 'clone' tag names %s/prs/<signer npub>/<identifier>.git with the identifier of one of their 'a' tags; only refs/nostr/<event-id> may be pushed there.", svc.BaseURL())
	}
	if opts.MaxReposPerPubkey > 0 {
		fmt.Fprintf(&b, " At most %d repositories per author.", opts.MaxReposPerPubkey)
	}
	if len(nonEmpty(opts.RepoWhitelist)) > 0 {
		b.WriteString(" Only whitelisted repositories and owners are accepted.")
	}
	if len(nonEmpty(opts.RepoBlacklist)) > 0 {
		b.WriteString(" Some repositories and owners are blocked.")
	}
	if len(opts.Plugins) > 0 {
		b.WriteString(" Operator policies also apply.")
	}
	return b.String()
}

// Curation is the NIP-11 `curation` summary (G01-N4): "" when nothing
// beyond the GRASP rules and generic spam prevention applies, so the caller
// omits the key.
func Curation(opts Options) string {
	var parts []string
	if c := opts.Archive.Curation(); c != "" {
		// G05-3: the archive scope in words (ngit-grasp's sentences)
		parts = append(parts, c)
	}
	if n := len(nonEmpty(opts.RepoWhitelist)); n > 0 {
		parts = append(parts, fmt.Sprintf("only %d whitelisted repositories or owners are hosted", n))
	}
	if n := len(nonEmpty(opts.RepoBlacklist)); n > 0 {
		parts = append(parts, fmt.Sprintf("%d repositories or owners are blocked", n))
	}
	if n := len(nonEmpty(opts.EventBlacklist)); n > 0 {
		parts = append(parts, fmt.Sprintf("events from %d banned authors are refused", n))
	}
	if len(opts.Plugins) > 0 {
		if names := nonEmpty(opts.PluginNames); len(names) > 0 {
			parts = append(parts, "events also pass the operator's policies: "+strings.Join(names, ", "))
		} else {
			parts = append(parts, "events also pass the operator's policies")
		}
	}
	if len(parts) == 0 {
		return ""
	}
	s := strings.Join(parts, "; ") + "."
	return strings.ToUpper(s[:1]) + s[1:]
}

func nonEmpty(xs []string) []string {
	var out []string
	for _, x := range xs {
		if strings.TrimSpace(x) != "" {
			out = append(out, strings.TrimSpace(x))
		}
	}
	return out
}
