package hosting

import (
	"testing"

	"github.com/grasp-dev/grasp/internal/testwait"
)

// TestAtRestWaitsForReleasesUnderWay: a backup's snapshot is taken only
// when no release is between taking an event out of purgatory and storing
// it; a release started inside another (nested) counts without waiting, and
// none starts while the snapshot is taken.
func TestAtRestWaitsForReleasesUnderWay(t *testing.T) {
	h := &Hosting{}
	ran := false
	h.AtRest(func() { ran = true })
	if !ran {
		t.Fatal("AtRest with nothing under way did not call fn")
	}

	h.beginMove()
	h.beginMove() // nested: must not block
	snapped := make(chan struct{})
	go h.AtRest(func() { close(snapped) })
	// AtRest parks on the condition once it has seen the moves.
	testwait.For(t, "AtRest to wait", func() bool {
		h.movesMu.Lock()
		defer h.movesMu.Unlock()
		return h.movesIdle != nil
	})
	h.endMove()
	select {
	case <-snapped:
		t.Fatal("AtRest ran with a release still under way")
	default:
	}
	h.endMove()
	<-snapped

	// While fn runs, a release cannot begin.
	inFn, release := make(chan struct{}), make(chan struct{})
	go h.AtRest(func() { close(inFn); <-release })
	<-inFn
	began := make(chan struct{})
	go func() { h.beginMove(); close(began) }()
	select {
	case <-began:
		t.Fatal("a release began while the snapshot was taken")
	default:
	}
	close(release)
	<-began
	h.endMove()
}
