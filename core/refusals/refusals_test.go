package refusals

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/internal/testlog"
)

func newLog(opts Options) (*Log, *testlog.Buffer) {
	var buf testlog.Buffer
	return New(opts, env.Env{Log: hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Info})}), &buf
}

func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// A thousand refusals of one client in a minute are one line with the
// counts by reason, not a thousand.
func TestFloodOfOneClientIsOneLine(t *testing.T) {
	l, buf := newLog(Options{})
	for range 997 {
		l.Count("203.0.113.7", ConnectionsIP)
	}
	for range 3 {
		l.Count("203.0.113.7", EventRateLimited)
	}
	if buf.String() != "" {
		t.Fatalf("counting wrote before the minute ended: %q", buf.String())
	}
	l.Flush()
	got := lines(buf.Take())
	if len(got) != 1 {
		t.Fatalf("%d lines for one client's minute, want 1:\n%s", len(got), strings.Join(got, "\n"))
	}
	for _, want := range []string{"refused in the last minute:", "remote=203.0.113.7", "total=1000", "own_lines=0", "connections_ip=997", "event_rate_limited=3"} {
		if !strings.Contains(got[0], want) {
			t.Errorf("line lacks %q: %s", want, got[0])
		}
	}
	l.Flush()
	if s := buf.String(); s != "" {
		t.Fatalf("a quiet minute wrote %q; Flush did not forget", s)
	}
}

// Detail lets a client's first refusals of the minute have lines of their
// own and counts the rest; a minute whose refusals all had their own line
// adds no summary line.
func TestDetailBudgetPerClientPerMinute(t *testing.T) {
	l, buf := newLog(Options{Detailed: 2})
	for i := range 2 {
		if !l.Detail("198.51.100.1", AnnouncementRefused) {
			t.Fatalf("refusal %d of a new client got no line of its own", i)
		}
	}
	if !l.Detail("198.51.100.2", PushRefused) {
		t.Fatal("another client's budget was spent by the first")
	}
	for range 10 {
		if l.Detail("198.51.100.1", AnnouncementRefused) {
			t.Fatal("a line of its own past the client's budget")
		}
	}
	l.Flush()
	got := lines(buf.Take())
	if len(got) != 1 || !strings.Contains(got[0], "remote=198.51.100.1") || !strings.Contains(got[0], "total=12") ||
		!strings.Contains(got[0], "own_lines=2") || !strings.Contains(got[0], "announcement_refused=12") {
		t.Fatalf("want one summary line for the client past its budget, got:\n%s", strings.Join(got, "\n"))
	}
	if !l.Detail("198.51.100.1", AnnouncementRefused) {
		t.Fatal("the budget did not come back with the next minute")
	}
}

// The clients of a minute are bounded: past MaxClients, refusals are summed
// in one line, and Detail refuses them lines of their own.
func TestClientsPerMinuteBounded(t *testing.T) {
	l, buf := newLog(Options{MaxClients: 3})
	for i := range 50 {
		l.Count(fmt.Sprintf("192.0.2.%d", i), GitBusyIP)
	}
	if l.Detail("192.0.2.200", AnnouncementRefused) {
		t.Fatal("a client past the bound got a line of its own")
	}
	l.mu.Lock()
	held := len(l.clients)
	l.mu.Unlock()
	if held != 3 {
		t.Fatalf("%d clients held, want the bound 3", held)
	}
	l.Flush()
	got := lines(buf.Take())
	if len(got) != 4 {
		t.Fatalf("%d lines, want 3 clients and 1 overflow line:\n%s", len(got), strings.Join(got, "\n"))
	}
	last := got[3]
	for _, want := range []string{"clients beyond the per-minute list", "max_clients=3", "total=48", "git_busy_ip=47", "announcement_refused=1"} {
		if !strings.Contains(last, want) {
			t.Errorf("overflow line lacks %q: %s", want, last)
		}
	}
}

func TestNilLogCountsNothingAndDetailsAll(t *testing.T) {
	var l *Log
	l.Count("x", Connections)
	if !l.Detail("x", PushRefused) {
		t.Fatal("a nil Log suppressed a line")
	}
	l.Flush()
}
