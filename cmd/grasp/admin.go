package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"time"

	"github.com/grasp-dev/grasp/core/admin"
	"github.com/grasp-dev/grasp/core/config"
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
	var rep admin.IntegrityReport
	if !adminCall(cfg, method, admin.IntegrityPath, q, &rep, stderr) {
		return 1
	}
	if admin.WriteFindings(stdout, rep) > 0 {
		return 1
	}
	return 0
}

// adminRequest is a request to the admin path of the running server's
// metrics listener, carrying the admin token (core/admin.Guard).
func adminRequest(ctx context.Context, cfg config.Config, method, path string, q url.Values) (*http.Request, error) {
	if !cfg.Metrics.Enabled {
		return nil, errors.New("metrics.enabled is false: the admin commands are served on the metrics listener")
	}
	token, err := admin.ReadToken(cfg.AdminToken())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no admin token at %s: is the server running? (it makes the file at its first start; metrics.admin_token_file names it)", cfg.AdminToken())
	} else if err != nil {
		return nil, err
	}
	u := url.URL{Scheme: "http", Host: admin.Dial(cfg.Metrics.Listen), Path: path, RawQuery: q.Encode()}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set(admin.TokenHeader, "Bearer "+token)
	return req, nil
}

func adminCall(cfg config.Config, method, path string, q url.Values, into any, stderr io.Writer) bool {
	req, err := adminRequest(context.Background(), cfg, method, path, q)
	if err != nil {
		fmt.Fprintf(stderr, "grasp admin: %v\n", err)
		return false
	}
	u := req.URL
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
