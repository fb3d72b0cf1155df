package visibility

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/roster"
)

// Hosted lists the repositories hosted here (*git.Repos satisfies it).
type Hosted interface {
	List(ctx context.Context) ([]nip34.RepoRef, error)
}

// Records is the durable GRASP-08 record beside the events (*store.Privacy
// satisfies it, on both backends). Event records are written once, before
// their event is stored; repository records are read-modify-written under
// UpdateRepo, which serialises with every other instance on a shared store.
type Records interface {
	PutEvent(ctx context.Context, id string, val []byte) error
	Events(ctx context.Context, ids []string) (map[string][]byte, error)
	UpdateRepo(key string, fn func(old []byte, ok bool) (val []byte, write bool, err error)) error
	Repo(key string) ([]byte, bool, error)
	Repos(fn func(key string, val []byte) error) error
	Mark(name string) (string, error)
	SetMark(name, val string) error
}

// Options configure a Visibility.
type Options struct {
	// ServiceWide makes every event and repository private (grasp.private).
	ServiceWide bool
	// Offered says per-repository privacy is offered here
	// (grasp.private_repositories): a new private announcement is refused
	// without it. Repositories already private stay private either way.
	Offered bool
	// Members (64-hex) read and write everything: grasp.private_members and
	// the relay's own key. SetMembers replaces them.
	Members []string
	// Records is the durable record; required.
	Records Records
	// Roster reads announcements and resolves maintainer rosters; required.
	Roster *roster.Source
	// Events resolves events referenced by e/E/q tags and is scanned by
	// the first start's migration; required.
	Events roster.Events
	// Held is purgatory: held parents of a held event, and the held
	// announcements the migration scans; nil: none.
	Held roster.Held
	// Hosted lists the repositories hosted here: their readers are the
	// members of the service in service-wide mode, and at the first start
	// a hosted repository with no announcement is taken as private (it may
	// be one whose announcement was deleted); required.
	Hosted Hosted
	// Service is this server's public URL: which GRASP-06 /prs/ repository
	// a PR names (nip34.Service.PRsTarget).
	Service nip34.Service
	// Banned is the operator's NIP-86 ban list (*nip86.State): banned
	// events and every event of a banned key are read by the members
	// alone, until unbanned; nil: none.
	Banned Banned
}

// Banned is the operator's ban list as the reader rule asks it.
type Banned interface {
	Banned(evt *nostr.Event) bool
	Bans() (ids, pubkeys []string)
}

// Bounds of what is remembered and looked up.
const (
	maxReaderCache = 10000
	maxEventCache  = 50000
	// maxRefLookups bounds the referenced events looked up for one event.
	maxRefLookups = 16
	// maxNamedPairs bounds the (author, d) pairs a filter is checked for.
	maxNamedPairs = 64
	// maxNamedIDs bounds the events a filter naming ids (ids, #e, #E, #q)
	// is checked for; the gate bounds a filter's values below it.
	maxNamedIDs = 1000
	// maxPendingDeletions bounds the deletions whose targets' identifiers
	// wait between Record and Observe.
	maxPendingDeletions = 1000
)

// Visibility answers who may read and write what. Build one with New, call
// Load once before serving, and share it.
type Visibility struct {
	opts Options
	log  hclog.Logger

	members atomic.Pointer[map[string]bool]
	// privateN counts private repository records: with none, and not
	// service-wide, nothing is private but kind 10318.
	privateN atomic.Int64

	// recMu serialises the decisions that change repository records in
	// this process (another instance's are serialised by UpdateRepo).
	recMu sync.Mutex

	mu      sync.Mutex
	recs    map[string]repoRecord      // every repository record, by key
	byD     map[string]map[string]bool // identifier -> owners with a record
	readers map[nip34.RepoRef]map[string]bool
	service map[string]bool // service-wide members; nil: not resolved
	events  map[string][]string
	pending map[string][]string // deletion id -> identifiers of the announcements it deletes
	gen     uint64              // bumped whenever readers and service are cleared

	revokeMu sync.RWMutex
	revoke   []func(keys []string)

	// mod remembers moderation labels (moderation.go); its mods cache is
	// guarded by mu, like readers.
	mod moderation
}

