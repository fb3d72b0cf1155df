package pages

import (
	"net/http"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
)

// TestPages_IssuesAndPRsWithStatus: the relay's issues, PRs and patch
// series of a repository with their NIP-34 status (1630-1633: the latest
// status by the author, a maintainer or a moderator), open ones by default,
// each linked to a web client by nevent (issue 16 part 1).
func TestPages_IssuesAndPRsWithStatus(t *testing.T) {
	r := newRig(t, "https://git.example.org", nil)
	owner, maint, reporter, stranger := newKey(t), newKey(t), newKey(t), newKey(t)
	r.announce(owner, "proj", 100, nostr.Tags{{"maintainers", maint.PK}})
	r.announce(maint, "proj", 100, nostr.Tags{{"maintainers", owner.PK}})
	r.push(owner, "proj", workTree(t, map[string]string{"a": "a"}, "a"))
	coord := nip34.RepoRef{Pubkey: owner.PK, Identifier: "proj"}.String()
	maintCoord := nip34.RepoRef{Pubkey: maint.PK, Identifier: "proj"}.String()
	issue := func(k key, at int64, subject, a string) *nostr.Event {
		e := k.sign(t, nip34.KindIssue, at, nostr.Tags{{"a", a}, {"p", owner.PK}, {"subject", subject}}, "body of "+subject)
		r.save(e)
		return e
	}
	status := func(k key, kind int, at int64, root *nostr.Event) {
		r.save(k.sign(t, kind, at, nostr.Tags{{"e", root.ID, "", "root"}, {"a", coord}}, ""))
	}
	open := issue(reporter, 200, "Crash on start", coord)
	closedByMaint := issue(reporter, 201, "Typo in docs", coord)
	status(maint, nip34.KindStatusClosed, 300, closedByMaint)
	strangerClosed := issue(reporter, 202, "Stranger cannot close me", maintCoord)
	status(stranger, nip34.KindStatusClosed, 300, strangerClosed)
	resolvedThenReopened := issue(reporter, 203, "Came back", coord)
	status(owner, nip34.KindStatusMerged, 300, resolvedThenReopened)
	status(reporter, nip34.KindStatusOpen, 301, resolvedThenReopened)
	issue(reporter, 204, "Other repository", nip34.RepoRef{Pubkey: stranger.PK, Identifier: "proj"}.String())

	pr := reporter.sign(t, nip34.KindPR, 210, nostr.Tags{{"a", coord}, {"subject", "Add feature"}, {"c", strings.Repeat("a", 40)}}, "")
	r.save(pr)
	status(reporter, nip34.KindStatusDraft, 211, pr)
	series := reporter.sign(t, nip34.KindPatch, 220, nostr.Tags{{"a", coord}, {"t", "root"}},
		"From abc Mon Sep 17 00:00:00 2001\nSubject: [PATCH 1/2] Fix the parser\n\n---\n")
	r.save(series)
	r.save(reporter.sign(t, nip34.KindPatch, 221, nostr.Tags{{"a", coord}, {"e", series.ID, "", "reply"}},
		"Subject: [PATCH 2/2] Second patch of the series\n"))
	merged := reporter.sign(t, nip34.KindPatch, 230, nostr.Tags{{"a", coord}, {"t", "root"}}, "Subject: [PATCH] Merged already\n")
	r.save(merged)
	status(maint, nip34.KindStatusMerged, 231, merged)

	base := git.RepoURLPath(nip34.Npub(owner.PK), "proj")
	_, body := r.get(base + "/issues")
	mustContain(t, "open issues", body, "Crash on start", "Stranger cannot close me", "Came back", `st-open`)
	mustNotContain(t, "open issues", body, "Typo in docs", "Other repository")
	nevent, _ := nip19.EncodeEvent(open.ID, []string{r.svc.RelayURL()}, reporter.PK)
	mustContain(t, "open issues", body, "/issues/"+nevent+`"`, "https://gitworkshop.dev/naddr1")

	_, body = r.get(base + "/issues?state=all")
	mustContain(t, "all issues", body, "Typo in docs", `<span class="badge st-closed">closed</span>`)

	status_, body := r.get(base + "/prs")
	if status_ != http.StatusOK {
		t.Fatalf("prs: %d", status_)
	}
	mustContain(t, "open PRs", body, "Add feature", `st-draft">draft`, "Fix the parser", "/prs/nevent1")
	mustNotContain(t, "open PRs", body, "Second patch of the series", "Merged already")
	_, body = r.get(base + "/prs?state=all")
	mustContain(t, "all PRs", body, `st-merged">merged</span></td><td><a href=`, "Merged already")
}
