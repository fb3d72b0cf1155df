package relaysync

import (
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// panickyConns panics on the first Subscribe, as a buggy connection layer
// might; the actor must survive it.
type panickyConns struct {
	*fakeConns
	panicked bool
}

func (p *panickyConns) Subscribe(url, sub string, fs []nostr.Filter, m CatchUp) {
	if !p.panicked {
		p.panicked = true
		panic("connection layer bug")
	}
	p.fakeConns.Subscribe(url, sub, fs, m)
}

func TestManagerSurvivesAPanickingStep(t *testing.T) {
	pc := &panickyConns{fakeConns: &fakeConns{}}
	h := newHarness(t, func(o *Options) { o.Conns = pc })
	h.conns = pc.fakeConns
	h.observe(announcement(0, "wss://self.example", r1))
	h.m.Connected(r1) // its first Subscribe panics inside the actor
	h.snap()
	if !pc.panicked {
		t.Fatal("the fake never panicked")
	}
	// the actor still answers and still acts on new work
	h.observe(announcement(1, "wss://self.example", "wss://r2.example"))
	found := false
	for _, c := range h.conns.take() {
		if c.op == "connect" && c.url == "wss://r2.example" {
			found = true
		}
	}
	if !found {
		t.Fatal("manager stopped acting after a panic")
	}
}
