package health

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
)

// A relay's change of health class is one info line (backed off, dead,
// healthy again); repeated failures in the same class add none.
func TestHealthChangesAreLoggedOnce(t *testing.T) {
	var buf bytes.Buffer
	tr, err := New(Options{Config: config.Health{DeadAfter: config.Duration(time.Hour)}}, env.Env{Log: hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Info})})
	if err != nil {
		t.Fatal(err)
	}
	const u = "wss://relay.example"
	t0 := time.Unix(1767323045, 0)
	tr.Succeeded(u, t0, time.Millisecond)
	tr.Failed(u, t0.Add(time.Minute))
	tr.Failed(u, t0.Add(2*time.Minute))
	tr.Failed(u, t0.Add(2*time.Hour))
	tr.Succeeded(u, t0.Add(3*time.Hour), time.Millisecond)
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if i := strings.Index(l, "[INFO]"); i >= 0 {
			lines = append(lines, strings.TrimSpace(l[i+len("[INFO]"):]))
		}
	}
	want := []string{
		"relay backoff: relay=" + u + " was=healthy failures=1",
		"relay dead: relay=" + u + " was=backoff failures=3",
		"relay healthy: relay=" + u + " was=dead failures=0",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("info lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}
