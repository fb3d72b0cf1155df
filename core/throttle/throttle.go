// Package throttle owns the per-domain git-fetch limits of the git-data
// hunter: their type (Limits) and the extension point that tunes them
// (Tuner, the throttle plugins), the operator's tuning files
// (throttle.d/*.toml) and the Resolver that folds defaults, the configured
// Tuner chain and the tuning files into one clamped Limits per domain. It
// never imports plugins/ (tuners arrive as Tuner values) and never fetches
// anything: core/purgatory/hunt asks it for a domain's limits.
package throttle

import (
	"fmt"
	"strings"

	"github.com/grasp-dev/grasp/core/config"
)

// Defaults and hard caps used when the options leave them at zero: config's.
var (
	DefaultConcurrent    = config.Default().Throttle.Concurrent
	DefaultPerMinute     = config.Default().Throttle.PerMinute
	DefaultMaxConcurrent = config.Default().Throttle.MaxConcurrent
	DefaultMaxPerMinute  = config.Default().Throttle.MaxPerMinute
)

// Entry is one domain's override from a tuning file. A nil field keeps the
// value computed so far, so a file can tune only per_minute.
type Entry struct {
	Concurrent *int `toml:"concurrent"`
	PerMinute  *int `toml:"per_minute"`
	// File is the tuning file the entry came from (for error messages).
	File string `toml:"-"`
}

// Table maps a domain to its override. Keys are lower-case host names or
// suffix wildcards ("*.sr.ht"); an exact entry beats a wildcard, and a longer
// wildcard beats a shorter one.
type Table map[string]Entry

// Names reports whether domain has an entry of its own (not a wildcard's):
// the operator named it, so it may label metric series. Domains only a
// wildcard matches come from clone URLs anyone chooses (audit F14).
func (t Table) Names(domain string) bool {
	_, ok := t[tableKey(domain)]
	return ok
}

func tableKey(domain string) string { return strings.ToLower(strings.TrimSuffix(domain, ".")) }

// Lookup returns the entry that applies to domain, if any.
func (t Table) Lookup(domain string) (Entry, bool) {
	domain = tableKey(domain)
	if e, ok := t[domain]; ok {
		return e, true
	}
	// Walk up the labels: for a.b.example.com try *.b.example.com, then
	// *.example.com, then *.com — most specific first.
	for rest := domain; ; {
		i := strings.IndexByte(rest, '.')
		if i < 0 {
			return Entry{}, false
		}
		rest = rest[i+1:]
		if e, ok := t["*."+rest]; ok {
			return e, true
		}
	}
}

// Apply overlays the entry for domain (if any) on cur.
func (t Table) Apply(domain string, cur Limits) Limits {
	e, ok := t.Lookup(domain)
	if !ok {
		return cur
	}
	if e.Concurrent != nil {
		cur.Concurrency = *e.Concurrent
	}
	if e.PerMinute != nil {
		cur.PerMinute = *e.PerMinute
	}
	return cur
}

// validDomainKey reports whether k is a host name or a "*." suffix wildcard.
func validDomainKey(k string) error {
	name := strings.TrimPrefix(k, "*.")
	if name == "" || strings.ContainsAny(name, "*/: \t@") {
		return fmt.Errorf("%q is not a domain name or a \"*.suffix\" wildcard", k)
	}
	if k != strings.ToLower(k) {
		return fmt.Errorf("%q must be lower case", k)
	}
	return nil
}
