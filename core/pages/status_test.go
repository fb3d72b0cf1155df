package pages

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/githttp"
	"github.com/grasp-dev/grasp/core/hosting"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/purgatory"
	"github.com/grasp-dev/grasp/core/purgatory/hunt"
)

// TestPages_OnThisServer: the repository's "On this server" page shows
// what only this server knows (issue 26 part 5), read from the parts'
// snapshots: the signed state against the served refs with the refs that
// differ and the newer state waiting in purgatory, what waits for git data
// (an event a stranger may not read left out), what the hunter does and how
// its last fetch from each source went, the other servers of the
// announcement with their relay's sync health, the maintainer graph, and
// the refused pushes by kind only; the summary carries the one-line state,
// the waiting count and the last refusal.
func TestPages_OnThisServer(t *testing.T) {
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	owner, maint, invitee, reporter := newKey(t), newKey(t), newKey(t), newKey(t)
	other := "https://other.example/" + nip34.Npub(owner.PK) + "/proj.git"
	mirror := "https://mirror.example/proj.git"
	heldState := maint.sign(t, nip34.KindState, at.Unix(), nostr.Tags{{"d", "proj"}, {"refs/heads/main", strings.Repeat("e", 40)}}, "")
	heldPR := reporter.sign(t, nip34.KindPR, at.Unix(), nostr.Tags{{"c", strings.Repeat("c", 40)}}, "")
	secret := reporter.sign(t, nip34.KindPR, at.Unix(), nostr.Tags{{"c", strings.Repeat("d", 40)}, {"secret", "yes"}}, "")
	var asked []string
	facts := Facts{
		Served: func(_ context.Context, repo nip34.RepoRef, refs map[string]string) (hosting.Served, error) {
			asked = append(asked, refs["refs/heads/main"])
			return hosting.Served{
				Signed:  &hosting.SignedState{EventID: strings.Repeat("5", 64), Author: maint.PK, Signed: at, Refs: 1},
				Differs: []hosting.RefDiff{{Ref: "refs/heads/main", Signed: strings.Repeat("f", 40), Served: strings.Repeat("a", 40)}},
				Missing: 1,
				Held:    []hosting.SignedState{{EventID: heldState.ID, Author: maint.PK, Signed: at, HeldSince: at.Add(time.Minute), Refs: 1}},
			}, nil
		},
		Waiting: func(repo nip34.RepoRef, max int) ([]purgatory.Entry, int) {
			return []purgatory.Entry{
				{Event: heldState, Repo: repo, Needs: []string{strings.Repeat("e", 40)}, HeldAt: at.Add(time.Minute), Expires: at.Add(time.Hour)},
				{Event: heldPR, Repo: repo, Needs: []string{strings.Repeat("c", 40)}, HeldAt: at.Add(2 * time.Minute), Expires: at.Add(time.Hour)},
				{Event: secret, Repo: repo, HeldAt: at, Expires: at.Add(time.Hour)},
			}, 3
		},
		Hunt: func(context.Context, nip34.RepoRef) (hunt.RepoHunt, bool, bool) {
			return hunt.RepoHunt{Missing: 2, Attempts: 3, Next: at.Add(5 * time.Minute), Sources: []hunt.SourceResult{
				{URL: other, Result: "partial", At: at.Add(3 * time.Minute)},
				{URL: mirror, Result: "network", At: at.Add(4 * time.Minute), Skipped: true},
			}}, true, true
		},
		Relay: func(url string) (RelayHealth, bool) {
			if url != "wss://other.example" {
				return RelayHealth{}, false
			}
			return RelayHealth{Status: "backoff", Failures: 2, LastOK: at.Add(-time.Hour), LastFailure: at}, true
		},
		Refusals: func(nip34.RepoRef) []githttp.Refusal {
			return []githttp.Refusal{{At: at.Add(10 * time.Minute), Class: githttp.ClassMismatch, Refs: 2}, {At: at, Class: githttp.ClassNoState, Refs: 1}}
		},
	}
	r := newRig(t, "https://git.example.org", func(o *Options) {
		o.Facts = facts
		o.Readers = func(_ context.Context, evt *nostr.Event) func(string) bool {
			if evt.Tags.Find("secret") != nil {
				return func(string) bool { return false }
			}
			return nil
		}
	})
	r.announce(owner, "proj", 100, nostr.Tags{{"maintainers", maint.PK, invitee.PK}, {"clone", other}, {"clone", mirror}, {"relays", "wss://other.example"}})
	r.announce(maint, "proj", 100, nostr.Tags{{"maintainers", owner.PK}})
	work := workTree(t, map[string]string{"a": "a"}, "a")
	r.push(owner, "proj", work)
	base := git.RepoURLPath(nip34.Npub(owner.PK), "proj")

	status, body := r.get(base + "/status")
	if status != http.StatusOK {
		t.Fatalf("status page: %d", status)
	}
	mustContain(t, "status page", body,
		`st-closed">differs</span> 1 ref differs from the state signed by`, "on 2026-11-27 10:00, since that state",
		"<code>refs/heads/main</code>", "<code>ffffffffffff</code>", "<code>aaaaaaaaaaaa</code>",
		"1 object of the signed state is not here yet",
		"Newer states wait in purgatory", "state <code>"+heldState.ID[:12]+"</code>", "waiting since 2026-11-27 10:01",
		"2 events wait for this repository", "PR <code>"+heldPR.ID[:12]+"</code>", "2026-11-27 11:00", "1 object",
		"2 objects missing.", "3 rounds left objects missing; next round at 2026-11-27 10:05.",
		"<code>"+other+"</code></td><td>partial, 2026-11-27 10:03", "network, 2026-11-27 10:04 · <span class=\"badge st-closed\">host unreachable",
		`other.example <span class="badge">GRASP</span>`, `<span class="badge st-draft">backoff</span> last connected 2026-11-27 09:00, 2 failures since 2026-11-27 10:00`,
		"mirror.example</td>", "Confirmed maintainer (lists the owner's repository and is listed back): <code>"+nip34.Npub(maint.PK),
		"Invited (named by a maintainer, has not listed back yet; their states do not count): <code>"+nip34.Npub(invitee.PK),
		"2026-11-27 10:10: the pushed branches and tags were not those of the latest signed state (2 refs)",
		"2026-11-27 10:00: no state signed by a maintainer was known")
	mustNotContain(t, "status page", body, secret.ID[:12], "git.example.org</td>")
	if head := gitIn(t, work, "rev-parse", "HEAD"); len(asked) == 0 || asked[0] != head {
		t.Errorf("Served was given %v, want the served main %s", asked, head)
	}

	_, body = r.get(base)
	mustContain(t, "summary", body, "<h2>On this server</h2>", `st-closed">differs</span>`,
		"2 events wait in purgatory", "Last refused push: 2026-11-27 10:10, the pushed branches and tags were not those", `href="`+base+`/status"`)
}

// TestPages_OnThisServerWithoutParts: on an instance where the hunter and
// sync do not run, their sections say so instead of showing nothing.
func TestPages_OnThisServerWithoutParts(t *testing.T) {
	r := newRig(t, "https://git.example.org", func(o *Options) {
		o.Facts.Hunt = func(context.Context, nip34.RepoRef) (hunt.RepoHunt, bool, bool) { return hunt.RepoHunt{}, false, false }
		o.Facts.Served = func(context.Context, nip34.RepoRef, map[string]string) (hosting.Served, error) {
			return hosting.Served{Signed: &hosting.SignedState{Author: strings.Repeat("1", 64), Signed: time.Unix(0, 0)}}, nil
		}
	})
	owner := newKey(t)
	r.announce(owner, "proj", 100, nil)
	r.push(owner, "proj", workTree(t, map[string]string{"a": "a"}, "a"))
	_, body := r.get(git.RepoURLPath(nip34.Npub(owner.PK), "proj") + "/status")
	mustContain(t, "status page", body, `st-open">in sync</span>`, "The hunter does not run on this instance",
		"Purgatory is not readable from here.", "Refused pushes are not recorded here.", "The announcement lists no other server")
}
