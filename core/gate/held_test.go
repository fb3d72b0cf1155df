package gate

import (
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// A client whose connection the relay stops reading because its own frames
// are still unanswered (max_unanswered, F05) is waiting on the server, not
// silent: however long the store takes, its pongs are read once the relay
// reads again, and it is not dropped as timed out meanwhile (issue 27).
func TestLimits_ClientWaitingOnItsUnansweredFramesIsNotTimedOut(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	e := newEnvWith(t, Options{Limits: config.Limits{
		PingInterval: config.Duration(30 * time.Second), ClientTimeout: config.Duration(60 * time.Second),
		MaxUnanswered: 1,
	}}, fake)
	entered, release := make(chan struct{}, 1), make(chan struct{})
	e.backend.refuse = func(*nostr.Event, policy.Meta) string {
		entered <- struct{}{}
		<-release
		return ""
	}
	tr := e.dialPumped()
	sk := nostr.GeneratePrivateKey()
	for i := range 2 {
		evt := signedEvent(t, sk, 1, "held", 1_700_000_000+int64(i))
		b, _ := evt.MarshalJSON()
		if err := tr.send([]byte(`["EVENT",` + string(b) + `]`)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-entered: // the first EVENT holds the only slot
	case <-testwait.After(t):
		t.Fatal("the first EVENT never reached the backend")
	}
	gc := e.gateConn(t)
	testwait.For(t, "the reader waiting for a slot for the second EVENT", gc.held.Load)
	if !fake.BlockUntil(1, testwait.Limit(t)) {
		t.Fatal("keepalive ticker never armed")
	}
	tr.pingedThrough(fake, 4, "the relay held its frames")
	close(release)
	for oks := 0; oks < 2; {
		select {
		case b := <-tr.frames:
			if len(b) > 5 && string(b[:5]) == `["OK"` {
				oks++
			}
		case <-tr.closed:
			t.Fatalf("connection closed before both OKs: %v", tr.err)
		case <-testwait.After(t):
			t.Fatalf("%d of 2 OKs", oks)
		}
	}
	if got := e.counter("grasp_gate_limit_rejections_total", "kind", "client_timeout"); got != 0 {
		t.Fatalf("%v client timeouts counted, want 0", got)
	}
}
