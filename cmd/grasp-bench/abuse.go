package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/coder/websocket"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/nbd-wtf/go-nostr"
)

// The abuse command replays the memory attacks of the November 2026
// security audit (../shared/reference/security-audit-2026-11.md, F05, F06,
// F07, F17), and the page attacks (F29, F30: abuse_pages.go), the
// GRASP-06 /prs/ flood (F20: abuse_prs.go) and the PostgreSQL REQ flood
// (F25, two instances: abuse_pg.go) of the second audit, against one
// grasp process and reports what an operator
// would watch: the server's resident memory before, at the peak of and after
// each attack, whether a well-behaved client on another address was still
// served meanwhile, and what the attacker was told. Each attack starts
// the server afresh on the same seeded data dir, so VmHWM (the kernel's
// peak RSS) belongs to that attack alone. Pass -grasp-bin to measure an
// older build the same way (the audit measured 96ef7d8).

var allAttacks = []string{"F05", "F06", "F07", "F17", "F20", "F25", "F29", "F30"}

type abuseOpts struct {
	commonOpts
	events  int
	attacks []string
	hold    time.Duration
	// F05: flood bytes and connections; F06: slow readers; F07: sessions;
	// F17: connections from one address.
	floodMB, floodConns      int
	slowConns, slowReqs      int
	bigIssues, bigIssueKB    int
	negConns, negPerConn     int
	connAttempts             int
	attackerAddr, victimAddr string
	probeEvery               time.Duration
	settle, after            time.Duration
	page                     pageOpts    // F29, F30: abuse_pages.go
	prs                      prsOpts     // F20: abuse_prs.go
	pg                       pgFloodOpts // F25: abuse_pg.go
}

type abuseResult struct {
	Machine  machine        `json:"machine"`
	Command  string         `json:"command"`
	Corpus   corpusSummary  `json:"corpus"`
	Settings map[string]any `json:"settings"`
	Attacks  []attackResult `json:"attacks"`
}

// attackResult is one attack's outcome.
type attackResult struct {
	Finding     string        `json:"finding"`
	What        string        `json:"what"`
	RSSBeforeKB int64         `json:"rss_before_kb"`
	PeakKB      int64         `json:"rss_peak_kb"` // VmHWM of the process, started afresh for this attack
	RSSAfterKB  int64         `json:"rss_after_kb"`
	ProbeP50    time.Duration `json:"probe_p50_ns"` // a well-behaved client's request on another address
	ProbeMax    time.Duration `json:"probe_max_ns"`
	ProbeFailed int           `json:"probe_failed"`
	Probes      int           `json:"probes"`
	Attacker    string        `json:"attacker"` // what the attacking client observed
	Duration    time.Duration `json:"duration_ns"`
	// PG is F25's: PostgreSQL sessions, and the bystander's writes (the
	// probe figures above) and read.
	PG *pgFloodFigures `json:"pg,omitempty"`
}

func abuseCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("grasp-bench abuse", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o abuseOpts
	o.register(fs)
	fs.IntVar(&o.events, "events", 12000, "events in the seeded store (F07 reconciles all of them; 12,000 is about the audit's 24 MB)")
	attacks := fs.String("attacks", strings.Join(allAttacks, ","), "comma-separated: "+strings.Join(allAttacks, ","))
	fs.DurationVar(&o.hold, "hold", 20*time.Second, "how long each attack keeps its connections open at most")
	fs.IntVar(&o.floodMB, "flood-mb", 44, "F05: MB of small EVENT frames sent without reading")
	fs.IntVar(&o.floodConns, "flood-conns", 8, "F05: connections the flood is spread over")
	fs.IntVar(&o.slowConns, "slow-conns", 20, "F06: connections that send REQs and never read")
	fs.IntVar(&o.slowReqs, "slow-reqs", 7, "F06: REQs per slow connection, each for -big-issues issues")
	fs.IntVar(&o.bigIssues, "big-issues", 500, "F06: large issues published first, which the slow REQs ask for")
	fs.IntVar(&o.bigIssueKB, "big-issue-kb", 8, "F06: size of each large issue")
	fs.IntVar(&o.negConns, "neg-conns", 16, "F07: connections opening NIP-77 sessions over the whole store")
	fs.IntVar(&o.negPerConn, "neg-per-conn", 4, "F07: sessions per connection")
	fs.IntVar(&o.connAttempts, "conn-attempts", 2000, "F17: websocket connections attempted from one address")
	fs.StringVar(&o.attackerAddr, "attacker-addr", "127.0.0.1", "local address the attacker connects from")
	fs.StringVar(&o.victimAddr, "victim-addr", "127.0.0.2", "local address the well-behaved client connects from")
	fs.DurationVar(&o.probeEvery, "probe-every", 250*time.Millisecond, "how often the well-behaved client asks during an attack")
	fs.DurationVar(&o.settle, "settle", 2*time.Second, "pause after each start before the attack (startup sweeps and sync)")
	fs.DurationVar(&o.after, "after", 5*time.Second, "pause after each attack before RSS is read again")
	o.page.register(fs)
	o.prs.register(fs)
	o.pg.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "attacks" })
	for _, a := range strings.Split(*attacks, ",") {
		a = strings.ToUpper(strings.TrimSpace(a))
		if a == "" {
			continue
		}
		if !slices.Contains(allAttacks, a) {
			return fmt.Errorf("unknown attack %q (have %s)", a, strings.Join(allAttacks, ", "))
		}
		if a == "F25" && o.pg.url == "" {
			if explicit {
				return fmt.Errorf("F25 needs a PostgreSQL: pass -pg-url (see docs/benchmarks.md)")
			}
			fmt.Fprintln(stderr, "F25 (the PostgreSQL REQ flood) left out: no -pg-url")
			continue
		}
		o.attacks = append(o.attacks, a)
	}
	if len(o.attacks) == 0 || o.events < 100 || o.floodConns < 1 || o.slowConns < 1 || o.negConns < 1 || o.hold <= 0 {
		return fmt.Errorf("need at least one attack, events >= 100, connections >= 1 and hold > 0")
	}
	res, err := runAbuse(ctx, o, "grasp-bench abuse "+strings.Join(args, " "), stderr)
	return emit(res, err, func(r *abuseResult) { writeAbuseReport(stdout, r) }, o.jsonPath)
}

