package git

import (
	"fmt"
	"strings"
	"testing"
)

// A push line names the refs moved, old→new in short ids, bounded.
func TestRefsMovedShortAndBounded(t *testing.T) {
	a, b := strings.Repeat("a", 40), "5d6e7f8"+strings.Repeat("0", 33)
	got := RefsMoved([]RefUpdate{
		{Ref: "refs/heads/main", Old: a, New: b},
		{Ref: "refs/tags/v1", Old: ZeroOID, New: a},
		{Ref: "refs/heads/gone", Old: b, New: ZeroOID},
	})
	want := "refs/heads/main aaaaaaaaaa→5d6e7f8000, refs/tags/v1 0000000000→aaaaaaaaaa, refs/heads/gone 5d6e7f8000→0000000000"
	if got != want {
		t.Fatalf("RefsMoved = %q\nwant       %q", got, want)
	}
	var many []RefUpdate
	for i := range 1000 {
		many = append(many, RefUpdate{Ref: fmt.Sprintf("refs/tags/t%d", i), Old: ZeroOID, New: a})
	}
	got = RefsMoved(many)
	if n := strings.Count(got, "→"); n != MaxLoggedRefs || !strings.HasSuffix(got, " (+990 more)") {
		t.Fatalf("a 1000-ref push lists %d refs: %q", n, got)
	}
	if got := RefsMoved([]RefUpdate{{Ref: "refs/heads/a b\n", Old: ZeroOID, New: a}}); strings.Contains(got, "\n") || !strings.Contains(got, `"refs/heads/a b\n"`) {
		t.Fatalf("a ref name with a space and a newline is not quoted: %q", got)
	}
}
