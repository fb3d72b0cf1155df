package server_test

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/lib/pq"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/internal/pgtest"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// F25: each instance opened up to 80 PostgreSQL connections and a REQ held
// its connection while its client did not read, so one address with
// websockets that never read took more connections than the server
// allows two instances, and everyone's writes, reads and pushes failed.
// Here the server allows 24 connections to two instances: one address
// opens 15 websockets on each, asks each for 5 MB of issues (more than the
// kernel's socket buffers take) and never reads. Meanwhile a bystander
// (another address) publishes an issue and reads them all, and the owner
// pushes; the instances never hold more connections than their pools,
// which the server's limit divides between them. (On the main this fixes,
// the bystander's EVENT got "error: could not save the event".)
func TestAbuse_F25_PostgresCannotBePinned(t *testing.T) {
	// 24 connections for two instances: the derived pool is (24 - 4
	// left to tools) / 2 = 10 each.
	const allowed, perInstance, flood = 24, 10, 15
	dbURL, mon := limitedRole(t, pgtest.DB(t), allowed)
	in := newInstancesOn(t, dbURL, 2, func(c *config.Config) {
		// the clients of this test name their address as a proxy would
		c.Server.TrustedProxies = []string{"127.0.0.1"}
		// a client that does not read holds little of the relay's memory
		c.Relay.Limits.MaxPendingOutboundBytes = 64 << 10
	})
	a, b := in[0], in[1]
	owner := newKey(t)
	w := newWork(t)
	a.release(owner, "repo", w, w.commit("one"))
	repoTag := nostr.Tag{"a", "30617:" + owner.PK + ":repo"}
	cl := a.dialFrom("198.51.100.9")
	for i := range 25 {
		a.clk.Advance(time.Second)
		cl.mustAccept(a.sign(owner, 1621, nostr.Tags{repoTag, {"subject", fmt.Sprint("big ", i)}}, strings.Repeat("x", 200<<10)), "")
	}

	// The flood: websockets from one address that never read, each with a
	// REQ for every issue. Connections to the database are counted all
	// along, from the test's own session.
	peak := watchConnections(t, mon)
	start := time.Now()
	var before []float64
	for _, e := range in {
		before = append(before, e.metric("grasp_store_queries_total", "req"))
		for i := range flood {
			e.nonReader("203.0.113.7").send(fmt.Sprint("flood", i), nostr.Filter{Kinds: []int{1621}})
		}
	}
	for i, e := range in {
		e.eventually("the instance to run the flood's queries", 0, func() bool {
			return e.metric("grasp_store_queries_total", "req") >= before[i]+flood
		})
	}
	t.Logf("flood sent in %v", time.Since(start))

	// The bystander writes through A and reads through B.
	issue := a.sign(owner, 1621, nostr.Tags{repoTag, {"subject", "bystander"}}, "still works")
	a.dialFrom("198.51.100.9").mustAccept(issue, "")
	// (distinct ids: the bystander's issue may also reach B's new
	// subscription live, through the fan-out from A)
	ids := map[string]bool{}
	for _, e := range b.dialFrom("198.51.100.9").query(nostr.Filter{Kinds: []int{1621}}) {
		ids[e.ID] = true
	}
	if len(ids) != 26 || !ids[issue.ID] {
		t.Fatalf("the bystander's REQ through B got %d issues (its own: %v), want 26", len(ids), ids[issue.ID])
	}
	// The owner pushes through A.
	tip := w.commit("two")
	a.clk.Advance(2 * time.Second)
	cl.mustAccept(a.state(owner, "repo", map[string]string{"refs/heads/main": tip}, "refs/heads/main"), "")
	if out, err := w.push(a.cloneURL(owner, "repo"), "main:refs/heads/main"); err != nil {
		t.Fatalf("the owner's push during the flood: %v\n%s", err, out)
	}
	t.Logf("bystander done %v after the flood; connections to the database meanwhile: at most %d", time.Since(start), peak())
	if n := peak(); n > perInstance*2 {
		t.Fatalf("the instances held %d connections during the flood, more than the %d their pools allow", n, perInstance*2)
	}
	for _, e := range in {
		if m := e.metric("grasp_store_pg_connections", "max"); m+1 > perInstance {
			t.Errorf("an instance's pools add up to %v connections, more than its share %d of %d", m+1, perInstance, allowed) // +1: LISTEN
		}
	}
}

// limitedRole makes a role that may open n connections (a CONNECTION
// LIMIT binds no superuser, and the test cluster's own user is one) and
// owns the database dbURL names, and returns that database's URL for it
// and a session for the test's own queries (as the cluster's user).
func limitedRole(t *testing.T, dbURL string, n int) (string, *sql.DB) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	dbName := strings.TrimPrefix(u.Path, "/")
	role, super := dbName+"_limited", u.User.Username()
	db, err := sql.Open("postgres", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		fmt.Sprintf(`CREATE ROLE %s LOGIN CONNECTION LIMIT %d`, role, n),
		fmt.Sprintf(`ALTER DATABASE %s OWNER TO %s`, dbName, role),
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		// after the instances stopped (cleanups run last first)
		for _, q := range []string{
			fmt.Sprintf(`ALTER DATABASE %s OWNER TO %s`, dbName, super),
			fmt.Sprintf(`REASSIGN OWNED BY %s TO %s`, role, super),
			fmt.Sprintf(`DROP OWNED BY %s`, role),
			fmt.Sprintf(`DROP ROLE %s`, role),
		} {
			if _, err := db.Exec(q); err != nil {
				if pe, ok := err.(*pq.Error); ok {
					t.Errorf("%s: %v: %s", q, err, pe.Detail)
				} else {
					t.Errorf("%s: %v", q, err)
				}
			}
		}
		db.Close()
	})
	u.User = url.User(role)
	return u.String(), db
}

// dialFrom is dial for a client whose address a trusted proxy names.
func (e *testServer) dialFrom(addr string) *client {
	e.t.Helper()
	cl, code, body := e.dialHeader(http.Header{"X-Forwarded-For": {addr}})
	if cl == nil {
		e.t.Fatalf("websocket refused: %d %s", code, body)
	}
	return cl
}

// nonReader is a websocket from addr that never reads, with a small
// receive buffer: what the server sends it stays in the server.
type nonReader struct {
	t *testing.T
	c *websocket.Conn
}

func (e *testServer) nonReader(addr string) *nonReader {
	e.t.Helper()
	d := &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Limit(e.t))
	defer cancel()
	c, _, err := websocket.Dial(ctx, e.ws, &websocket.DialOptions{
		HTTPHeader: http.Header{"X-Forwarded-For": {addr}},
		HTTPClient: &http.Client{Transport: &http.Transport{DialContext: d.DialContext}},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.CloseNow() })
	return &nonReader{t: e.t, c: c}
}

func (n *nonReader) send(subid string, f nostr.Filter) {
	n.t.Helper()
	b := fmt.Appendf(nil, `["REQ",%q,%s]`, subid, f.String())
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Limit(n.t))
	defer cancel()
	if err := n.c.Write(ctx, websocket.MessageText, b); err != nil {
		n.t.Fatal(err)
	}
}

// watchConnections counts the sessions on db's database (the test's own
// aside) until the test ends; peak is the most seen so far.
func watchConnections(t *testing.T, db *sql.DB) (peak func() int) {
	t.Helper()
	var top atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			var n int64
			if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n); err == nil && n > top.Load() {
				top.Store(n)
			}
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return func() int { return int(top.Load()) }
}