func runAbuse(ctx context.Context, o abuseOpts, command string, stderr io.Writer) (*abuseResult, error) {
	logf := logger(stderr)
	raiseFileLimit()
	res := &abuseResult{Machine: describeMachine(), Command: command}
	tmp, cleanup, c, sum, err := o.prepare("grasp-abuse-", o.events, logf)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	res.Corpus = sum
	res.Settings = map[string]any{"hold": o.hold.String(), "flood_mb": o.floodMB, "flood_conns": o.floodConns,
		"slow_conns": o.slowConns, "slow_reqs": o.slowReqs, "big_issues": o.bigIssues, "big_issue_kb": o.bigIssueKB,
		"neg_conns": o.negConns, "neg_per_conn": o.negPerConn, "conn_attempts": o.connAttempts, "grasp_bin": o.build.graspBin,
		"md_kb": o.page.mdKB, "md_views": o.page.mdViews, "tree_entries": o.page.treeEntries, "tree_views": o.page.treeViews,
		"prs_rounds": o.prs.rounds, "prs_round_mb": o.prs.roundMB, "prs_ip_mb": o.prs.ipMB,
		"pg_conn_limit": o.pg.connLimit, "pg_conns": o.pg.conns, "pg_reqs": o.pg.reqs}
	o.build.noBaseline = true // the abuse command measures grasp alone
	bins, err := prepareBinaries(ctx, o.build, tmp, logf)
	if err != nil {
		return res, err
	}
	dir := filepath.Join(tmp, "server")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, err
	}
	// seed once: the corpus, then the large issues F06 asks for
	logf("seeding %d events", len(c.items))
	p, _, err := startServer(ctx, serverGrasp, bins, dir, serverOpts{legacyConfig: o.legacyConfig, perAddressCaps: true})
	if err != nil {
		return res, err
	}
	anns, states, activity := c.split(0, len(c.items))
	done := newDoneSet(len(c.items))
	pushRepo := filepath.Join(dir, "seed.git")
	if _, err := gitRun(ctx, "", "init", "-q", "--bare", pushRepo); err != nil {
		p.stop()
		return res, err
	}
	if _, err := seedRepos(ctx, p, true, c, anns, states, done, pushRepo); err != nil {
		p.stop()
		return res, fmt.Errorf("seed repositories: %w", err)
	}
	if _, err := ingest(ctx, p.wsURL(), c, activity, done, 4, 64); err != nil {
		p.stop()
		return res, fmt.Errorf("seed activity: %w", err)
	}
	if slices.Contains(o.attacks, "F06") {
		if err := publishBigIssues(ctx, p.wsURL(), c, o.bigIssues, o.bigIssueKB<<10); err != nil {
			p.stop()
			return res, fmt.Errorf("seed large issues: %w", err)
		}
	}
	if o.page.wanted(o.attacks) {
		if o.page.targets, err = seedPages(ctx, p, dir, o.page); err != nil {
			p.stop()
			return res, fmt.Errorf("seed page repositories: %w", err)
		}
	}
	p.stop()

	for _, a := range o.attacks {
		logf("attack %s", a)
		r, err := runAttack(ctx, a, bins, dir, c, o)
		res.Attacks = append(res.Attacks, r)
		if err != nil {
			return res, fmt.Errorf("%s: %w", a, err)
		}
	}
	res.Machine.LoadAfter = loadAvg()
	return res, nil
}

// runAttack starts the server afresh, lets it settle, runs one attack while
// a well-behaved client probes from another address, and samples memory.
func runAttack(ctx context.Context, name string, bins binaries, dir string, c *corpus, o abuseOpts) (attackResult, error) {
	if name == "F25" { // two instances on PostgreSQL, seeded afresh: abuse_pg.go
		r, fig, err := runPGFlood(ctx, bins, dir, c, o)
		r.PG = fig
		return r, err
	}
	r := attackResult{Finding: name}
	so := serverOpts{legacyConfig: o.legacyConfig, perAddressCaps: true}
	if name == "F20" {
		so.extraTOML = o.prs.serverTOML()
	}
	p, _, err := startServer(ctx, serverGrasp, bins, dir, so)
	if err != nil {
		return r, err
	}
	defer p.stop()
	time.Sleep(o.settle) // startup work (sweeps, sync) out of the way
	before, err := sampleProc(p.pid())
	if err != nil {
		return r, err
	}
	r.RSSBeforeKB = before.rssKB

	actx, cancel := context.WithTimeout(ctx, o.hold+2*time.Minute)
	defer cancel()
	probeCtx, stopProbe := context.WithCancel(actx)
	probes := make(chan []time.Duration, 1)
	failed := atomic.Int64{}
	go func() { probes <- probe(probeCtx, name, p, o, &failed) }()

	start := time.Now()
	switch name {
	case "F05":
		r.What = fmt.Sprintf("%d MB of small EVENT frames on %d connections, responses never read", o.floodMB, o.floodConns)
		r.Attacker, err = attackFlood(actx, p.wsURL(), o)
	case "F06":
		r.What = fmt.Sprintf("%d connections × %d REQs for %d issues of %d KB, never read", o.slowConns, o.slowReqs, o.bigIssues, o.bigIssueKB)
		r.Attacker, err = attackSlowReaders(actx, p.wsURL(), o)
	case "F07":
		r.What = fmt.Sprintf("%d connections × %d NIP-77 sessions over the whole store (%d events)", o.negConns, o.negPerConn, len(c.items))
		r.Attacker, err = attackNegentropy(actx, p.wsURL(), o)
	case "F17":
		r.What = fmt.Sprintf("%d websocket connections from one address, held open", o.connAttempts)
		r.Attacker, err = attackConnections(actx, p.wsURL(), o)
	case "F20":
		r.What = fmt.Sprintf("%d rounds of a PR event from a fresh key and a %d MiB push to its /prs/ path, from one address", o.prs.rounds, o.prs.roundMB)
		r.Attacker, err = attackPRs(actx, p, dir, o)
	case "F29":
		r.What = fmt.Sprintf("%d parallel views of a pushed directory of %d entries", o.page.treeViews, o.page.treeEntries)
		r.Attacker, err = attackBigTree(actx, p, o)
	case "F30":
		r.What = fmt.Sprintf("%d views of a %d KiB Markdown file of `>`, each client leaving after %s", o.page.mdViews, o.page.mdKB, o.page.mdLeave)
		r.Attacker, err = attackMarkdown(actx, p, o)
	}
	r.Duration = time.Since(start)
	stopProbe()
	lat := <-probes
	r.Probes, r.ProbeFailed = len(lat)+int(failed.Load()), int(failed.Load())
	if len(lat) > 0 {
		slices.Sort(lat)
		r.ProbeP50, r.ProbeMax = lat[len(lat)/2], lat[len(lat)-1]
	}
	if aerr := p.alive(); aerr != nil {
		return r, fmt.Errorf("the server died: %v\n%s", aerr, tail(p.logPath, 20))
	}
	peak, serr := sampleProc(p.pid())
	if serr == nil {
		r.PeakKB = peak.hwmKB
	}
	time.Sleep(o.after) // the attacker is gone: what memory is kept?
	if after, serr := sampleProc(p.pid()); serr == nil {
		r.RSSAfterKB = after.rssKB
	}
	return r, err
}

