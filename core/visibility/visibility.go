package visibility

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/fiatjaf/eventstore"
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

// Options configure a Visibility.
type Options struct {
	// ServiceWide makes every event and repository private (grasp.private).
	ServiceWide bool
	// Members (64-hex) read and write everything: grasp.private_members and
	// the relay's own key.
	Members []string
	// Roster reads announcements and resolves maintainer rosters; required.
	Roster *roster.Source
	// Events resolves events referenced by e/E/q tags and is scanned by
	// Load; required.
	Events roster.Events
	// Held is scanned by Load for held announcements; nil: none.
	Held roster.Held
	// Hosted lists the repositories whose rosters are the service's
	// members in service-wide mode; required when ServiceWide.
	Hosted Hosted
}

// Bounds of what is remembered; past them a memory is cleared and rebuilt
// on demand.
const (
	maxRepoCache = 10000
	maxRefCache  = 50000
	// maxRefLookups bounds the referenced events looked up for one event.
	maxRefLookups = 16
	// maxNamedPairs bounds the (author, d) pairs a filter is checked for.
	maxNamedPairs = 64
)

// Visibility answers who may read and write what. Build one with New and
// share it.
type Visibility struct {
	opts    Options
	members map[string]bool
	log     hclog.Logger

	// flagged counts identifiers with a private announcement seen (stored
	// or held): with none, and not service-wide, nothing is private but
	// kind 10318.
	flaggedN atomic.Int64

	mu      sync.Mutex
	flagged map[string]bool         // identifiers with a private announcement seen; only grows until Load
	repos   map[nip34.RepoRef]*repo // resolved repositories, cleared when an announcement or deletion arrives
	service map[string]bool         // service-wide members; nil: not resolved
	refs    map[string][]nip34.RepoRef
	gen     uint64 // bumped whenever repos and service are cleared
}

// repo is one resolved repository: private or not, and its readers.
type repo struct {
	private bool
	readers map[string]bool
}

// New builds a Visibility; call Load before serving.
func New(opts Options, e env.Env) (*Visibility, error) {
	if opts.Roster == nil || opts.Events == nil {
		return nil, errors.New("visibility: Roster and Events are required")
	}
	if opts.ServiceWide && opts.Hosted == nil {
		return nil, errors.New("visibility: Hosted is required in service-wide private mode")
	}
	e = e.OrDefaults()
	v := &Visibility{opts: opts, members: map[string]bool{}, log: e.Log,
		flagged: map[string]bool{}, repos: map[nip34.RepoRef]*repo{}, refs: map[string][]nip34.RepoRef{}}
	for _, m := range opts.Members {
		if m != "" {
			v.members[m] = true
		}
	}
	return v, nil
}

// ServiceWide reports grasp.private.
func (v *Visibility) ServiceWide() bool { return v.opts.ServiceWide }

// Restricting reports whether anything but kind 10318 may be private now:
// service-wide mode, or some identifier with a private announcement.
func (v *Visibility) Restricting() bool {
	return v.opts.ServiceWide || v.flaggedN.Load() > 0
}

// Load scans the stored and held announcements for private flags, newest
// first in pages walked by until, so that Observe from here on keeps the
// memory complete. The scan is marked as a negentropy read, which lifts the
// store's REQ cap for the one-second remainder of a full page.
func (v *Visibility) Load(ctx context.Context) error {
	const page = 1000
	qctx := eventstore.SetNegentropy(ctx)
	scan := func(f nostr.Filter) (n int, oldest, newest nostr.Timestamp, err error) {
		ch, err := v.opts.Events.QueryEvents(qctx, f)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("visibility: scan announcements: %w", err)
		}
		for evt := range ch {
			n++
			v.Observe(evt)
			if n == 1 || evt.CreatedAt < oldest {
				oldest = evt.CreatedAt
			}
			if evt.CreatedAt > newest {
				newest = evt.CreatedAt
			}
		}
		return n, oldest, newest, ctx.Err()
	}
	var until *nostr.Timestamp
	for {
		n, oldest, newest, err := scan(nostr.Filter{Kinds: []int{nip34.KindAnnouncement}, Until: until, Limit: page})
		if err != nil {
			return err
		}
		if n < page {
			break
		}
		if oldest == newest {
			// a page all of one second: read that second whole
			sec := oldest
			if _, _, _, err := scan(nostr.Filter{Kinds: []int{nip34.KindAnnouncement}, Since: &sec, Until: &sec}); err != nil {
				return err
			}
			if oldest == 0 {
				break
			}
			oldest--
		}
		u := oldest
		until = &u
	}
	if v.opts.Held != nil {
		held, err := v.opts.Held.QueryHeld(ctx, nostr.Filter{Kinds: []int{nip34.KindAnnouncement}})
		if err != nil {
			return fmt.Errorf("visibility: scan held announcements: %w", err)
		}
		for _, evt := range held {
			v.Observe(evt)
		}
	}
	return nil
}

