package git

import (
	"strings"
	"testing"
)

func TestCheckRefName(t *testing.T) {
	for _, ok := range []string{"refs/heads/main", "refs/heads/feature/x-1", "refs/tags/v1.0", "refs/nostr/" + strings.Repeat("a", 64)} {
		if err := CheckRefName(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"main", "refs/heads/", "refs/heads/a..b", "refs/heads/.hidden", "refs/heads/x.lock", "refs/heads/a b",
		"refs/heads/a~1", "refs/heads/a^", "refs/heads/a:b", "refs/heads/a?", "refs/heads/a*", "refs/heads/a[", "refs/heads/a\\b",
		"refs/heads/a@{1}", "refs//heads", "refs/heads/a.", "refs/heads/\x7f"} {
		if err := CheckRefName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
