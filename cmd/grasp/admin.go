package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/grasp-dev/grasp/core/admin"
	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/hosting"
)

// The admin commands ask the running server on its loopback metrics
// listener (core/admin: the store is single-writer, so a second process
// cannot read the data dir).

func adminStatus(args []string, stdout, stderr io.Writer) int {
	cfg, _, ok := loadConfig("admin status", args, stderr)
	if !ok {
		return 1
	}
	var st admin.Status
	if !adminCall(cfg, http.MethodGet, admin.StatusPath, nil, &st, stderr) {
		return 1
	}
	st.Write(stdout)
	return 0
}

// adminIntegrity exits 0 when nothing is left open, 1 otherwise.
func adminIntegrity(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("admin integrity-check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "path to grasp.toml")
	repair := fs.Bool("repair", false, "realign repos whose refs drifted from their signed state")
	repo := fs.String("repo", "", "only this repository (30617:<hex>:<d>)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg, err := loadConfigFile(*path)
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return 1
	}
	q := url.Values{}
	method := http.MethodGet
	if *repair {
		q.Set("repair", "1")
		method = http.MethodPost
	}
	if *repo != "" {
		q.Set("repo", *repo)
	}
	var found []hosting.Finding
	if !adminCall(cfg, method, admin.IntegrityPath, q, &found, stderr) {
		return 1
	}
	if admin.WriteFindings(stdout, found) > 0 {
		return 1
	}
	return 0
}

func adminCall(cfg config.Config, method, path string, q url.Values, into any, stderr io.Writer) bool {
	if !cfg.Metrics.Enabled {
		fmt.Fprintln(stderr, "grasp admin: metrics.enabled is false: the admin commands are served on the metrics listener")
		return false
	}
	u := url.URL{Scheme: "http", Host: cfg.Metrics.Listen, Path: path, RawQuery: q.Encode()}
	req, err := http.NewRequest(method, u.String(), nil)
	if err != nil {
		fmt.Fprintf(stderr, "grasp admin: %v\n", err)
		return false
	}
	// An integrity check runs git on every repository: minutes on a big host.
	c := &http.Client{Timeout: time.Hour}
	resp, err := c.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "grasp admin: is the server running? %v\n", err)
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		fmt.Fprintf(stderr, "grasp admin: %s: %s %s\n", u.Path, resp.Status, b)
		return false
	}
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		fmt.Fprintf(stderr, "grasp admin: %s: %v\n", u.Path, err)
		return false
	}
	return true
}
