package githttp

import (
	"sync"
	"time"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/nip34"
)

// Refusals remembers the last refused pushes of each hosted repository,
// for its page (issue 26 part 5: why was my push refused?). It keeps the
// reason's class and when, never the pusher's text: pushes are anonymous,
// so a refusal may be a stranger's, and its full reason names refs and
// commits the pusher chose (the pusher read it in git's output). It is
// bounded (maxRefusalRepos repositories, refusalsPerRepo each) and lives in
// memory: a restart, or another instance, starts empty.
type Refusals struct {
	clk clock.Clock
	mu  sync.Mutex
	by  map[nip34.RepoRef][]Refusal
}

// Refusal is one refused push.
type Refusal struct {
	At    time.Time
	Class string // a Class* constant, or a limit: read_only, disk, quota, busy, busy_ip, slow_body, too_large, git
	Refs  int    // ref updates the push carried
}

const (
	maxRefusalRepos = 4096
	refusalsPerRepo = 5
)

// NewRefusals returns an empty memory on clk (nil: the real clock).
func NewRefusals(clk clock.Clock) *Refusals {
	if clk == nil {
		clk = clock.New()
	}
	return &Refusals{clk: clk, by: map[nip34.RepoRef][]Refusal{}}
}

// note records a refused push of repo; nil r records nothing.
func (r *Refusals) note(repo nip34.RepoRef, class string, refs int) {
	if r == nil || repo.PRs {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	list, ok := r.by[repo]
	if !ok && len(r.by) >= maxRefusalRepos {
		for k := range r.by { // any one: the bound matters, not which
			delete(r.by, k)
			break
		}
	}
	list = append(list, Refusal{At: r.clk.Now(), Class: class, Refs: refs})
	if len(list) > refusalsPerRepo {
		list = list[len(list)-refusalsPerRepo:]
	}
	r.by[repo] = list
}

// Last returns repo's remembered refusals, newest first.
func (r *Refusals) Last(repo nip34.RepoRef) []Refusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	list := r.by[repo]
	out := make([]Refusal, len(list))
	for i, x := range list {
		out[len(list)-1-i] = x
	}
	return out
}
