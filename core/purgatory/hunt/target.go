package hunt

import (
	"net"
	"net/url"
	"strings"

	"github.com/grasp-dev/grasp/core/nip34"
)

// target is a parsed source URL: domain keys the throttle (what operators
// tune, "git.example.com"), host keys the naughty list ("git.example.com:443")
// so one dead port does not condemn the other services of a machine.
type target struct {
	domain string
	host   string
	port   string
	dflt   bool // port is the scheme's default
}

// parseSource accepts only http and https URLs: file://, ssh and ext:: would
// let an announcement make this server read local files or run commands.
func parseSource(raw string) (target, bool) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" || u.User != nil {
		return target{}, false
	}
	scheme := strings.ToLower(u.Scheme)
	var def string
	switch scheme {
	case "http":
		def = "80"
	case "https":
		def = "443"
	default:
		return target{}, false
	}
	name := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if name == "" {
		return target{}, false
	}
	port := u.Port()
	if port == "" {
		port = def
	}
	return target{domain: name, host: net.JoinHostPort(name, port), port: port, dflt: port == def}, true
}

// selfHost is the parsed Options.SelfHost.
type selfHost struct {
	name, port string
}

func parseSelf(s string) selfHost {
	s = strings.TrimSpace(strings.ToLower(s))
	if s == "" {
		return selfHost{}
	}
	if strings.Contains(s, "://") {
		if t, ok := parseSource(s); ok {
			return selfHost{name: t.domain, port: t.port}
		}
		return selfHost{}
	}
	if h, p, err := net.SplitHostPort(s); err == nil {
		return selfHost{name: strings.TrimSuffix(h, "."), port: p}
	}
	return selfHost{name: strings.TrimSuffix(strings.Trim(s, "[]"), ".")}
}

func (s selfHost) matches(t target) bool {
	if s.name == "" || s.name != t.domain {
		return false
	}
	if s.port == "" {
		return t.dflt
	}
	return s.port == t.port
}

func repoKey(r nip34.RepoRef) string { return r.Pubkey + "/" + r.Identifier }