// Observe follows an event stored or held here: a private announcement
// flags its identifier; any announcement or deletion forgets what was
// resolved, since rosters and flags may have changed.
func (v *Visibility) Observe(evt *nostr.Event) {
	switch evt.Kind {
	case nip34.KindAnnouncement:
		a, err := nip34.ParseAnnouncement(evt)
		if err != nil {
			return
		}
		if a.Private {
			v.flag(a.Repo())
		}
		v.mu.Lock()
		v.forget()
		v.mu.Unlock()
	case nip34.KindDeletion:
		v.mu.Lock()
		v.forget()
		v.mu.Unlock()
	}
}

// flag remembers that r's identifier has had a private announcement (r's).
func (v *Visibility) flag(r nip34.RepoRef) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if d := r.Identifier; !v.flagged[d] {
		v.flagged[d] = true
		v.flaggedN.Add(1)
		v.log.Info("repository identifier has a private announcement (GRASP-08)", "repo", r.URLPath())
	}
}

// forget drops what was resolved from announcements; v.mu is held.
func (v *Visibility) forget() {
	clear(v.repos)
	v.service = nil
	v.gen++
}

// isFlagged reports whether d has had a private announcement.
func (v *Visibility) isFlagged(d string) bool {
	if v.flaggedN.Load() == 0 {
		return false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.flagged[d]
}

// resolve returns whether ref is private and who reads it.
func (v *Visibility) resolve(ctx context.Context, ref nip34.RepoRef) *repo {
	if !v.opts.ServiceWide && !v.isFlagged(ref.Identifier) {
		return &repo{}
	}
	v.mu.Lock()
	if r, ok := v.repos[ref]; ok {
		v.mu.Unlock()
		return r
	}
	gen := v.gen
	v.mu.Unlock()

	view := v.opts.Roster.View(ctx, ref.Identifier, "")
	r := &repo{private: v.opts.ServiceWide, readers: map[string]bool{}}
	own, hasOwn := view.Latest(ref.Pubkey)
	if hasOwn {
		// The announcing key reads its own repository, also while its
		// roster does not resolve (a pending lead, a conflict); a flag on
		// its own announcement makes it private all the same.
		r.readers[ref.Pubkey] = true
		if own.Private {
			r.private = true
		}
	}
	for _, m := range view.Roster(ref.Pubkey).Members() {
		r.readers[m] = true
		if e, ok := view.Latest(m); ok && e.Private {
			r.private = true
		}
	}
	if err := view.Err(); err != nil {
		// What could not be read may carry the flag: fail closed, and do
		// not remember the answer.
		v.log.Warn("reading a repository's announcements failed; treating it as private", "repo", ref.URLPath(), "error", err)
		r.private = true
		return r
	}
	v.mu.Lock()
	if v.gen == gen {
		if len(v.repos) >= maxRepoCache {
			clear(v.repos)
		}
		v.repos[ref] = r
	}
	v.mu.Unlock()
	return r
}

// serviceMembers are, in service-wide mode, the keys that read events
// belonging to no repository: the configured members (always admitted
// separately) and the readers of every hosted repository.
func (v *Visibility) serviceMembers(ctx context.Context) map[string]bool {
	v.mu.Lock()
	if v.service != nil {
		s := v.service
		v.mu.Unlock()
		return s
	}
	gen := v.gen
	v.mu.Unlock()
	out := map[string]bool{}
	hosted, err := v.opts.Hosted.List(ctx)
	if err != nil {
		v.log.Warn("listing hosted repositories failed; only configured members are service members now", "error", err)
		return out
	}
	for _, ref := range hosted {
		for pk := range v.resolve(ctx, ref).readers {
			out[pk] = true
		}
	}
	v.mu.Lock()
	if v.gen == gen {
		v.service = out
	}
	v.mu.Unlock()
	return out
}
