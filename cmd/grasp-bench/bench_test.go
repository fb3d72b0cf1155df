package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/internal/pgtest"
)

// TestTableEndToEnd runs the whole table on a tiny corpus: both servers are
// built from this tree and started as processes, every scenario runs, and
// the output must carry a positive figure for every metric of both servers
// and their ratio. It checks the tool, not the speed of anything.
func TestTableEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs two servers")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is required")
	}
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "out.json")
	var stdout, stderr bytes.Buffer
	code := run([]string{"table", "-events", "300", "-rounds", "2", "-corpus-dir", dir,
		"-conns", "2", "-window", "8", "-queries", "5", "-neg-runs", "1",
		"-subs", "20", "-sub-conns", "4", "-fanout-events", "10",
		"-clone-commits", "30", "-clones", "1", "-settle", "0s", "-json", jsonPath}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	var res tableResult
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatalf("JSON output: %v", err)
	}
	if len(res.Rounds) != 2 {
		t.Fatalf("%d rounds in the output, want 2", len(res.Rounds))
	}
	if res.Corpus.Events != 300 || res.Corpus.Repositories < 2 || res.Corpus.AvgEventBytes < 500 {
		t.Errorf("corpus summary %+v: want 300 events, some repositories, events of realistic size", res.Corpus)
	}
	want := []string{"ingest_rate", "ingest_cpu", "write_per_event", "rss_peak", "query_#a_p50", "neg_99", "neg_insync", "fanout_p50", "clone_ratio"}
	for _, r := range res.Rounds {
		for _, name := range []string{serverGrasp, serverBaseline} {
			s := r.Servers[name]
			if s == nil {
				t.Fatalf("round %d has no %s run", r.Round, name)
			}
			for _, k := range want {
				if _, ok := s.get(k); !ok {
					t.Errorf("round %d, %s: no %s", r.Round, name, k)
				}
			}
			for _, m := range s.Metrics {
				if !(m.Value > 0) || math.IsInf(m.Value, 0) {
					t.Errorf("round %d, %s: %s = %v, want a positive number", r.Round, name, m.Key, m.Value)
				}
			}
		}
		for _, m := range r.Servers[serverGrasp].Metrics {
			b, _ := r.Servers[serverBaseline].get(m.Key)
			got, ok := r.Ratios[m.Key]
			if !ok || math.Abs(got-m.Value/b) > 1e-9*math.Abs(got) {
				t.Errorf("round %d: ratio of %s = %v (present %v), want %v ÷ %v", r.Round, m.Key, got, ok, m.Value, b)
			}
		}
	}
	// every activity event stored at once: repositories existed before
	// their activity, so nothing waited in purgatory and nothing was refused
	var ing ingestResult
	raw, _ := json.Marshal(res.Rounds[0].Servers[serverGrasp].Detail["ingest"])
	_ = json.Unmarshal(raw, &ing)
	if ing.Accepted != ing.Events || ing.Events < 250 {
		t.Errorf("grasp ingest %+v: want every one of the ~297 activity events accepted and stored", ing)
	}
	out := stdout.String()
	for _, s := range []string{"| scenario", "ratio grasp ÷ baseline", "ingest to durable OK", "NIP-77", "git clone", " / "} {
		if !strings.Contains(out, s) {
			t.Errorf("table output lacks %q:\n%s", s, out)
		}
	}
}

