package nip34

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
)

// Service is this server's public identity, parsed once from the
// configured public URL. Listing checks compare parsed URLs, never
// substrings: ngit-grasp's url.contains(domain) accepts "D.evil.com" and
// "evil.com/D" (grasp.md §10.1).
type Service struct {
	Secure bool   // public URL is https (relay URL is then wss)
	Host   string // lowercase host name or IP, without brackets or trailing dot
	Port   string // explicit, or the scheme's default ("80"/"443")
	Path   string // base path without trailing slash; "" at the root
	// CheckClonePath additionally requires a listed clone URL to be exactly
	// <base>/<author npub>/<pct(d)>.git, not merely on this host.
	CheckClonePath bool
	// Aliases are the service's other public URLs (issue 25 part 5): a
	// .onion address in the http:// form ngit writes for onion hosts (its
	// relay then ws://), a second host name, a base-path alias. An
	// announcement listing any of them lists this service; the methods
	// below answer for all of them, and the fields above are the primary
	// identity, the one written into texts and NIP-42/NIP-98 examples.
	Aliases []Service
}

// ParseService parses the public URLs (http:// or https://) the server is
// reached at: the first is the primary identity, any further ones its
// aliases. Two URLs naming the same origin and base path are refused (a
// typo's duplicate would hide nothing, but says the list is not what the
// operator thinks).
func ParseService(publicURL string, aliases ...string) (Service, error) {
	svc, err := parseIdentity(publicURL)
	if err != nil {
		return Service{}, err
	}
	for _, raw := range aliases {
		a, err := parseIdentity(raw)
		if err != nil {
			return Service{}, err
		}
		for _, have := range svc.Identities() {
			if have.Host == a.Host && have.Port == a.Port && have.Path == a.Path {
				return Service{}, fmt.Errorf("public URL %q names the same host, port and path as %q", raw, have.BaseURL())
			}
		}
		svc.Aliases = append(svc.Aliases, a)
	}
	return svc, nil
}

func parseIdentity(publicURL string) (Service, error) {
	ep, err := parseEndpoint(publicURL)
	if err != nil {
		return Service{}, fmt.Errorf("parse public URL: %w", err)
	}
	if ep.scheme != "http" && ep.scheme != "https" {
		return Service{}, fmt.Errorf("parse public URL %q: scheme must be http or https", publicURL)
	}
	return Service{Secure: ep.scheme == "https", Host: ep.host, Port: ep.port, Path: ep.path}, nil
}

// Identities are the primary identity and then each alias, each without
// aliases of its own.
func (s Service) Identities() []Service {
	out := make([]Service, 0, 1+len(s.Aliases))
	p := s
	p.Aliases = nil
	out = append(out, p)
	for _, a := range s.Aliases {
		a.Aliases, a.CheckClonePath = nil, s.CheckClonePath
		out = append(out, a)
	}
	return out
}

// BaseURLs are BaseURL of every identity, the primary's first.
func (s Service) BaseURLs() []string {
	var out []string
	for _, id := range s.Identities() {
		out = append(out, id.BaseURL())
	}
	return out
}

// RelayURLs are RelayURL of every identity, the primary's first: what
// NIP-11, the pages and NIP-AD list, what NIP-42 AUTH may name, and what
// sync never dials (it is this server).
func (s Service) RelayURLs() []string {
	var out []string
	for _, id := range s.Identities() {
		out = append(out, id.RelayURL())
	}
	return out
}

// CloneURLs are CloneURL of every identity, the primary's first.
func (s Service) CloneURLs(ownerHex, id string) []string {
	var out []string
	for _, ident := range s.Identities() {
		out = append(out, ident.CloneURL(ownerHex, id))
	}
	return out
}

// HostPort is the host[:port] form, port omitted when it is the default.
func (s Service) HostPort() string {
	host := s.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if (s.Secure && s.Port == "443") || (!s.Secure && s.Port == "80") {
		return host
	}
	return host + ":" + s.Port
}

// BaseURL is the canonical http(s) URL of the service.
func (s Service) BaseURL() string {
	scheme := "http"
	if s.Secure {
		scheme = "https"
	}
	return scheme + "://" + s.HostPort() + s.Path
}

