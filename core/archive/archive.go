// Package archive owns GRASP-05 archive mode: which repositories this
// server archives (accepts and mirrors although their announcement does not
// list it), whether a repository is hosted here at all once archive mode is
// on, whether pushes to it are refused (read-only), and the NIP-11 curation
// sentence that describes the scope. The scope is built once from
// [grasp] archive_all, archive_whitelist, archive_hosts and
// archive_read_only (Options) and asked per announcement (Scope.Decide).
//
// The acceptance rules (core/policy), GRASP-02 sync targets (core/relaysync,
// through the server's hosted-here callback), push refusal (core/git,
// through Options.ReadOnly), hosting's log and gauge (core/hosting) and
// NIP-11 all call it, so "is this repository archived" has one answer.
//
// It never reads the store itself: a whitelisted maintainer is matched
// through the caller's loader with nip34.Resolve (the one maintainer rule),
// and it never writes, fetches or syncs anything.
package archive

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/nip34"
)

// Options are the archive keys of [grasp].
type Options struct {
	// All archives every announcement seen (archive_all).
	All bool
	// Whitelist entries (archive_whitelist): "npub"/hex (repositories this
	// key owns or is a confirmed maintainer of), "npub/identifier",
	// "hex/identifier" or "30617:<hex>:<identifier>" (one repository).
	Whitelist []string
	// Hosts (archive_hosts) are host names, or host:port, of GRASP
	// servers: repositories whose announcement lists one of them in a
	// clone or relays URL are archived.
	Hosts []string
	// ReadOnly (archive_read_only) refuses pushes to archived repositories
	// and makes the server an archive only: announcements that list it but
	// are outside the scope are refused (G05-2).
	ReadOnly bool
	// Service is this server's public identity (what "lists this server"
	// compares with).
	Service nip34.Service
}

// Verdict is what the scope says about one announcement.
type Verdict int

const (
	// NotHosted: no bare repository here (the GRASP-01 rule: it does not
	// list this server, and archive mode does not take it).
	NotHosted Verdict = iota
	// Hosted: hosted as a GRASP-01 repository (it lists this server).
	Hosted
	// Archived: hosted as an archive (GRASP-05).
	Archived
	// OutOfScope: it lists this server, but the server is a read-only
	// archive and the repository is outside its scope (G05-2).
	OutOfScope
)

func (v Verdict) String() string {
	switch v {
	case Hosted:
		return "hosted"
	case Archived:
		return "archived"
	case OutOfScope:
		return "out_of_scope"
	}
	return "not_hosted"
}

// HasRepo reports whether the verdict gives the repository a bare repo here.
func (v Verdict) HasRepo() bool { return v == Hosted || v == Archived }

// Refusal reasons counted by grasp_archive_refusals_total.
const (
	RefusedOutOfScope = "out_of_scope"   // an announcement listing a read-only archive, outside its scope
	RefusedReadOnly   = "read_only_push" // a push to an archived repository while read-only
)

// Repository states of the grasp_archive_repos gauge.
const (
	StateAwaiting = "awaiting_data" // bare repository without refs yet
	StateMirrored = "mirrored"      // refs present
)

// Scope is the parsed archive configuration, built by New even with
// archive mode off (Decide then applies the GRASP-01 rule alone). A nil
// *Scope answers Enabled, ReadOnly and Curation as archive mode off; Decide
// needs one built by New, which knows this server's identity.
type Scope struct {
	all      bool
	owners   map[string]bool
	repos    map[nip34.RepoRef]bool
	hosts    []hostEntry
	readOnly bool
	svc      nip34.Service

	repoGauge *prometheus.GaugeVec
	refusals  *prometheus.CounterVec
}

type hostEntry struct{ host, port string } // port "" matches any

