package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/coder/websocket"
	_ "github.com/lib/pq" // the driver grasp's store uses
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
)

// The PostgreSQL REQ flood of the second audit (../shared/reference/
// security-audit-2026-11b.md, F25): two grasp instances share one
// PostgreSQL database whose role may open -pg-conn-limit connections (97:
// what a stock max_connections = 100 leaves after its superuser slots).
// One address opens -pg-conns websockets on each instance, sends each
// -pg-reqs REQs for the large issues and never reads. Meanwhile a
// bystander on another address publishes an issue every -probe-every,
// alternately through each instance, and times the OK; at the end of the
// flood it reads the issues back through the second instance. The
// database's sessions are counted all along from the bench's own session.
// Before the fix each instance opened up to 80 connections and a REQ held
// one while its client did not read, so the two instances ran into the
// role's limit and the bystander's writes failed.
//
// The bench needs a PostgreSQL it may create a role and a database on
// (-pg-url, a superuser's URL; a throwaway cluster, see docs/benchmarks.md):
// grasp-bench never starts one itself.

// pgFloodOpts size the flood.
type pgFloodOpts struct {
	url       string
	connLimit int
	conns     int
	reqs      int
}

func (o *pgFloodOpts) register(fs *flag.FlagSet) {
	fs.StringVar(&o.url, "pg-url", "", "F25: postgres:// URL of a superuser on a PostgreSQL the bench may create a role and a database on (F25 runs only with it)")
	fs.IntVar(&o.connLimit, "pg-conn-limit", 97, "F25: connections the role both instances use may open (97: a stock max_connections = 100 less its 3 superuser slots)")
	fs.IntVar(&o.conns, "pg-conns", 90, "F25: non-reading websockets per instance (the audit's 90)")
	fs.IntVar(&o.reqs, "pg-reqs", 30, "F25: REQs per websocket, each for the -big-issues large issues (the audit's 30)")
}

// pgFloodFigures are what the flood measured beside attackResult's.
type pgFloodFigures struct {
	PeakConns    int    `json:"pg_peak_connections"`    // sessions on the database, at most, during the flood
	Allowed      int    `json:"pg_allowed_connections"` // the role's CONNECTION LIMIT
	RefusedLines int    `json:"pg_refused_log_lines"`   // instances' log lines naming a refused connection
	Bystander    string `json:"bystander"`              // the bystander's writes and its read through B
}

