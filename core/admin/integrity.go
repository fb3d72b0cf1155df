package admin

import (
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

// IntegrityHandler serves the check; the findings come from
// hosting.Integrity, whose repair is the GRASP-01 alignment.
func IntegrityHandler(check func(r *http.Request, repair bool, only nip34.RepoRef) ([]hosting.Finding, error)) http.Handler {
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
		found, err := check(r, repair, only)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if found == nil {
			found = []hosting.Finding{}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(found)
	})
}

// WriteFindings renders findings for a terminal and reports how many are
// left unrepaired.
func WriteFindings(w io.Writer, found []hosting.Finding) (open int) {
	for _, f := range found {
		mark := "PROBLEM"
		if f.Repaired {
			mark = "REPAIRED"
		} else {
			open++
		}
		fmt.Fprintf(w, "%s %s %s: %s\n", mark, f.Repo, f.Problem, f.Detail)
	}
	fmt.Fprintf(w, "%d finding(s), %d repaired, %d open\n", len(found), len(found)-open, open)
	return open
}
