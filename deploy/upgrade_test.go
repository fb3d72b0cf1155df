package deploy

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestUpgradeCheckConfigNamesRetiredKeys is step 2 of the upgrade procedure
// in docs/operations.md: the new binary's check-config, run on a config
// written for an older version, fails and says what to do with each key
// that is gone, at its line (issue 18 part 4).
func TestUpgradeCheckConfigNamesRetiredKeys(t *testing.T) {
	old := readShipped(t, prodConfig) + "\n[purgatory]\nttl = \"30m\"\nrejected_hot_ttl = \"2m\"\nrejected_cold_ttl = \"7d\"\n"
	path := filepath.Join(t.TempDir(), "grasp.toml")
	writeFile(t, path, old)
	line := strings.Count(old[:strings.Index(old, "rejected_hot_ttl")], "\n") + 1
	out, err := exec.Command(graspBinary(t), "check-config", "--config", path).CombinedOutput()
	if err == nil {
		t.Fatalf("check-config accepted removed keys:\n%s", out)
	}
	for _, want := range []string{
		path + ":" + strconv.Itoa(line) + ":1: purgatory.rejected_hot_ttl: removed: ",
		path + ":" + strconv.Itoa(line+1) + ":1: purgatory.rejected_cold_ttl: removed: ",
	} {
		if !strings.Contains(string(out), want) || !strings.Contains(string(out), "; delete it") {
			t.Errorf("check-config output lacks %q:\n%s", want, out)
		}
	}
}
