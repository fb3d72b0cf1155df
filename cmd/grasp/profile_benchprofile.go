//go:build benchprofile

package main

import (
	"fmt"
	"os"

	"github.com/grasp-dev/grasp/core/profiling"
)

// A grasp built with -tags benchprofile (grasp-bench --profile does this)
// serves the CPU-profile switch of core/profiling on the loopback address in
// GRASP_PROFILE_LISTEN and names the port it got on stderr, so that one
// benchmark scenario at a time can be profiled. Release builds never have it.
func init() {
	addr := os.Getenv("GRASP_PROFILE_LISTEN")
	if addr == "" {
		return
	}
	got, err := profiling.Listen(addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "grasp: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "profiling listening %s\n", got)
}