// dialFrom opens a websocket from the given local address.
func dialFrom(ctx context.Context, url, local string) (*websocket.Conn, *http.Response, error) {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 30 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext}
	hc := &http.Client{Transport: tr}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ws, resp, err := websocket.Dial(dctx, url, &websocket.DialOptions{HTTPClient: hc})
	if err == nil {
		ws.SetReadLimit(64 << 20)
	}
	return ws, resp, err
}

// probe is the well-behaved client: from its own address it fetches NIP-11
// and, for F07, opens its own NIP-77 session, every probeEvery, and
// returns each answer's latency; failures are counted.
func probe(ctx context.Context, attack string, p *proc, o abuseOpts, failed *atomic.Int64) []time.Duration {
	var lat []time.Duration
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(o.victimAddr)}}
	hc := &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}, Timeout: 30 * time.Second}
	t := time.NewTicker(o.probeEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return lat
		case <-t.C:
		}
		start := time.Now()
		var err error
		if attack == "F07" {
			err = negOnce(ctx, p.wsURL(), o.victimAddr)
		} else {
			err = nip11Once(ctx, hc, p.httpURL())
		}
		if ctx.Err() != nil {
			return lat
		}
		if err != nil {
			failed.Add(1)
			continue
		}
		lat = append(lat, time.Since(start))
	}
}

func nip11Once(ctx context.Context, hc *http.Client, url string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Accept", "application/nostr+json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("NIP-11: %s", resp.Status)
	}
	return nil
}

// negOpenAll is a NEG-OPEN message saying "I hold nothing" (negentropy v1:
// version 0x61, one range up to infinity in IdList mode with no ids), which
// makes the server list every id the filter matches.
const negOpenAll = "6100000200"

