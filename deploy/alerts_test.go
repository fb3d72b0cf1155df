package deploy

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

const alertRules = "deploy/prometheus/alerts.yml"

// TestAlertRules checks the shipped rules with Prometheus's own tool, and
// runs their unit tests (each alert fires on the series it is meant for and
// stays quiet before its `for` has passed).
func TestAlertRules(t *testing.T) {
	promtool := needTool(t, "promtool", "prometheus")
	for _, args := range [][]string{
		{"check", "rules", filepath.Join(repoRoot, alertRules)},
		{"test", "rules", filepath.Join(repoRoot, "deploy/prometheus/alerts_test.yml")},
	} {
		if out, err := exec.Command(promtool, args...).CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// exprs returns the PromQL expressions of a rules file: `expr:` values,
// inline or as an indented block.
func exprs(rules string) []string {
	var out []string
	lines := strings.Split(rules, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		trimmed := strings.TrimSpace(l)
		if !strings.HasPrefix(trimmed, "expr:") {
			continue
		}
		v := strings.TrimSpace(strings.TrimPrefix(trimmed, "expr:"))
		if v != "|" && v != ">" {
			out = append(out, v)
			continue
		}
		indent := len(l) - len(strings.TrimLeft(l, " "))
		var block []string
		for i+1 < len(lines) {
			next := lines[i+1]
			if strings.TrimSpace(next) != "" && len(next)-len(strings.TrimLeft(next, " ")) <= indent {
				break
			}
			block = append(block, strings.TrimSpace(next))
			i++
		}
		out = append(out, strings.Join(block, " "))
	}
	return out
}

var (
	ourMetric = regexp.MustCompile(`\b(?:grasp|process)_[a-z0-9_]+\b`)
	selector  = regexp.MustCompile(`\b((?:grasp|process)_[a-z0-9_]+)\{([^}]*)\}`)
	matcher   = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
	series    = regexp.MustCompile(`(?m)^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s`)
	labelName = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="`)
)

// checkAlertMetrics fails for every grasp (or process) metric an alert uses
// that the running server does not export, and for every label an alert
// matches on that the metric does not carry: a renamed metric must not
// leave an alert silently watching nothing. node_* metrics come from
// node_exporter and are not checked here. metrics is the text of /metrics
// after the proxy flow, so counters by label exist.
func checkAlertMetrics(t *testing.T, metrics string) {
	t.Helper()
	labels := map[string]map[string]bool{} // metric -> label names seen
	for _, m := range series.FindAllStringSubmatch(metrics, -1) {
		if labels[m[1]] == nil {
			labels[m[1]] = map[string]bool{}
		}
		for _, l := range labelName.FindAllStringSubmatch(m[2], -1) {
			labels[m[1]][l[1]] = true
		}
	}
	var missing []string
	for _, e := range exprs(readShipped(t, alertRules)) {
		for _, name := range ourMetric.FindAllString(e, -1) {
			if labels[name] == nil {
				missing = append(missing, name+" (not exported)")
			}
		}
		for _, s := range selector.FindAllStringSubmatch(e, -1) {
			for _, m := range matcher.FindAllStringSubmatch(s[2], -1) {
				if l := m[1]; l != "job" && l != "instance" && labels[s[1]] != nil && !labels[s[1]][l] {
					missing = append(missing, s[1]+" has no label "+l)
				}
			}
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		t.Errorf("%s uses what grasp does not export:\n%s", alertRules, strings.Join(missing, "\n"))
	}
}

func TestExprsReadsInlineAndBlockExpressions(t *testing.T) {
	got := exprs("      - alert: A\n        expr: up == 0\n        for: 5m\n      - alert: B\n        expr: |\n          a\n            > b\n        labels:\n")
	if len(got) != 2 || got[0] != "up == 0" || got[1] != "a > b" {
		t.Fatalf("exprs = %q", got)
	}
}
