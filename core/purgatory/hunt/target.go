package hunt

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/grasp-dev/grasp/core/nip34"
)

// target is a parsed source URL: domain keys the throttle (what operators
// tune, "git.example.com"), host keys the naughty list ("git.example.com:443")
// so one dead port does not condemn the other services of a machine. url is
// what git is given: rebuilt from the parts that were checked, so the host
// curl connects to is byte for byte the one resolved and pinned.
type target struct {
	domain string
	host   string
	port   string
	dflt   bool       // port is the scheme's default
	url    string     // canonical URL handed to git
	name   string     // the host as it appears in url ("[::1]" for IPv6)
	ip     netip.Addr // the host, when it is an address literal
}

var errScheme = errors.New("only http and https sources are fetched")

// parseSource accepts only http and https URLs (file://, ssh and ext::
// would let an announcement make this server read local files or run
// commands) whose host curl and Go read the same way (audit F09a/b): an
// IPv6 literal without a zone, a canonical dotted quad, or a DNS name of
// letters, digits, '-' and '_' in lower case. A trailing dot is dropped from
// the URL git is given, so the name curl looks up is exactly the one pinned;
// numeric forms other than the dotted quad (0x7f000001, 2130706433, 127.1,
// 0177.0.0.1) are refused, since curl parses them as addresses while Go
// resolves them as names.
func parseSource(raw string) (target, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return target{}, fmt.Errorf("unparsable URL: %w", err)
	}
	if u.Host == "" || u.User != nil || u.Opaque != "" {
		return target{}, errors.New("a source URL needs a host and no user information")
	}
	scheme := strings.ToLower(u.Scheme)
	var def string
	switch scheme {
	case "http":
		def = "80"
	case "https":
		def = "443"
	default:
		return target{}, errScheme
	}
	port := u.Port()
	if port == "" {
		port = def
	} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		return target{}, fmt.Errorf("port %q is not a port number", port)
	}
	t := target{port: port, dflt: port == def}
	if strings.HasPrefix(u.Host, "[") {
		a, err := netip.ParseAddr(u.Hostname())
		if err != nil || a.Zone() != "" {
			return target{}, fmt.Errorf("host %q is not an IPv6 address without a zone", u.Hostname())
		}
		t.ip, t.domain, t.name = a, a.String(), "["+a.String()+"]"
	} else {
		name, err := hostName(u.Hostname())
		if err != nil {
			return target{}, err
		}
		if a, err := netip.ParseAddr(name); err == nil {
			t.ip = a
		}
		t.domain, t.name = name, name
	}
	t.host = net.JoinHostPort(t.domain, port)
	t.url = scheme + "://" + t.name
	if u.Port() != "" {
		t.url += ":" + port
	}
	t.url += u.EscapedPath()
	if u.RawQuery != "" {
		t.url += "?" + u.RawQuery
	}
	return t, nil
}

// hostName checks a host that is not an IPv6 literal and returns its
// canonical form.
func hostName(h string) (string, error) {
	name := strings.ToLower(strings.TrimSuffix(h, "."))
	if name == "" || len(name) > 253 {
		return "", fmt.Errorf("host %q is not a DNS name", h)
	}
	labels := strings.Split(name, ".")
	numeric := true
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return "", fmt.Errorf("host %q has an empty or over-long label", h)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", fmt.Errorf("host %q has characters other than letters, digits, '-' and '_' (use its punycode form)", h)
			}
		}
		numeric = numeric && numericLabel(l)
	}
	if numeric {
		// curl reads every all-numeric host as an IPv4 address (decimal,
		// octal, hex, 1 to 4 parts); only the canonical dotted quad means
		// the same to Go.
		if a, err := netip.ParseAddr(name); err != nil || !a.Is4() || a.String() != name {
			return "", fmt.Errorf("host %q is a numeric form curl reads as an IPv4 address other than Go does; write the address as a dotted quad", h)
		}
	}
	return name, nil
}

// numericLabel reports whether curl's IPv4 parser would take l as a number:
// decimal, octal (leading 0) or hex (0x...).
func numericLabel(l string) bool {
	if s, ok := strings.CutPrefix(l, "0x"); ok {
		for i := 0; i < len(s); i++ {
			c := s[i]
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(l); i++ {
		if l[i] < '0' || l[i] > '9' {
			return false
		}
	}
	return true
}

// selfHosts are the parsed Options.SelfHosts.
type selfHosts []selfHost

func parseSelves(hosts []string) selfHosts {
	var out selfHosts
	for _, h := range hosts {
		if s := parseSelf(h); s.name != "" {
			out = append(out, s)
		}
	}
	return out
}

func (ss selfHosts) matches(t target) bool {
	for _, s := range ss {
		if s.matches(t) {
			return true
		}
	}
	return false
}

// selfHost is one parsed entry of Options.SelfHosts.
type selfHost struct {
	name, port string
}

func parseSelf(s string) selfHost {
	s = strings.TrimSpace(strings.ToLower(s))
	if s == "" {
		return selfHost{}
	}
	if strings.Contains(s, "://") {
		if t, err := parseSource(s); err == nil {
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