// New parses opts; with archive mode off (no All, Whitelist or Hosts) it
// still returns a usable Scope whose Enabled is false.
func New(opts Options, e env.Env) (*Scope, error) {
	e = e.OrDefaults()
	s := &Scope{all: opts.All, owners: map[string]bool{}, repos: map[nip34.RepoRef]bool{}, readOnly: opts.ReadOnly, svc: opts.Service}
	for i, raw := range opts.Whitelist {
		ent, err := ParseEntry(raw)
		if err != nil {
			return nil, fmt.Errorf("archive_whitelist[%d]: %w", i, err)
		}
		if ent.Identifier == "" {
			s.owners[ent.Pubkey] = true
		} else {
			s.repos[nip34.RepoRef{Pubkey: ent.Pubkey, Identifier: ent.Identifier}] = true
		}
	}
	for i, raw := range opts.Hosts {
		h, p, err := ParseHost(raw)
		if err != nil {
			return nil, fmt.Errorf("archive_hosts[%d]: %w", i, err)
		}
		s.hosts = append(s.hosts, hostEntry{h, p})
	}
	s.repoGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "grasp_archive_repos",
		Help: "Archived repositories (GRASP-05) by state: awaiting_data (no refs yet) or mirrored.",
	}, []string{"state"})
	s.refusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "grasp_archive_refusals_total",
		Help: "Refusals by archive mode: out_of_scope (an announcement listing a read-only archive outside its scope), read_only_push.",
	}, []string{"reason"})
	if s.Enabled() {
		for _, st := range []string{StateAwaiting, StateMirrored} {
			s.repoGauge.WithLabelValues(st)
		}
		for _, r := range []string{RefusedOutOfScope, RefusedReadOnly} {
			s.refusals.WithLabelValues(r)
		}
		if err := e.Metrics.Register(s.repoGauge); err != nil {
			return nil, fmt.Errorf("archive: register metrics: %w", err)
		}
		if err := e.Metrics.Register(s.refusals); err != nil {
			return nil, fmt.Errorf("archive: register metrics: %w", err)
		}
	}
	return s, nil
}

// Entry is one parsed archive_whitelist entry: Identifier "" names a key
// (owner or maintainer).
type Entry struct {
	Pubkey     string
	Identifier string
}

// ParseEntry reads one archive_whitelist entry. A bare identifier (any
// owner) is refused: anyone can publish an announcement with any
// identifier, so it would archive whatever strangers choose.
func ParseEntry(raw string) (Entry, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return Entry{}, errors.New("empty entry")
	}
	if strings.HasPrefix(s, "30617:") {
		ref, err := nip34.ParseRepoRef(s)
		if err != nil {
			return Entry{}, fmt.Errorf("entry %q: %w", s, err)
		}
		return Entry{Pubkey: ref.Pubkey, Identifier: ref.Identifier}, nil
	}
	if owner, id, ok := strings.Cut(s, "/"); ok {
		pk, isKey := nip34.PubkeyHex(owner)
		if !isKey {
			return Entry{}, fmt.Errorf("entry %q: %q is not an npub or 64-hex pubkey", s, owner)
		}
		if err := nip34.ValidateIdentifier(id); err != nil {
			return Entry{}, fmt.Errorf("entry %q: %w", s, err)
		}
		return Entry{Pubkey: pk, Identifier: id}, nil
	}
	if pk, isKey := nip34.PubkeyHex(s); isKey {
		return Entry{Pubkey: pk}, nil
	}
	return Entry{}, fmt.Errorf("entry %q: want an npub or hex pubkey (its repositories and those it maintains), npub/identifier or 30617:<hex>:<identifier>; a bare identifier would archive whatever anyone announces under it", s)
}

// ParseHost reads one archive_hosts entry: a host name or IP, optionally
// with :port. A URL is accepted for its host (and explicit port); a path is
// refused, since only hosts are compared.
func ParseHost(raw string) (host, port string, err error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return "", "", errors.New("empty entry")
	}
	if strings.Contains(s, "://") {
		if _, _, ok := nip34.EndpointHost(s); !ok {
			return "", "", fmt.Errorf("entry %q: not a URL a clone or relays tag could hold", s)
		}
		u, err := url.Parse(s)
		if err != nil {
			return "", "", fmt.Errorf("entry %q: %w", s, err)
		}
		if strings.Trim(u.Path, "/") != "" {
			return "", "", fmt.Errorf("entry %q: give a host name (e.g. relay.example.com), not a path", s)
		}
		// only an explicit port narrows the match
		return strings.TrimSuffix(strings.ToLower(u.Hostname()), "."), u.Port(), nil
	}
	if strings.ContainsAny(s, "/?#@ ") {
		return "", "", fmt.Errorf("entry %q: want a host name or host:port", s)
	}
	h, p := s, ""
	if hh, pp, err := net.SplitHostPort(s); err == nil {
		h, p = hh, pp
	}
	h = strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
	if h == "" {
		return "", "", fmt.Errorf("entry %q: no host", s)
	}
	return h, p, nil
}

// Enabled reports whether archive mode is on (GRASP-05 is offered).
func (s *Scope) Enabled() bool {
	return s != nil && (s.all || len(s.owners) > 0 || len(s.repos) > 0 || len(s.hosts) > 0)
}

// ReadOnly reports whether archived repositories refuse pushes.
func (s *Scope) ReadOnly() bool { return s.Enabled() && s.readOnly }

