package config

import (
	"os"
	"path/filepath"
	"testing"
)

// Relative paths written in a config file are taken from the file's
// directory; defaults the file leaves out stay relative to the working
// directory, as without a file.
func TestLoadResolvesPathsAgainstTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "grasp.toml")
	body := "[server]\ndata_dir = \"state\"\n\n[throttle]\nfiles = [\"throttle.d/*.toml\", \"/etc/grasp/t.toml\"]\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.DataDir != filepath.Join(dir, "state") {
		t.Errorf("data_dir = %q, want %q", cfg.Server.DataDir, filepath.Join(dir, "state"))
	}
	if want := []string{filepath.Join(dir, "throttle.d/*.toml"), "/etc/grasp/t.toml"}; len(cfg.Throttle.Files) != 2 || cfg.Throttle.Files[0] != want[0] || cfg.Throttle.Files[1] != want[1] {
		t.Errorf("throttle.files = %q, want %q", cfg.Throttle.Files, want)
	}
	if cfg.Plugins.Dir != Default().Plugins.Dir {
		t.Errorf("plugins.dir (not written) = %q, want the default %q", cfg.Plugins.Dir, Default().Plugins.Dir)
	}
}
