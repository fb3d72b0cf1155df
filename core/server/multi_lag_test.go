package server_test

import (
	"bytes"
	"net"
	neturl "net/url"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/internal/pgtest"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// Two instances of one deployment behind a load balancer answer as one
// server: what a client was answered OK true through A decides what it is
// answered through B next, however late B's notifications are.

// G01-G2 across instances: ngit publishes the state, then pushes at once;
// behind a load balancer the push may reach B while B has not yet heard of
// the state A holds in purgatory. The push goes through anyway: B catches
// up with what was committed before it decides (store.CaughtUp). B's
// notifications are held back here for as long as the push runs, so B
// cannot learn of the hold by luck. (Before, B refused the push at once:
// "no state event"; the CI hang of TestMulti_PushesThroughAAndBSerialise
// was this refusal under load, waited on for 5 minutes.)
func TestMulti_G01G2_PushThroughBAuthorisedByStateJustHeldThroughA(t *testing.T) {
	url := pgtest.DB(t)
	px := newPGProxy(t, url)
	n := 0
	in := newInstancesOn(t, url, 2, func(c *config.Config) {
		if n == 1 {
			c.Store.PostgresURL = px.url
		}
		n++
	})
	a, b := in[0], in[1]
	k := newKey(t)
	w := newWork(t)
	a.release(k, "repo", w, w.commit("one"))
	testwait.For(t, "B to listen for the other instances' changes", px.listening)

	px.hold()
	tip := w.commit("two")
	a.clk.Advance(2 * time.Second) // a later state than the released one
	st := a.state(k, "repo", map[string]string{"refs/heads/main": tip}, "refs/heads/main")
	a.dial().mustAccept(st, purg)
	push := w.pushing(b.cloneURL(k, "repo"), "main:refs/heads/main")
	if ended, err := push.waitFor(t, "B's push to ask to catch up with A, or to end", px.marked); ended {
		t.Fatalf("the push through B ended before B caught up with A's hold (B did not wait for what A answered OK true to): %v", err)
	}
	px.release()
	push.mustSucceed(t, "the push through B right after the state's OK true through A")
	if got := lsRemote(t, a.cloneURL(k, "repo"))["refs/heads/main"]; got != tip {
		t.Fatalf("main is %s after the push through B, want %s", got, tip)
	}
	ca, cb := a.dial(), b.dial()
	a.eventually("the released state to be served through A", 0, func() bool { return ca.served(st.ID) })
	b.eventually("the released state to be served through B", 0, func() bool { return cb.served(st.ID) })
}

// An event accepted through A is served through B, by REQ and live,
// whatever B's own clock says of its created_at: the created_at bounds
// (relay.created_at_upper_limit, nip34.MaxFutureSkew) are the accepting
// instance's decision, made once; no instance hides a stored event at
// read time by its clock. Here A's clock is 10 minutes ahead of B's
// (within the 15-minute bound A applies).
func TestMulti_EventFromAheadOfBsClockServedAndDeliveredByB(t *testing.T) {
	in := newInstances(t, 2, nil)
	a, b := in[0], in[1]
	k := newKey(t)
	w := newWork(t)
	a.release(k, "repo", w, w.commit("one"))
	live := b.dial()
	live.send("REQ", "live", nostr.Filter{Kinds: []int{1621}})
	live.next(func(m []jsonMsg) bool { return label(m) == "EOSE" })

	a.clk.Advance(10 * time.Minute)
	issue := a.sign(k, 1621, nostr.Tags{{"a", "30617:" + k.PK + ":repo"}, {"subject", "ahead"}}, "signed ahead of B's clock")
	a.dial().mustAccept(issue, "")
	m := live.next(func(m []jsonMsg) bool { return label(m) == "EVENT" })
	var got nostr.Event
	unmarshal(m[2], &got)
	if got.ID != issue.ID {
		t.Fatalf("B's subscriber got %s, want the issue signed ahead through A", got.ID)
	}
	if !b.dial().served(issue.ID) {
		t.Fatal("B does not serve an event A accepted with a created_at ahead of B's clock")
	}
}

// pgProxy stands between one instance and PostgreSQL and can hold back
// what the server sends on that instance's LISTEN connection: the instance
// then hears of no other instance's change (as when its notifications lag
// behind, under load or while its LISTEN connection is re-established)
// while its queries go on.
type pgProxy struct {
	t   *testing.T
	url string // the instance's postgres:// URL through the proxy

	mu       sync.Mutex
	gate     chan struct{} // closed: what the server sends goes through
	listens  int           // connections that sent LISTEN
	notifies int           // pg_notify calls from the others since hold
}

func newPGProxy(t *testing.T, url string) *pgProxy {
	t.Helper()
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	target := u.Host
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u.Host = ln.Addr().String()
	p := &pgProxy{t: t, url: u.String(), gate: make(chan struct{})}
	close(p.gate)
	var conns sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		p.release()
		conns.Wait()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			conns.Add(1)
			go func() {
				defer conns.Done()
				p.serve(c, s)
			}()
		}
	}()
	return p
}

// serve copies both ways; on a LISTEN connection what the server sends
// waits for the gate.
func (p *pgProxy) serve(c, s net.Conn) {
	var listener sync.Once
	isListener := make(chan struct{})
	down := make(chan struct{})
	go func() {
		defer close(down)
		buf := make([]byte, 32<<10)
		for {
			n, err := s.Read(buf)
			if n > 0 {
				select {
				case <-isListener:
					p.mu.Lock()
					gate := p.gate
					p.mu.Unlock()
					<-gate
				default:
				}
				if _, werr := c.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		c.Close()
		s.Close()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			msg := buf[:n]
			switch {
			case bytes.Contains(msg, []byte("LISTEN ")):
				listener.Do(func() {
					p.mu.Lock()
					p.listens++
					p.mu.Unlock()
					close(isListener)
				})
			case bytes.Contains(msg, []byte("pg_notify(")):
				p.mu.Lock()
				p.notifies++
				p.mu.Unlock()
			}
			if _, werr := s.Write(msg); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	s.Close()
	c.Close()
	<-down
}

func (p *pgProxy) listening() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.listens > 0
}

// hold stops what the server sends on LISTEN connections.
func (p *pgProxy) hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gate = make(chan struct{})
	p.notifies = 0
}

// marked reports whether the instance notified (a CaughtUp marker) since
// hold.
func (p *pgProxy) marked() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.notifies > 0
}

// release lets what was held go through.
func (p *pgProxy) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.gate:
	default:
		close(p.gate)
	}
}
