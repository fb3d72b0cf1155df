package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/grasp-dev/grasp/core/admin"
)

// adminStatus asks the running server, on its loopback metrics listener,
// for its status (core/admin: the store is single-writer, so a second
// process cannot read the data dir) and prints it.
func adminStatus(args []string, stdout, stderr io.Writer) int {
	cfg, _, ok := loadConfig("admin status", args, stderr)
	if !ok {
		return 1
	}
	if !cfg.Metrics.Enabled {
		fmt.Fprintln(stderr, "grasp admin status: metrics.enabled is false: the admin report is served on the metrics listener")
		return 1
	}
	url := "http://" + cfg.Metrics.Listen + admin.StatusPath
	c := &http.Client{Timeout: time.Minute}
	resp, err := c.Get(url)
	if err != nil {
		fmt.Fprintf(stderr, "grasp admin status: is the server running? %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		fmt.Fprintf(stderr, "grasp admin status: %s: %s %s\n", url, resp.Status, b)
		return 1
	}
	var st admin.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		fmt.Fprintf(stderr, "grasp admin status: %s: %v\n", url, err)
		return 1
	}
	st.Write(stdout)
	return 0
}