// negOnce opens one NIP-77 session over the whole store and waits for its
// first answer.
func negOnce(ctx context.Context, url, local string) error {
	ws, _, err := dialFrom(ctx, url, local)
	if err != nil {
		return err
	}
	defer ws.CloseNow()
	msg := fmt.Sprintf(`["NEG-OPEN","probe",{},%q]`, negOpenAll)
	if err := ws.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, data, err := ws.Read(rctx)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(string(data), `["NEG-MSG"`) {
		return fmt.Errorf("NEG-OPEN answered %.120s", data)
	}
	return nil
}

// attackFlood (F05) writes small signed EVENT frames as fast as the server
// takes them and never reads its answers.
func attackFlood(ctx context.Context, url string, o abuseOpts) (string, error) {
	sk := nostr.GeneratePrivateKey()
	frames := make([][]byte, 2000)
	for i := range frames {
		e := nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Content: fmt.Sprintf("flood %d %s", i, strings.Repeat("x", 120))}
		if err := e.Sign(sk); err != nil {
			return "", err
		}
		j, _ := e.MarshalJSON()
		frames[i] = []byte(`["EVENT",` + string(j) + `]`)
	}
	budget := int64(o.floodMB) << 20
	var sent, blocked atomic.Int64
	deadline := time.Now().Add(o.hold)
	var wg sync.WaitGroup
	for k := range o.floodConns {
		ws, _, err := dialFrom(ctx, url, o.attackerAddr)
		if err != nil {
			return "", err
		}
		defer ws.CloseNow()
		wg.Go(func() {
			for i := k; sent.Load() < budget && time.Now().Before(deadline); i++ {
				f := frames[i%len(frames)]
				wctx, cancel := context.WithTimeout(ctx, time.Until(deadline)+time.Millisecond)
				err := ws.Write(wctx, websocket.MessageText, f)
				cancel()
				if err != nil {
					blocked.Add(1)
					return
				}
				sent.Add(int64(len(f)))
			}
		})
	}
	wg.Wait()
	return fmt.Sprintf("sent %.1f MB; %d of %d connections stopped by backpressure or closed", float64(sent.Load())/(1<<20), blocked.Load(), o.floodConns), nil
}

// attackSlowReaders (F06) asks for many large events and never reads.
func attackSlowReaders(ctx context.Context, url string, o abuseOpts) (string, error) {
	var conns []*websocket.Conn
	defer func() {
		for _, ws := range conns {
			ws.CloseNow()
		}
	}()
	for k := range o.slowConns {
		ws, _, err := dialFrom(ctx, url, o.attackerAddr)
		if err != nil {
			return fmt.Sprintf("%d connections opened", k), nil
		}
		conns = append(conns, ws)
		for j := range o.slowReqs {
			req := fmt.Sprintf(`["REQ","s%d",{"kinds":[%d],"limit":%d}]`, j, nip34.KindIssue, o.bigIssues)
			if err := ws.Write(ctx, websocket.MessageText, []byte(req)); err != nil {
				return "", err
			}
		}
	}
	select {
	case <-time.After(o.hold):
	case <-ctx.Done():
	}
	return fmt.Sprintf("%d connections held %s without reading", len(conns), o.hold), nil
}

// attackNegentropy (F07) opens many NIP-77 sessions over the whole store
// and holds them.
func attackNegentropy(ctx context.Context, url string, o abuseOpts) (string, error) {
	var answered, refused atomic.Int64
	var wg sync.WaitGroup
	var conns []*websocket.Conn
	defer func() {
		for _, ws := range conns {
			ws.CloseNow()
		}
	}()
	for k := range o.negConns {
		ws, _, err := dialFrom(ctx, url, o.attackerAddr)
		if err != nil {
			break
		}
		conns = append(conns, ws)
		for j := range o.negPerConn {
			msg := fmt.Sprintf(`["NEG-OPEN","n%d-%d",{},%q]`, k, j, negOpenAll)
			if err := ws.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
				return "", err
			}
		}
		wg.Go(func() {
			for {
				_, data, err := ws.Read(ctx)
				if err != nil {
					return
				}
				switch {
				case strings.HasPrefix(string(data), `["NEG-MSG"`):
					answered.Add(1)
				case strings.HasPrefix(string(data), `["NEG-ERR"`):
					refused.Add(1)
				}
			}
		})
	}
	select {
	case <-time.After(o.hold):
	case <-ctx.Done():
	}
	for _, ws := range conns {
		ws.CloseNow()
	}
	wg.Wait()
	return fmt.Sprintf("%d sessions answered, %d refused with NEG-ERR", answered.Load(), refused.Load()), nil
}

