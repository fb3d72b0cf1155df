package admin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/grasp-dev/grasp/core/hosting"
	"github.com/grasp-dev/grasp/core/nip34"
)

// IntegrityPath is where the metrics listener runs `grasp admin
// integrity-check`: GET checks, POST with repair=1 repairs; repo=COORD
// ("30617:<hex>:<d>") limits it to one repository.
const IntegrityPath = "/admin/integrity"

// IntegrityReport is IntegrityPath's answer: how many repositories were
// checked and what was found. (A server before issue 26 answered the
// findings alone, as a JSON array; the CLI reads both.)
type IntegrityReport struct {
	Checked  int               `json:"checked"`
	Findings []hosting.Finding `json:"findings"`
}

// IntegrityHandler serves the check; the findings come from
// hosting.IntegrityCounted, whose repair is the GRASP-01 alignment.
func IntegrityHandler(check func(r *http.Request, repair bool, only nip34.RepoRef) ([]hosting.Finding, int, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		repair := r.URL.Query().Get("repair") == "1"
		if r.Method != http.MethodGet && r.Method != http.MethodPost || repair && r.Method != http.MethodPost {
			http.Error(w, "GET to check, POST with repair=1 to repair", http.StatusMethodNotAllowed)
			return
		}
		var only nip34.RepoRef
		if s := r.URL.Query().Get("repo"); s != "" {
			ref, err := nip34.ParseRepoRef(s)
			if err != nil {
				http.Error(w, fmt.Sprintf("repo: %v", err), http.StatusBadRequest)
				return
			}
			only = ref
		}
		found, checked, err := check(r, repair, only)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if found == nil {
			found = []hosting.Finding{}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(IntegrityReport{Checked: checked, Findings: found})
	})
}

// UnmarshalJSON reads the report, or the bare findings array an older
// server sends (Checked is then -1: not said).
func (r *IntegrityReport) UnmarshalJSON(b []byte) error {
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '[' {
		r.Checked = -1
		return json.Unmarshal(t, &r.Findings)
	}
	type plain IntegrityReport
	return json.Unmarshal(b, (*plain)(r))
}

// WriteFindings renders the report for a terminal and reports how many
// findings are left unrepaired.
func WriteFindings(w io.Writer, rep IntegrityReport) (open int) {
	found := rep.Findings
	for _, f := range found {
		mark := "PROBLEM"
		if f.Repaired {
			mark = "REPAIRED"
		} else {
			open++
		}
		fmt.Fprintf(w, "%s %s %s: %s\n", mark, f.Repo, f.Problem, f.Detail)
	}
	checked := fmt.Sprintf("%d repositories checked", rep.Checked)
	if rep.Checked < 0 {
		checked = "repositories checked: not reported by this server"
	}
	fmt.Fprintf(w, "%s, %d finding(s), %d repaired, %d open\n", checked, len(found), len(found)-open, open)
	return open
}
