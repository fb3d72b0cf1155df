package config

import (
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"

	"github.com/grasp-dev/grasp/core/nip34"
)

// Service is this server's public identity: public_url's first URL and its
// aliases, parsed (nip34.ParseService owns the rules).
func (c Config) Service() (nip34.Service, error) {
	return nip34.ParseService(c.Server.PublicURL, c.Server.PublicURLAliases...)
}

// RelayURL is the websocket URL of this relay ("" while public_url is not
// a valid URL); nip34.Service.RelayURL owns the derivation. Announcements
// must list it in `relays`.
func (c Config) RelayURL() string {
	svc, err := nip34.ParseService(c.Server.PublicURL)
	if err != nil {
		return ""
	}
	return svc.RelayURL()
}

// Host is host[:port] of public_url, the service identity that clone and
// relay URLs in announcements are matched against. A default port is not
// written (public_url is canonicalised on load).
func (c Config) Host() string {
	u, err := url.Parse(c.Server.PublicURL)
	if err != nil {
		return ""
	}
	return u.Host
}

// CloneURL is the smart-HTTP URL of a hosted repository,
// <public_url>/<npub>/<identifier>.git, with the identifier path-escaped.
func (c Config) CloneURL(npub, identifier string) string {
	return c.Server.PublicURL + "/" + npub + "/" + url.PathEscape(identifier) + ".git"
}

// RepoPattern is one entry of a repository or archive list. Pubkey is hex or
// empty (any owner); Identifier is empty for "every repo of this owner".
type RepoPattern struct {
	Pubkey     string
	Identifier string
}

// ParseRepoPattern reads "npub", "hex", "npub/identifier", "hex/identifier"
// or a bare "identifier".
func ParseRepoPattern(s string) (RepoPattern, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return RepoPattern{}, errors.New("empty entry")
	}
	owner, id, hasSlash := strings.Cut(s, "/")
	if hasSlash {
		pk, err := NormalizePubkey(owner)
		if err != nil {
			return RepoPattern{}, fmt.Errorf("entry %q: owner: %w", s, err)
		}
		if id == "" || strings.Contains(id, "/") {
			return RepoPattern{}, fmt.Errorf("entry %q: want owner/identifier", s)
		}
		return RepoPattern{Pubkey: pk, Identifier: id}, nil
	}
	if pk, err := NormalizePubkey(s); err == nil {
		return RepoPattern{Pubkey: pk}, nil
	}
	if strings.HasPrefix(strings.ToLower(s), "npub1") {
		// Looks like an npub but does not decode: a typo, not an identifier.
		_, err := NormalizePubkey(s)
		return RepoPattern{}, fmt.Errorf("entry %q: %w", s, err)
	}
	return RepoPattern{Identifier: s}, nil
}

// reloadable are the keys (or key prefixes) a reload applies: SIGHUP, or a
// changed file with plugins.watch, re-reads grasp.toml, swaps the plugin
// set and gives the server the new private members (cmd/grasp), and nothing
// else. Every other key is read once when the process starts.
var reloadable = []string{
	"grasp.private_members",
	"plugins.dir",
	"plugins.max_call_stack",
	"plugins.accept",
	"plugins.relay_selection",
	"plugins.throttle",
}

// Reloadable reports whether a reload applies key (a dotted path such as
// "plugins.accept" or "sync.batch_window").
func Reloadable(key string) bool { return underAny(key, reloadable) }

// RestartNeeded names the keys whose values differ between prev and next but
// that a reload does not apply, so a reload can say that they take effect
// only after a restart instead of silently keeping the old value.
func RestartNeeded(prev, next Config) []string {
	a, b := flatten(prev), flatten(next)
	var changed []string
	for _, k := range leafKeys(reflect.TypeOf(Config{}), "") {
		if Reloadable(k) {
			continue
		}
		if !reflect.DeepEqual(a[k], b[k]) {
			changed = append(changed, k)
		}
	}
	// public_url's further entries have no key of their own.
	if !reflect.DeepEqual(prev.Server.PublicURLAliases, next.Server.PublicURLAliases) && !slices.Contains(changed, "server.public_url") {
		changed = append(changed, "server.public_url")
	}
	return changed
}

func underAny(key string, prefixes []string) bool {
	for _, p := range prefixes {
		if key == p || strings.HasPrefix(key, p+".") {
			return true
		}
	}
	return false
}

// leafKeys lists the dotted toml paths of every leaf field of a struct type,
// in declaration order. Slices of tables and free-form maps are leaves.
func leafKeys(t reflect.Type, prefix string) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("toml")
		if tag == "" {
			continue
		}
		key := joinPath(prefix, []string{tag})
		if f.Type.Kind() == reflect.Struct && f.Type != durationType {
			out = append(out, leafKeys(f.Type, key)...)
			continue
		}
		out = append(out, key)
	}
	return out
}

// flatten maps leaf paths to their values.
func flatten(c Config) map[string]any {
	out := map[string]any{}
	var walk func(v reflect.Value, prefix string)
	walk = func(v reflect.Value, prefix string) {
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			tag := f.Tag.Get("toml")
			if tag == "" {
				continue
			}
			key := joinPath(prefix, []string{tag})
			if f.Type.Kind() == reflect.Struct && f.Type != durationType {
				walk(v.Field(i), key)
				continue
			}
			out[key] = v.Field(i).Interface()
		}
	}
	walk(reflect.ValueOf(c), "")
	return out
}