// TestScaleEndToEnd fills both servers point by point on a tiny corpus and
// checks every point carries positive figures for each.
func TestScaleEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs two servers")
	}
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "out.json")
	var stdout, stderr bytes.Buffer
	code := run([]string{"scale", "-points", "150,300", "-libsecp=false", "-corpus-dir", dir, "-postgres-url", pgtest.DB(t),
		"-conns", "2", "-window", "8", "-queries", "3", "-neg-runs", "1", "-json", jsonPath, "-profile", filepath.Join(dir, "prof")}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	// -profile: the server's and the client's CPU profile of each point's
	// ingest, and the server's of its query and NIP-77 phases (issue 27
	// part 3), for every server.
	for _, name := range []string{serverGrasp, serverPostgres, serverBaseline} {
		for _, f := range []string{"ingest-%s-%d.pprof", "ingest-client-%s-%d.pprof", "queries-%s-%d.pprof", "nip77-%s-%d.pprof"} {
			path := filepath.Join(dir, "prof", fmt.Sprintf(f, name, 300))
			if st, err := os.Stat(path); err != nil || st.Size() == 0 {
				t.Errorf("profile %s: %v (want a non-empty file)", path, err)
			}
		}
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var res scaleResult
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Points) != 2 || res.Points[0] < 150 || res.Points[1] != 300 {
		t.Fatalf("points %v, want about 150 and 300", res.Points)
	}
	for _, name := range []string{serverGrasp, serverPostgres, serverBaseline} {
		runs := res.Servers[name]
		if len(runs) != 2 {
			t.Fatalf("%s: %d points, want 2", name, len(runs))
		}
		for i, pr := range runs {
			if pr.Run == nil {
				t.Fatalf("%s at %d: skipped (%s)", name, pr.Events, pr.Skipped)
			}
			keys := []string{"ingest_rate", "ingest_cpu", "query_ids_p50", "neg_99", "neg_insync", "rss_peak", "rss_anon_now"}
			if name != serverBaseline && i == len(runs)-1 {
				keys = append(keys, "rss_restart")
			}
			for _, k := range keys {
				if v, ok := pr.Run.get(k); !ok || !(v > 0) {
					t.Errorf("%s at %d: %s = %v (present %v), want a positive number", name, pr.Events, k, v, ok)
				}
			}
			// -profile: each phase's collector figures and profile shares
			// (a few hundred events may see no collection: present, not
			// positive), the heap goal always positive.
			for _, phase := range []string{"queries", "nip77"} {
				for _, k := range []string{"gc_cycles_", "gc_cpu_", "prof_gc_", "prof_compact_", "prof_cpu_"} {
					if v, ok := pr.Run.get(k + phase); !ok || v < 0 {
						t.Errorf("%s at %d: %s%s = %v (present %v), want a figure", name, pr.Events, k, phase, v, ok)
					}
				}
				if v, ok := pr.Run.get("heap_goal_" + phase); !ok || !(v > 0) {
					t.Errorf("%s at %d: heap_goal_%s = %v (present %v), want a positive number", name, pr.Events, phase, v, ok)
				}
			}
			// The client's own CPU over a few hundred events may be
			// under the clock tick /proc counts in.
			if v, ok := pr.Run.get("ingest_client_cpu"); !ok || v < 0 {
				t.Errorf("%s at %d: ingest_client_cpu = %v (present %v), want a figure", name, pr.Events, v, ok)
			}
		}
	}
	if !strings.Contains(stdout.String(), "| events stored") {
		t.Errorf("no scale table in the output:\n%s", stdout.String())
	}
	for _, row := range []string{"grasp:   GC cycles during queries, cycles", "grasp:   GC CPU share during NIP-77 runs", "share in badger compactions"} {
		if !strings.Contains(stdout.String(), row) {
			t.Errorf("no row %q in the scale table:\n%s", row, stdout.String())
		}
	}
	// Progress: every point's stages are logged as they end.
	for _, want := range []string{"grasp: ingested", "grasp: point 300 done in", "grasp-postgres: NIP-77 runs at 300 events took"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("no %q in the progress log:\n%s", want, stderr.String())
		}
	}
}

// A baseline that reconciles a capped subset (eventstore's MaxLimitNegentropy
// below the store's size, as a relay opened with MaxLimit 1000 has) must fail
// the run, not give a fast and wrong NIP-77 figure.
func TestScaleRefusesACappedBaseline(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs servers")
	}
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run([]string{"scale", "-points", "300", "-libsecp=false", "-corpus-dir", dir,
		"-conns", "2", "-window", "8", "-queries", "3", "-neg-runs", "1", "-baseline-neg-limit", "100"}, &stdout, &stderr)
	if code == 0 {
		t.Fatalf("a baseline capped at 100 of 300 events passed\nstdout:\n%s", stdout.String())
	}
	if !strings.Contains(stderr.String(), "baseline: at") || !strings.Contains(stderr.String(), "negentropy") {
		t.Errorf("the failure does not name the baseline's reconciliation:\n%s", stderr.String())
	}
}

// TestCorpusReproducible: the same size and seed give the same events (ids),
// every dependency points backwards, and the commit a state names is the
// object git computes for the body the benchmark pushes.
func TestCorpusReproducible(t *testing.T) {
	dir := t.TempDir()
	now := time.Unix(1_760_000_000, 0)
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	for _, p := range []string{a, b} {
		if err := generateFile(p, 400, 7, now); err != nil {
			t.Fatal(err)
		}
	}
	ca, err := loadCorpus(a)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := loadCorpus(b)
	if err != nil {
		t.Fatal(err)
	}
	states := 0
	for i := range ca.items {
		if ca.items[i].id != cb.items[i].id {
			t.Fatalf("event %d differs between two generations with one seed", i)
		}
		if d := int(ca.items[i].dep); d >= i {
			t.Fatalf("event %d depends on event %d, not an earlier one", i, d)
		}
		if k := ca.items[i].kind; k != nip34.KindAnnouncement && ca.items[i].dep < 0 {
			t.Fatalf("event %d (kind %d) depends on nothing; it must need its repository or thread", i, k)
		}
		if ca.items[i].kind == nip34.KindState {
			states++
		}
	}
	if states != len(ca.hdr.Repos) || states < 2 {
		t.Fatalf("%d states for %d repositories", states, len(ca.hdr.Repos))
	}
	// every prefix the scale curve measures has all its repositories
	// released: no announcement without its state
	for n := 1; n <= len(ca.items); n += 7 {
		b := ca.boundary(n)
		anns, states, _ := ca.split(0, b)
		if b < n || len(anns) != len(states) {
			t.Fatalf("boundary(%d) = %d with %d announcements and %d states before it", n, b, len(anns), len(states))
		}
	}
	oid, body := seedCommit(strings.Repeat("ab", 32), "repo")
	cmd := exec.Command("git", "hash-object", "-t", "commit", "--stdin")
	cmd.Stdin = bytes.NewReader(body)
	got, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(got)) != oid {
		t.Fatalf("git hash-object gives %s, seedCommit %s", got, oid)
	}
}