// Covers reports whether a is in the archive scope. others loads the
// latest accepted announcement of another key with a's identifier (for
// whitelisted maintainers; nil: none known); a itself stands for its
// author, so the roster is the one a would have once accepted.
func (s *Scope) Covers(a nip34.Announcement, others nip34.Loader) bool {
	if !s.Enabled() {
		return false
	}
	if s.all || s.owners[a.Pubkey] || s.repos[a.Repo()] || s.listsHost(a) {
		return true
	}
	if len(s.owners) == 0 {
		return false
	}
	load := func(pk string) (nip34.Announcement, bool) {
		if pk == a.Pubkey {
			return a, true
		}
		if others == nil {
			return nip34.Announcement{}, false
		}
		return others(pk)
	}
	for pk := range nip34.Resolve(a.Pubkey, load).Maintainers {
		if s.owners[pk] {
			return true
		}
	}
	return false
}

func (s *Scope) listsHost(a nip34.Announcement) bool {
	if len(s.hosts) == 0 {
		return false
	}
	for _, list := range [][]string{a.Clone, a.Relays} {
		for _, u := range list {
			h, p, ok := nip34.EndpointHost(u)
			if !ok {
				continue
			}
			for _, e := range s.hosts {
				if e.host == h && (e.port == "" || e.port == p) {
					return true
				}
			}
		}
	}
	return false
}

// Decide says whether a's repository is hosted here and how: the one
// answer the acceptance rules, sync and push refusal share. Outside archive
// mode it is Hosted exactly when a lists this server (G01-R2).
func (s *Scope) Decide(a nip34.Announcement, others nip34.Loader) Verdict {
	var svc nip34.Service
	if s != nil {
		svc = s.svc
	}
	lists := nip34.ListsService(a, svc)
	if !s.Enabled() {
		if lists {
			return Hosted
		}
		return NotHosted
	}
	in := s.Covers(a, others)
	switch {
	case in && (s.readOnly || !lists):
		return Archived
	case lists && s.readOnly:
		return OutOfScope
	case lists:
		return Hosted
	}
	return NotHosted
}

// Refused counts a refusal by archive mode (reason: Refused*).
func (s *Scope) Refused(reason string) {
	if s.Enabled() {
		s.refusals.WithLabelValues(reason).Inc()
	}
}

// SetRepos sets the grasp_archive_repos gauge from a count by state.
func (s *Scope) SetRepos(byState map[string]int) {
	if !s.Enabled() {
		return
	}
	for _, st := range []string{StateAwaiting, StateMirrored} {
		s.repoGauge.WithLabelValues(st).Set(float64(byState[st]))
	}
}

// ReadOnlyMessage is the git error a refused push shows: why, and that
// the data comes from elsewhere.
func ReadOnlyMessage(repo nip34.RepoRef) string {
	return fmt.Sprintf("restricted: %s/%s is a read-only archive on this server (GRASP-05); push to the servers its announcement lists instead",
		repo.Npub(), repo.Identifier)
}

// OutOfScopeMessage is the OK text of an announcement refused by a
// read-only archive.
func (s *Scope) OutOfScopeMessage(a nip34.Announcement) string {
	return fmt.Sprintf("restricted: this server is a read-only archive (GRASP-05) of %s; repository %s/%s is outside it",
		s.scopeWords(), nip34.Npub(a.Pubkey), a.Identifier)
}

// Curation is the NIP-11 `curation` sentence of archive mode ("" when off),
// in ngit-grasp's wording where it has one (G05-3).
func (s *Scope) Curation() string {
	if !s.Enabled() {
		return ""
	}
	mode := "Read-only sync"
	if !s.readOnly {
		mode = "Sync"
	}
	return mode + " of " + s.scopeWords()
}

func (s *Scope) scopeWords() string {
	if s.all {
		return "all repositories found on network"
	}
	var parts []string
	if len(s.owners) > 0 || len(s.repos) > 0 {
		parts = append(parts, fmt.Sprintf("whitelisted repositories and maintainers (%d keys, %d repositories)", len(s.owners), len(s.repos)))
	}
	if len(s.hosts) > 0 {
		names := make([]string, len(s.hosts))
		for i, h := range s.hosts {
			names[i] = h.host
			if h.port != "" {
				names[i] = net.JoinHostPort(h.host, h.port)
			}
		}
		parts = append(parts, "repositories from specified GRASP servers ("+strings.Join(names, ", ")+")")
	}
	return strings.Join(parts, " and of ")
}
