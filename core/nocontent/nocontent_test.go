package nocontent

import (
	"context"
	"testing"
)

// TestMarkIsInherited: a context derived from a marked one is marked too
// (a store's query goroutine runs on a child of the reader's context); an
// unmarked one is not.
func TestMarkIsInherited(t *testing.T) {
	if Asked(context.Background()) {
		t.Fatal("an unmarked context asks for no content")
	}
	child, cancel := context.WithCancel(With(context.Background()))
	defer cancel()
	if !Asked(child) {
		t.Fatal("a child of a marked context lost the mark")
	}
}
