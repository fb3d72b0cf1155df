package nip34

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
)

// NormalizeRelayURL is the one canonical form of a relay URL, so that the same
// relay written two ways is one connection, one health record and one
// bootstrap entry. It is used for the relays announcements list, for the
// configured bootstrap relays and for this server's own relay URL.
//
//   - Surrounding space is trimmed; a bare host gets wss:// (ngit-grasp does
//     the same, and grasp.toml documents it for bootstrap relays).
//   - Only ws and wss are relay URLs: http(s) names a web page or a git
//     server, not a relay, and is refused rather than guessed at.
//   - Scheme and host are lower-cased and a trailing dot of the host dropped;
//     a default port (ws 80, wss 443) and trailing slashes are removed.
//   - Userinfo is refused (a relay URL carries no credentials, and
//     "wss://good@evil" is the classic disguise); a fragment is dropped (it is
//     never sent); a query is kept.
func NormalizeRelayURL(raw string) (string, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return "", errors.New("empty relay URL")
	}
	if !strings.Contains(s, "://") {
		s = "wss://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("relay URL %q: %w", raw, err)
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "ws" && scheme != "wss" {
		return "", fmt.Errorf("relay URL %q: scheme must be ws or wss", raw)
	}
	if u.User != nil || u.Opaque != "" {
		return "", fmt.Errorf("relay URL %q: want ws[s]://host[:port][/path]", raw)
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "" {
		return "", fmt.Errorf("relay URL %q: no host", raw)
	}
	port := u.Port()
	if (scheme == "wss" && port == "443") || (scheme == "ws" && port == "80") {
		port = ""
	}
	if strings.Contains(host, ":") {
		if _, err := netip.ParseAddr(host); err != nil {
			return "", fmt.Errorf("relay URL %q: bad host %q", raw, host)
		}
		host = "[" + host + "]"
	}
	out := scheme + "://" + host
	if port != "" {
		out += ":" + port
	}
	out += strings.TrimRight(u.EscapedPath(), "/")
	if u.RawQuery != "" {
		out += "?" + u.RawQuery
	}
	return out, nil
}
