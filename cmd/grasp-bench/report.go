package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// metric is one figure of one server.
type metric struct {
	Key   string  `json:"key"`
	Label string  `json:"label"`
	Unit  string  `json:"unit"`
	Value float64 `json:"value"`
}

// serverRun is everything measured on one server in one round (or at one
// scale point).
type serverRun struct {
	Server  string         `json:"server"`
	Metrics []metric       `json:"metrics"`
	Detail  map[string]any `json:"detail,omitempty"`
}

func (s *serverRun) add(key, label, unit string, v float64) {
	s.Metrics = append(s.Metrics, metric{key, label, unit, v})
}

func (s *serverRun) get(key string) (float64, bool) {
	for _, m := range s.Metrics {
		if m.Key == key {
			return m.Value, true
		}
	}
	return 0, false
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// fmtNum prints a figure with a precision that suits its size.
func fmtNum(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "—"
	case a >= 1000:
		return commas(int64(math.Round(v)))
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func commas(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// roundResult pairs the servers' runs of one round.
type roundResult struct {
	Round   int                   `json:"round"`
	Order   []string              `json:"order"` // which server ran first
	Servers map[string]*serverRun `json:"servers"`
	Ratios  map[string]float64    `json:"ratios"` // grasp ÷ baseline, per metric key
}

// computeRatios fills r.Ratios for every metric both servers have.
func (r *roundResult) computeRatios() {
	r.Ratios = map[string]float64{}
	ours, base := r.Servers[serverGrasp], r.Servers[serverBaseline]
	if ours == nil || base == nil {
		return
	}
	for _, m := range ours.Metrics {
		if b, ok := base.get(m.Key); ok && b != 0 {
			r.Ratios[m.Key] = m.Value / b
		}
	}
}

// writeTable prints one row per metric: grasp's value per round, the
// baseline's, and the ratio grasp ÷ baseline per round.
func writeTable(w io.Writer, rounds []roundResult) {
	if len(rounds) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintf(tw, "| scenario\t| %s\t| %s\t| ratio %s ÷ %s\t|\n", serverGrasp, serverBaseline, serverGrasp, serverBaseline)
	fmt.Fprintf(tw, "|---\t|--:\t|--:\t|--:\t|\n")
	var keys []metric
	seen := map[string]bool{}
	for _, r := range rounds {
		for _, name := range []string{serverGrasp, serverBaseline} {
			if s := r.Servers[name]; s != nil {
				for _, m := range s.Metrics {
					if !seen[m.Key] {
						seen[m.Key] = true
						keys = append(keys, m)
					}
				}
			}
		}
	}
	for _, k := range keys {
		cells := make([]string, 3)
		for c, name := range []string{serverGrasp, serverBaseline, "ratio"} {
			var vals []string
			for _, r := range rounds {
				var v float64
				var ok bool
				if name == "ratio" {
					v, ok = r.Ratios[k.Key]
				} else if s := r.Servers[name]; s != nil {
					v, ok = s.get(k.Key)
				}
				if ok {
					vals = append(vals, fmtNum(v))
				} else {
					vals = append(vals, "—")
				}
			}
			cells[c] = strings.Join(vals, " / ")
		}
		label := k.Label
		if k.Unit != "" {
			label += ", " + k.Unit
		}
		fmt.Fprintf(tw, "| %s\t| %s\t| %s\t| %s\t|\n", label, cells[0], cells[1], cells[2])
	}
	tw.Flush()
}

// machine describes where a run happened, for the record.
type machine struct {
	CPUs       int      `json:"cpus"`
	CPUModel   string   `json:"cpu_model"`
	MemoryMiB  int64    `json:"memory_mib"`
	Kernel     string   `json:"kernel"`
	GoVersion  string   `json:"go_version"`
	Git        string   `json:"git"`
	LoadBefore string   `json:"load_before"`
	LoadAfter  string   `json:"load_after,omitempty"`
	Commit     string   `json:"commit,omitempty"`
	Notes      []string `json:"notes,omitempty"`
}

func describeMachine() machine {
	m := machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), LoadBefore: loadAvg()}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				m.CPUModel = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		fmt.Sscanf(strings.SplitN(string(data), "\n", 2)[0], "MemTotal: %d kB", &kb)
		m.MemoryMiB = kb / 1024
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(data))
	}
	if out, err := exec.Command("git", "--version").Output(); err == nil {
		m.Git = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
	}
	return m
}

func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func (m machine) String() string {
	return fmt.Sprintf("%d CPUs (%s), %d MiB, Linux %s, %s, %s, load %s → %s",
		m.CPUs, m.CPUModel, m.MemoryMiB, m.Kernel, m.GoVersion, m.Git, m.LoadBefore, m.LoadAfter)
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if path == "-" {
		_, err = os.Stdout.Write(append(data, '\n'))
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
