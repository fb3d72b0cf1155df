package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/grasp-dev/grasp/core/config"
)

// The startup line names the version and the config file; a wildcard
// listen address without public_url gets a warning, an explicit public_url
// or a loopback listen address does not.
func TestStartupLineAndWildcardWarning(t *testing.T) {
	for _, c := range []struct {
		name, toml string
		warn       bool
	}{
		{"wildcard without public_url", "[server]\nlisten = \"0.0.0.0:7334\"\n", true},
		{"empty host without public_url", "[server]\nlisten = \":7334\"\n", true},
		{"wildcard with public_url", "[server]\nlisten = \"0.0.0.0:7334\"\npublic_url = \"https://git.example.com\"\n", false},
		{"loopback", "[server]\nlisten = \"127.0.0.1:7334\"\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(c.toml), "grasp.toml")
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			log := hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Info})
			logStart(log, cfg, "/etc/grasp/grasp.toml", "v1.2.3", "abc123")
			out := buf.String()
			if !strings.Contains(out, "grasp starting: version=v1.2.3 commit=abc123 config=/etc/grasp/grasp.toml") {
				t.Errorf("no startup line with version and config:\n%s", out)
			}
			if got := strings.Contains(out, "[WARN]") && strings.Contains(out, "set server.public_url"); got != c.warn {
				t.Errorf("warning %v, want %v:\n%s", got, c.warn, out)
			}
		})
	}
}