func TestListeningLine(t *testing.T) {
	for line, want := range map[string][2]string{
		`{"@level":"info","@message":"grasp listening","addr":"127.0.0.1:40001"}`: {"serve", "127.0.0.1:40001"},
		"listening 127.0.0.1:40002":              {"serve", "127.0.0.1:40002"},
		"profiling listening 127.0.0.1:40003":    {"profile", "127.0.0.1:40003"},
		`{"@message":"store opened","addr":"x"}`: {"", ""},
	} {
		kind, addr := listeningLine(line)
		if kind != want[0] || addr != want[1] {
			t.Errorf("listeningLine(%s) = %q %q, want %q %q", line, kind, addr, want[0], want[1])
		}
	}
}

// TestAbuseEndToEnd runs every attack of the abuse command briefly against
// a grasp built from this tree, and checks that each was measured and that
// the attacker met the limits the audit asked for: NIP-77 sessions beyond
// the per-address cap refused with NEG-ERR, connections beyond it refused
// with 429, /prs/ pushes past the per-address bound refused (rate-limited:),
// two instances on PostgreSQL within their role's connection limit while
// the other client writes and reads through them,
// every view of a wide directory answered, pathological Markdown
// shown as plain text, and the bystander on another address served
// throughout.
func TestAbuseEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a server")
	}
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "out.json")
	var stdout, stderr bytes.Buffer
	code := run([]string{"abuse", "-events", "300", "-corpus-dir", dir, "-hold", "1s", "-settle", "0s", "-after", "0s",
		"-flood-mb", "2", "-slow-conns", "3", "-big-issues", "20", "-neg-conns", "3", "-conn-attempts", "150",
		"-md-kb", "16", "-md-views", "2", "-tree-entries", "3000", "-tree-views", "6",
		"-prs-rounds", "5", "-prs-round-mb", "1", "-prs-ip-mb", "4",
		"-pg-url", pgtest.DB(t), "-pg-conn-limit", "24", "-pg-conns", "6", "-pg-reqs", "3",
		"-json", jsonPath}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	var res abuseResult
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatalf("JSON output: %v", err)
	}
	if len(res.Attacks) != len(allAttacks) {
		t.Fatalf("%d attacks measured, want %d", len(res.Attacks), len(allAttacks))
	}
	for _, a := range res.Attacks {
		if a.PeakKB <= 0 || a.RSSBeforeKB <= 0 {
			t.Errorf("%s: no memory figures: %+v", a.Finding, a)
		}
		if a.ProbeFailed > 0 {
			t.Errorf("%s: the client on another address failed %d of %d times", a.Finding, a.ProbeFailed, a.Probes)
		}
		switch a.Finding {
		case "F07":
			if !strings.Contains(a.Attacker, "8 sessions answered, 4 refused") {
				t.Errorf("F07: attacker saw %q, want 8 sessions (the per-address cap) answered and the other 4 refused", a.Attacker)
			}
		case "F17":
			if !strings.Contains(a.Attacker, "100 connections held; 50 refused (429") {
				t.Errorf("F17: attacker saw %q, want 100 connections (the per-address cap) and 50 refused with 429", a.Attacker)
			}
		case "F20":
			if !strings.Contains(a.Attacker, "3 kept, 2 refused") || !strings.Contains(a.Attacker, "rate-limited: GRASP-06 /prs/ data pushed from your address may take 4 MiB") {
				t.Errorf("F20: attacker saw %q, want 3 rounds of 1 MiB kept within 4 MiB per address and 2 refused", a.Attacker)
			}
		case "F25":
			if a.PG == nil || a.PG.PeakConns == 0 || a.PG.PeakConns > 24 || a.PG.RefusedLines > 0 ||
				!strings.Contains(a.PG.Bystander, "EOSE") || a.Probes == 0 {
				t.Errorf("F25: %+v, %+v: want the instances' sessions counted and within the role's 24, none refused, the other client's writes (%d) all OK and its read answered", a, a.PG, a.Probes)
			}
		case "F29":
			if !strings.Contains(a.Attacker, "6 answered 200") {
				t.Errorf("F29: attacker saw %q, want each of the 6 views answered", a.Attacker)
			}
		case "F30":
			if !strings.Contains(a.Attacker, "2 answered (plain text)") {
				t.Errorf("F30: attacker saw %q, want both views answered with the file as plain text", a.Attacker)
			}
		}
	}
	if !strings.Contains(stdout.String(), "peak RSS") {
		t.Errorf("no report table in the output:\n%s", stdout.String())
	}
}