// pgFloodDB makes a role limited to connLimit connections and a database
// it owns, and returns the database's URL for that role, a session on it
// for the bench's own queries (as the superuser) and how to drop both.
func pgFloodDB(ctx context.Context, o pgFloodOpts) (roleURL string, mon *sql.DB, drop func(), err error) {
	u, err := url.Parse(o.url)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", nil, nil, fmt.Errorf("-pg-url: want a postgres:// URL")
	}
	admin, err := sql.Open("postgres", o.url)
	if err != nil {
		return "", nil, nil, err
	}
	defer admin.Close()
	name := fmt.Sprintf("grasp_bench_f25_%d", os.Getpid())
	for _, q := range []string{
		fmt.Sprintf(`CREATE ROLE %s LOGIN CONNECTION LIMIT %d`, name, o.connLimit),
		fmt.Sprintf(`CREATE DATABASE %s OWNER %s TEMPLATE template0`, name, name),
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			return "", nil, nil, fmt.Errorf("%s: %w (-pg-url must name a superuser)", q, err)
		}
	}
	dropAll := func() {
		a, err := sql.Open("postgres", o.url)
		if err != nil {
			return
		}
		defer a.Close()
		_, _ = a.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`)
		_, _ = a.Exec(`DROP ROLE IF EXISTS ` + name)
	}
	mu := *u
	mu.Path = "/" + name
	mon, err = sql.Open("postgres", mu.String())
	if err != nil {
		dropAll()
		return "", nil, nil, err
	}
	mon.SetMaxOpenConns(1)
	ru := mu
	ru.User = url.User(name)
	return ru.String(), mon, func() { mon.Close(); dropAll() }, nil
}

// runPGFlood is attack F25: it starts its own two instances on a fresh
// database (the other attacks share one badger data dir), seeds them,
// floods them and reports.
func runPGFlood(ctx context.Context, bins binaries, dir string, c *corpus, o abuseOpts) (attackResult, *pgFloodFigures, error) {
	r := attackResult{Finding: "F25", What: fmt.Sprintf("2 instances on one PostgreSQL role limited to %d connections; one address opens %d websockets × %d REQs for %d issues of %d KB on each, never read",
		o.pg.connLimit, o.pg.conns, o.pg.reqs, o.bigIssues, o.bigIssueKB)}
	fig := &pgFloodFigures{Allowed: o.pg.connLimit}
	roleURL, mon, drop, err := pgFloodDB(ctx, o.pg)
	if err != nil {
		return r, fig, err
	}
	defer drop()
	base := filepath.Join(dir, "f25")
	so := serverOpts{legacyConfig: o.legacyConfig, perAddressCaps: true, gitDir: filepath.Join(base, "git"),
		extraTOML: fmt.Sprintf("\n[store]\nbackend = \"postgres\"\npostgres_url = %q\n", roleURL)}
	var in []*proc
	defer func() {
		for _, p := range in {
			p.stop()
		}
	}()
	for _, name := range []string{"a", "b"} {
		d := filepath.Join(base, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return r, fig, err
		}
		p, _, err := startServer(ctx, serverGrasp, bins, d, so)
		if err != nil {
			return r, fig, fmt.Errorf("instance %s: %w", name, err)
		}
		in = append(in, p)
	}
	a, b := in[0], in[1]

	// the corpus's repositories (through A), then the large issues
	anns, states, _ := c.split(0, len(c.items))
	pushRepo := filepath.Join(base, "seed.git")
	if _, err := gitRun(ctx, "", "init", "-q", "--bare", pushRepo); err != nil {
		return r, fig, err
	}
	if _, err := seedRepos(ctx, a, true, c, anns, states, newDoneSet(len(c.items)), pushRepo); err != nil {
		return r, fig, fmt.Errorf("seed repositories: %w", err)
	}
	if err := publishBigIssues(ctx, a.wsURL(), c, o.bigIssues, o.bigIssueKB<<10); err != nil {
		return r, fig, fmt.Errorf("seed large issues: %w", err)
	}
	time.Sleep(o.settle)
	before, err := sampleProc(a.pid())
	if err != nil {
		return r, fig, err
	}
	r.RSSBeforeKB = before.rssKB

	actx, cancel := context.WithTimeout(ctx, o.hold+2*time.Minute)
	defer cancel()
	watchCtx, stopWatch := context.WithCancel(actx)
	peak := make(chan int, 1)
	go func() { peak <- watchSessions(watchCtx, mon) }()
	probeCtx, stopProbe := context.WithCancel(actx)
	type probeOut struct {
		lat    []time.Duration
		failed int
		first  string
	}
	probes := make(chan probeOut, 1)
	go func() {
		lat, failed, first := writeProbe(probeCtx, in, c.hdr.Repos[0], o)
		probes <- probeOut{lat, failed, first}
	}()

	start := time.Now()
	var conns []*websocket.Conn
	defer func() {
		for _, ws := range conns {
			ws.CloseNow()
		}
	}()
	refused := 0
	for _, p := range in {
		for range o.pg.conns {
			ws, err := dialNonReader(actx, p.wsURL(), o.attackerAddr)
			if err != nil {
				refused++
				continue
			}
			conns = append(conns, ws)
			for j := range o.pg.reqs {
				req := fmt.Sprintf(`["REQ","f%d",{"kinds":[%d],"limit":%d}]`, j, nip34.KindIssue, o.bigIssues)
				if err := ws.Write(actx, websocket.MessageText, []byte(req)); err != nil {
					break
				}
			}
		}
	}
	select {
	case <-time.After(o.hold):
	case <-actx.Done():
	}
	// still flooded: does a reader on another address get its issues?
	fig.Bystander = readProbe(actx, b, o)
	r.Duration = time.Since(start)
	stopProbe()
	pr := <-probes
	stopWatch()
	fig.PeakConns = <-peak
	r.Probes, r.ProbeFailed = len(pr.lat)+pr.failed, pr.failed
	if len(pr.lat) > 0 {
		slices.Sort(pr.lat)
		r.ProbeP50, r.ProbeMax = pr.lat[len(pr.lat)/2], pr.lat[len(pr.lat)-1]
	}
	fig.Bystander = fmt.Sprintf("writes through A and B: %d of %d OK", len(pr.lat), r.Probes) + firstFailure(pr.first) + "; " + fig.Bystander
	for _, p := range in {
		if aerr := p.alive(); aerr != nil {
			return r, fig, fmt.Errorf("an instance died: %v\n%s", aerr, tail(p.logPath, 20))
		}
	}
	if s, err := sampleProc(a.pid()); err == nil {
		r.PeakKB = s.hwmKB
	}
	held := len(conns)
	for _, ws := range conns {
		ws.CloseNow()
	}
	conns = nil
	time.Sleep(o.after)
	if s, err := sampleProc(a.pid()); err == nil {
		r.RSSAfterKB = s.rssKB
	}
	for _, p := range in {
		fig.RefusedLines += countLines(p.logPath, "too many connections", "too many clients")
	}
	r.Attacker = fmt.Sprintf("%d websockets held %s without reading (%d refused); at most %d sessions on the database (the role may open %d); %d log lines of refused connections",
		held, o.hold, refused, fig.PeakConns, fig.Allowed, fig.RefusedLines)
	return r, fig, nil
}

func firstFailure(s string) string {
	if s == "" {
		return ""
	}
	return fmt.Sprintf(" (first failure: %.160s)", s)
}

// watchSessions counts the database's sessions (its own aside) every 20
// ms until ctx ends and returns the most seen.
func watchSessions(ctx context.Context, mon *sql.DB) int {
	top := 0
	for ctx.Err() == nil {
		var n int
		if err := mon.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n); err == nil && n > top {
			top = n
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
	return top
}

// dialNonReader opens a websocket from local whose receive buffer is
// small, so that what the server sends it stays in the server.
func dialNonReader(ctx context.Context, wsURL, local string) (*websocket.Conn, error) {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 30 * time.Second,
		Control: func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
			})
			if err != nil {
				return err
			}
			return serr
		}}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(dctx, wsURL, &websocket.DialOptions{HTTPClient: &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}})
	return ws, err
}

// writeProbe is the bystander's writes: every probeEvery, from victimAddr,
// an issue on repo by a fresh key through the instances in turn, timed to
// its OK. A refusal or no OK within 30 s is a failure; the first is
// returned as the client saw it.
func writeProbe(ctx context.Context, in []*proc, repo string, o abuseOpts) (lat []time.Duration, failed int, first string) {
	conns := make([]*websocket.Conn, len(in))
	defer func() {
		for _, ws := range conns {
			if ws != nil {
				ws.CloseNow()
			}
		}
	}()
	fail := func(why string) {
		failed++
		if first == "" {
			first = why
		}
	}
	t := time.NewTicker(o.probeEvery)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		k := i % len(in)
		if conns[k] == nil {
			ws, _, err := dialFrom(ctx, in[k].wsURL(), o.victimAddr)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				fail("connect: " + err.Error())
				continue
			}
			conns[k] = ws
		}
		e := nostr.Event{Kind: nip34.KindIssue, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"a", repo}, {"subject", fmt.Sprintf("bystander %d", i)}},
			Content: "a bystander's issue during the flood"}
		if err := e.Sign(nostr.GeneratePrivateKey()); err != nil {
			fail(err.Error())
			continue
		}
		start := time.Now()
		err := publishWithin(ctx, conns[k], &e, 30*time.Second)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			fail(err.Error())
			conns[k].CloseNow()
			conns[k] = nil
			continue
		}
		lat = append(lat, time.Since(start))
	}
}

// publishWithin sends e and waits at most within for its OK true.
func publishWithin(ctx context.Context, ws *websocket.Conn, e *nostr.Event, within time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	return publishOne(wctx, ws, e)
}

// readProbe is the bystander's read through p: a REQ for the latest issues
// from victimAddr, answered with events and EOSE, or not.
func readProbe(ctx context.Context, p *proc, o abuseOpts) string {
	ws, _, err := dialFrom(ctx, p.wsURL(), o.victimAddr)
	if err != nil {
		return "read through B: connect: " + err.Error()
	}
	defer ws.CloseNow()
	start := time.Now()
	req := fmt.Sprintf(`["REQ","by",{"kinds":[%d],"limit":10}]`, nip34.KindIssue)
	if err := ws.Write(ctx, websocket.MessageText, []byte(req)); err != nil {
		return "read through B: " + err.Error()
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	n := 0
	for {
		_, msg, err := ws.Read(rctx)
		if err != nil {
			return fmt.Sprintf("read through B: %d events, then %v", n, err)
		}
		var env []json.RawMessage
		if json.Unmarshal(msg, &env) != nil || len(env) < 2 {
			continue
		}
		switch string(env[0]) {
		case `"EVENT"`:
			n++
		case `"EOSE"`:
			return fmt.Sprintf("read through B: %d events and EOSE in %.0f ms", n, ms(time.Since(start)))
		case `"CLOSED"`:
			return fmt.Sprintf("read through B: %d events, then %.160s", n, msg)
		}
	}
}

// countLines counts the lines of the file at path holding any of subs.
func countLines(path string, subs ...string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n := 0
	for _, l := range strings.Split(string(data), "\n") {
		for _, s := range subs {
			if strings.Contains(l, s) {
				n++
				break
			}
		}
	}
	return n
}