// RelayURL is the websocket URL of this service's relay, derived from the
// public URL: http becomes ws and https wss, an explicit port is kept (a
// default one is not written) and so is the base path. It is the one
// derivation (config, relay, policy and sync all call it) and it is already
// in NormalizeRelayURL's canonical form, so this server's own entry in an
// announcement's relays compares equal to it.
func (s Service) RelayURL() string {
	scheme := "ws"
	if s.Secure {
		scheme = "wss"
	}
	return scheme + "://" + s.HostPort() + s.Path
}

// Within reports whether a request's escaped URL path lies under the base
// path, and returns the rest (at least "/"): the one place a base path is
// stripped, so that the relay, NIP-11, pages and git all live under it and
// the origin's root stays free for a reverse proxy's other sites (issue 10
// part 5). "/git" and "/git/" both name the service's root; "/gitx" does
// not.
//
// With aliases, every identity's base path is tried, the longest first, so
// a request reaching the server under an alias's base path (a reverse
// proxy's second location) is served like one under the primary's.
func (s Service) Within(escapedPath string) (rest string, ok bool) {
	if len(s.Aliases) > 0 {
		ids := s.Identities()
		slices.SortStableFunc(ids, func(a, b Service) int { return len(b.Path) - len(a.Path) })
		for _, id := range ids {
			if rest, ok := id.Within(escapedPath); ok {
				return rest, true
			}
		}
		return "", false
	}
	if s.Path == "" {
		if escapedPath == "" {
			return "/", true
		}
		return escapedPath, strings.HasPrefix(escapedPath, "/")
	}
	rest, ok = strings.CutPrefix(escapedPath, s.Path)
	switch {
	case !ok:
		return "", false
	case rest == "":
		return "/", true
	case strings.HasPrefix(rest, "/"):
		return rest, true
	}
	return "", false
}

// CloneURL is the canonical clone URL for owner's repository id.
func (s Service) CloneURL(ownerHex, id string) string {
	return s.BaseURL() + "/" + Npub(ownerHex) + "/" + EscapeIdentifier(id) + ".git"
}

// ListsClone reports whether raw is an http(s) URL on this service's exact
// host:port under its base path; with CheckClonePath, whether it is exactly
// owner's clone path for id.
// Any identity counts.
func (s Service) ListsClone(raw, ownerHex, id string) bool {
	ep, err := parseEndpoint(raw)
	if err != nil || (ep.scheme != "http" && ep.scheme != "https") {
		return false
	}
	for _, ident := range s.Identities() {
		if !ident.sameOrigin(ep) {
			continue
		}
		if s.CheckClonePath {
			if ep.path == ident.Path+"/"+Npub(ownerHex)+"/"+id+".git" {
				return true
			}
			continue
		}
		if ident.Path == "" || ep.path == ident.Path || strings.HasPrefix(ep.path, ident.Path+"/") {
			return true
		}
	}
	return false
}

// PRsURL is the GRASP-06 endpoint of signer's PRs for identifier id:
// <base>/prs/<npub>/<pct(id)>.git.
func (s Service) PRsURL(signerHex, id string) string {
	return s.BaseURL() + PRsRepo(signerHex, id).URLPath()
}

// PRsEndpoint reports whether raw is an http(s) URL naming this service's
// GRASP-06 endpoint /prs/<npub>/<pct(id)>.git (exact host:port, under the
// base path), and returns the signer (hex) and identifier it names
// (G06-4/5).
func (s Service) PRsEndpoint(raw string) (signer, id string, ok bool) {
	ep, err := parseEndpoint(raw)
	if err != nil || (ep.scheme != "http" && ep.scheme != "https") {
		return "", "", false
	}
	var rest string
	found := false
	for _, ident := range s.Identities() {
		if ident.sameOrigin(ep) {
			if rest, found = strings.CutPrefix(ep.path, ident.Path+"/prs/"); found {
				break
			}
		}
	}
	if !found {
		return "", "", false
	}
	npub, seg, found := strings.Cut(rest, "/")
	id, isGit := strings.CutSuffix(seg, ".git")
	if !found || !isGit || npub != strings.ToLower(npub) || ValidateIdentifier(id) != nil {
		return "", "", false
	}
	hex, err := DecodeNpub(npub)
	if err != nil {
		return "", "", false
	}
	return hex, id, true
}

