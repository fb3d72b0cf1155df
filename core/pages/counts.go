package pages

import (
	"context"
	"strconv"
	"time"

	"github.com/grasp-dev/grasp/core/nip34"
)

// The Issues and PRs tabs of every repository page show how many are open
// (open or draft, as the lists show by default). Counting reads the lists
// from the store, so a count is kept for countsTTL: a code page does not
// query the store on every view, and the list pages themselves refresh
// the count they show.
const countsTTL = 30 * time.Second

// tabCounts are the counts shown on the tabs; "" is unknown, "500+" past
// what a list reads.
type tabCounts struct {
	Issues, PRs string
}

type countedAt struct {
	n  string
	at time.Time
}

func countKey(repo nip34.RepoRef, tab string) string { return "count|" + tab + "|" + repo.String() }

// counts returns the tabs' counts of repo, from the last countsTTL or
// read now.
func (p *Pages) counts(ctx context.Context, repo nip34.RepoRef, m repoMeta) tabCounts {
	return tabCounts{Issues: p.count(ctx, repo, m, "issues"), PRs: p.count(ctx, repo, m, "prs")}
}

func (p *Pages) count(ctx context.Context, repo nip34.RepoRef, m repoMeta, tab string) string {
	if v, ok := p.cache.get(countKey(repo, tab)); ok {
		if c := v.(countedAt); p.clk.Now().Sub(c.at) < countsTTL {
			return c.n
		}
	}
	items, complete, err := p.discussionList(ctx, m, tab)
	if err != nil {
		p.log.Debug("counting discussions failed", "repo", repo.URLPath(), "error", err)
		return ""
	}
	return p.remember(repo, tab, openOnly(items), complete)
}

// remember keeps the count of the open items of tab.
func (p *Pages) remember(repo nip34.RepoRef, tab string, open []discussion, complete bool) string {
	n := strconv.Itoa(len(open))
	if !complete {
		n += "+"
	}
	p.cache.put(countKey(repo, tab), countedAt{n: n, at: p.clk.Now()}, len(n)+32)
	return n
}

// openOnly keeps the open and draft items.
func openOnly(items []discussion) []discussion {
	var open []discussion
	for _, it := range items {
		if it.Status == "open" || it.Status == "draft" {
			open = append(open, it)
		}
	}
	return open
}