// New builds a Visibility; call Load before serving.
func New(opts Options, e env.Env) (*Visibility, error) {
	if opts.Roster == nil || opts.Events == nil || opts.Records == nil || opts.Hosted == nil {
		return nil, errors.New("visibility: Records, Roster, Events and Hosted are required")
	}
	e = e.OrDefaults()
	v := &Visibility{opts: opts, log: e.Log,
		recs: map[string]repoRecord{}, byD: map[string]map[string]bool{},
		readers: map[nip34.RepoRef]map[string]bool{}, events: map[string][]string{}, pending: map[string][]string{}}
	v.members.Store(memberSet(opts.Members))
	v.mod.init()
	return v, nil
}

func memberSet(list []string) *map[string]bool {
	m := map[string]bool{}
	for _, pk := range list {
		if pk != "" {
			m[pk] = true
		}
	}
	return &m
}

func (v *Visibility) isMember(pk string) bool { return pk != "" && (*v.members.Load())[pk] }

// ServiceWide reports grasp.private.
func (v *Visibility) ServiceWide() bool { return v.opts.ServiceWide }

// Offered reports whether private repositories are offered here
// (grasp.private_repositories or grasp.private): what NIP-11 advertises as
// GRASP-08.
func (v *Visibility) Offered() bool { return v.opts.Offered || v.opts.ServiceWide }

// Restricting reports whether anything but kind 10318 may be private now:
// service-wide mode, or some repository is or was private.
func (v *Visibility) Restricting() bool {
	return v.opts.ServiceWide || v.privateN.Load() > 0
}

// PrivateRepositories counts the repositories that are private here (not
// counting service-wide mode): what `grasp admin status` reports.
func (v *Visibility) PrivateRepositories() int { return int(v.privateN.Load()) }

// OnRevoke registers fn to hear the keys that lost read access to
// something private (a roster or grasp.private_members changed, here or,
// through the shared record, on another instance): the gate ends their
// subscriptions and negentropy sessions that may carry it.
func (v *Visibility) OnRevoke(fn func(keys []string)) {
	v.revokeMu.Lock()
	defer v.revokeMu.Unlock()
	v.revoke = append(v.revoke, fn)
}

func (v *Visibility) revoked(keys []string) {
	if len(keys) == 0 {
		return
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	v.log.Info("read access to private repositories withdrawn", "keys", len(keys))
	v.revokeMu.RLock()
	fns := append([]func([]string){}, v.revoke...)
	v.revokeMu.RUnlock()
	for _, fn := range fns {
		fn(keys)
	}
}

// SetMembers replaces the configured members (grasp.private_members and
// the relay's key) on a reload; the keys no longer listed lose access at
// once.
func (v *Visibility) SetMembers(list []string) {
	next := memberSet(list)
	prev := v.members.Swap(next)
	var gone []string
	for pk := range *prev {
		if !(*next)[pk] {
			gone = append(gone, pk)
		}
	}
	v.mu.Lock()
	v.forgetReaders()
	v.mu.Unlock()
	v.revoked(gone)
}

// forgetReaders drops the resolved readers; v.mu is held.
func (v *Visibility) forgetReaders() {
	clear(v.readers)
	clear(v.mod.mods)
	v.service = nil
	v.gen++
}

// Load reads the repository records into memory and, on the first start
// with this record (or after an upgrade), builds it from what the store
// holds (migrate.go).
func (v *Visibility) Load(ctx context.Context) error {
	err := v.opts.Records.Repos(func(key string, val []byte) error {
		rec, err := decodeRepo(val)
		if err != nil {
			// an unreadable record is taken as private (fail closed)
			v.log.Warn("unreadable GRASP-08 repository record; taken as private", "key", key, "error", err)
			rec = repoRecord{Private: true, Why: whyUnreadable}
		}
		v.setRecord(key, rec)
		return nil
	})
	if err != nil {
		return fmt.Errorf("visibility: load the repository records: %w", err)
	}
	mark, err := v.opts.Records.Mark(markMigrated)
	if err != nil {
		return fmt.Errorf("visibility: read the migration mark: %w", err)
	}
	if err := v.loadModeration(ctx); err != nil {
		return fmt.Errorf("visibility: load the moderation labels: %w", err)
	}
	if mark != migrationVersion {
		if err := v.migrate(ctx); err != nil {
			return err
		}
		if err := v.opts.Records.SetMark(markMigrated, migrationVersion); err != nil {
			return fmt.Errorf("visibility: set the migration mark: %w", err)
		}
	}
	return nil
}