// ListsRelay reports whether raw is a ws(s) URL naming this service's
// relay under any identity: exact host:port and base path, a trailing slash
// tolerated.
func (s Service) ListsRelay(raw string) bool {
	ep, err := parseEndpoint(raw)
	if err != nil || (ep.scheme != "ws" && ep.scheme != "wss") {
		return false
	}
	for _, ident := range s.Identities() {
		if ident.sameOrigin(ep) && ep.path == ident.Path {
			return true
		}
	}
	return false
}

func (s Service) sameOrigin(ep endpoint) bool { return ep.host == s.Host && ep.port == s.Port }

// ListsService reports whether the announcement lists this service in both
// `clone` and `relays` (G01-R2).
func ListsService(a Announcement, svc Service) bool {
	return listsClone(a, svc) && listsRelay(a, svc)
}

// ListsServiceParts reports the two halves of ListsService separately, so
// a rejection can say which one is missing.
func ListsServiceParts(a Announcement, svc Service) (clone, relay bool) {
	return listsClone(a, svc), listsRelay(a, svc)
}

func listsClone(a Announcement, svc Service) bool {
	for _, c := range a.Clone {
		if svc.ListsClone(c, a.Pubkey, a.Identifier) {
			return true
		}
	}
	return false
}

func listsRelay(a Announcement, svc Service) bool {
	for _, r := range a.Relays {
		if svc.ListsRelay(r) {
			return true
		}
	}
	return false
}

type endpoint struct {
	scheme, host, port, path string
}

// parseEndpoint parses an absolute URL into normalised parts. Userinfo,
// queries and fragments are refused: none belongs in a clone or relay URL
// and userinfo is the classic way to make "http://D@evil.com" look like D.
// The path is decoded, with one trailing slash removed.
func parseEndpoint(raw string) (endpoint, error) {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	if err != nil {
		return endpoint{}, err
	}
	if u.Scheme == "" || u.Host == "" || u.Opaque != "" {
		return endpoint{}, fmt.Errorf("%q is not an absolute URL", raw)
	}
	if u.User != nil {
		return endpoint{}, errors.New("URL carries userinfo")
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return endpoint{}, errors.New("URL carries a query or fragment")
	}
	scheme := strings.ToLower(u.Scheme)
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "" {
		return endpoint{}, fmt.Errorf("%q has no host", raw)
	}
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http", "ws":
			port = "80"
		case "https", "wss":
			port = "443"
		default:
			return endpoint{}, fmt.Errorf("%q: unsupported scheme %q", raw, scheme)
		}
	}
	if _, _, err := net.SplitHostPort(net.JoinHostPort(host, port)); err != nil {
		return endpoint{}, err
	}
	path := strings.TrimSuffix(u.Path, "/")
	return endpoint{scheme: scheme, host: host, port: port, path: path}, nil
}

// EndpointHost is the lowercase host and port (explicit or the scheme's
// default) of a clone or relay URL, parsed as the listing checks parse
// them (userinfo, queries and fragments refused); ok is false for a URL
// they would not accept.
func EndpointHost(raw string) (host, port string, ok bool) {
	ep, err := parseEndpoint(raw)
	if err != nil {
		return "", "", false
	}
	return ep.host, ep.port, true
}

// PRsTarget is the GRASP-06 repository a PR or PR update goes to on this
// service: the /prs/<npub>/<d>.git one of its `clone` tags names, when the
// npub is the event's signer and one of its `a` tags has identifier d
// (G06-4/5). ok is false when no clone tag qualifies: another host, another
// npub than the signer's, or a d no `a` tag names.
func (s Service) PRsTarget(p PR) (RepoRef, bool) {
	for _, c := range p.Clone {
		signer, id, ok := s.PRsEndpoint(c)
		if !ok || signer != p.Pubkey {
			continue
		}
		for _, r := range p.Repos {
			if r.Identifier == id {
				return PRsRepo(signer, id), true
			}
		}
	}
	return RepoRef{}, false
}
