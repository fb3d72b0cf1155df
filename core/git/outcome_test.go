package git

import (
	"context"
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/outcome"
)

// The store's refusals of a stranger's input travel as typed outcomes
// (issue 28 part 1): a caller asks for the kind with outcome.Of, and the
// text, prefix included, is written by outcome alone.
func TestStoreRefusalsAreTypedOutcomes(t *testing.T) {
	ts := newTestStore(t)
	owner, _ := ts.newRepo("typed")
	repo := ref(owner, "typed")
	ctx := context.Background()
	_, pathErr := ts.repos.Path(nip34.RepoRef{Pubkey: "xyz", Identifier: "typed"})
	_, readErr := ts.repos.Read(ctx, repo, ReadLimits{}, nil, "push")
	_, fetchErr := ts.repos.Fetch(ctx, repo, FetchSpec{URL: "https://example.com/x.git", OIDs: []string{"HEAD~1"}})
	_, _, parseErr := ParseRepoPath("/npub1x/y")
	_, quarantineErr := QuarantineDir(t.TempDir(), "../x")
	for name, c := range map[string]struct {
		err  error
		kind outcome.Kind
	}{
		"ref name":        {CheckRefName("refs/heads/a..b"), outcome.Invalid},
		"owner":           {pathErr, outcome.Invalid},
		"read command":    {readErr, outcome.Invalid},
		"object id":       {fetchErr, outcome.Invalid},
		"HEAD":            {ts.repos.SetHead(ctx, repo, "refs/tags/v1"), outcome.Invalid},
		"set ref":         {ts.repos.SetRef(ctx, repo, "refs/heads/main", "nope", ""), outcome.Invalid},
		"repository path": {parseErr, outcome.Invalid},
		"quarantine":      {quarantineErr, outcome.Error},
	} {
		r, ok := outcome.Of(c.err)
		if !ok || r.Kind != c.kind || !strings.HasPrefix(c.err.Error(), c.kind.Prefix()+": ") || strings.HasPrefix(r.Msg, c.kind.Prefix()) {
			t.Errorf("%s: %v is %+v (typed %v), want kind %v with the prefix written once", name, c.err, r, ok, c.kind)
		}
	}
}