// attackConnections (F17) opens as many websockets as it can from one
// address and holds them.
func attackConnections(ctx context.Context, url string, o abuseOpts) (string, error) {
	var conns []*websocket.Conn
	defer func() {
		for _, ws := range conns {
			ws.CloseNow()
		}
	}()
	refused := map[string]int{}
	for range o.connAttempts {
		ws, resp, err := dialFrom(ctx, url, o.attackerAddr)
		if err != nil {
			status := "error"
			if resp != nil {
				status = resp.Status
			}
			refused[status]++
			continue
		}
		conns = append(conns, ws)
	}
	select {
	case <-time.After(o.hold):
	case <-ctx.Done():
	}
	keys := make([]string, 0, len(refused))
	for k := range refused {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d refused (%s)", refused[k], k))
	}
	return fmt.Sprintf("%d connections held; %s", len(conns), strings.Join(parts, ", ")), nil
}

// publishBigIssues publishes n issues of size bytes against the corpus's
// first repository, newest of the store, for F06 to ask for.
func publishBigIssues(ctx context.Context, url string, c *corpus, n, size int) error {
	if len(c.hdr.Repos) == 0 {
		return fmt.Errorf("the corpus has no repositories")
	}
	ws, err := dial(ctx, url)
	if err != nil {
		return err
	}
	defer ws.CloseNow()
	sk := nostr.GeneratePrivateKey()
	pad := make([]byte, size/2)
	for i := range n {
		_, _ = rand.Read(pad)
		e := nostr.Event{Kind: nip34.KindIssue, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"a", c.hdr.Repos[0]}, {"subject", fmt.Sprintf("large issue %d", i)}},
			Content: hex.EncodeToString(pad)}
		if err := e.Sign(sk); err != nil {
			return err
		}
		if err := publishOne(ctx, ws, &e); err != nil {
			return fmt.Errorf("issue %d: %w", i, err)
		}
	}
	return nil
}

// raiseFileLimit lifts this process's (and so its servers') open-file soft
// limit to the hard limit: F17 holds thousands of sockets.
func raiseFileLimit() {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) == nil && l.Cur < l.Max {
		l.Cur = l.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	}
}

func writeAbuseReport(w io.Writer, r *abuseResult) {
	fmt.Fprintf(w, "grasp under the audit's memory attacks (%s)\n", r.Command)
	fmt.Fprintf(w, "store: %d events, %.0f B average; %d × %s, load %s\n\n", r.Corpus.Events, r.Corpus.AvgEventBytes, r.Machine.CPUs, r.Machine.CPUModel, r.Machine.LoadBefore)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "finding\tRSS before\tpeak RSS\tRSS after\tother client p50 / max (failed)\tattacker saw")
	for _, a := range r.Attacks {
		fmt.Fprintf(tw, "%s\t%d MiB\t%d MiB\t%d MiB\t%.1f / %.1f ms (%d of %d)\t%s\n", a.Finding, a.RSSBeforeKB>>10, a.PeakKB>>10, a.RSSAfterKB>>10,
			ms(a.ProbeP50), ms(a.ProbeMax), a.ProbeFailed, a.Probes, a.Attacker)
	}
	tw.Flush()
	for _, a := range r.Attacks {
		fmt.Fprintf(w, "  %s: %s\n", a.Finding, a.What)
		if a.PG != nil {
			fmt.Fprintf(w, "  %s: the other client's %s\n", a.Finding, a.PG.Bystander)
		}
	}
}
