package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/grasp-dev/grasp/core/config"
)

// TestGraspTOMLIsAConfigGraspLoads: every key the bench sets is one grasp
// knows, with the value the flags asked for (a memory limit past the default
// for a multi-million-event curve, a NIP-77 limit covering the store).
func TestGraspTOMLIsAConfigGraspLoads(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		o    serverOpts
		mb   int
	}{
		{"defaults", serverOpts{}, config.Default().Server.MemoryLimitMB},
		{"memory limit", serverOpts{memoryLimitMB: 2048, negentropyMax: 5_500_000}, 2048},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "grasp.toml")
			if err := os.WriteFile(path, []byte(graspTOML(serverGrasp, binaries{}, filepath.Join(dir, "data"), tc.o)), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(path)
			if err != nil {
				t.Fatalf("grasp refuses the bench's configuration: %v", err)
			}
			if cfg.Server.MemoryLimitMB != tc.mb {
				t.Errorf("memory_limit_mb = %d, want %d", cfg.Server.MemoryLimitMB, tc.mb)
			}
			if tc.o.negentropyMax > 0 && cfg.Relay.Limits.NegentropyMaxEvents != tc.o.negentropyMax {
				t.Errorf("negentropy_max_events = %d, want %d", cfg.Relay.Limits.NegentropyMaxEvents, tc.o.negentropyMax)
			}
		})
	}
}
