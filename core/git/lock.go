package git

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
)

// Locker is a per-repository write lock that other processes honour too:
// with several grasp instances on one shared git directory (the postgres
// store's advisory locks, store.RepoLocker), two pushes to one repository
// through two instances run one after the other. key names the repository
// relative to the git directory, the same on every instance. Lock blocks
// until the lock is held or ctx ends; the returned func releases it.
type Locker interface {
	Lock(ctx context.Context, key string) (unlock func(), err error)
}

// lock takes the repository lock of dir: this process's own, then the
// shared Locker when there is one. Waiters of this process queue on the
// first, so a shared lock is asked for once per holder.
func (r *Repos) lock(ctx context.Context, dir string) (func(), error) {
	unlock, err := r.locks.acquire(ctx, dir)
	if err != nil || r.shared == nil {
		return unlock, err
	}
	key, rerr := filepath.Rel(r.root, dir)
	if rerr != nil {
		key = dir
	}
	unshared, err := r.shared.Lock(ctx, filepath.ToSlash(key))
	if err != nil {
		unlock()
		return nil, fmt.Errorf("waiting for the shared repository lock: %w", err)
	}
	return func() {
		unshared()
		unlock()
	}, nil
}

// repoLocks serialises everything that writes a repository's refs (pushes,
// alignment, propagation, deletion). Each lock is a one-slot channel so a
// waiter can give up when its request goes away.
type repoLocks struct {
	mu    sync.Mutex
	locks map[string]*repoLock
}

type repoLock struct {
	ch   chan struct{}
	refs int
}

// acquire blocks until the repository at key is free or ctx ends. The
// returned func releases it.
func (l *repoLocks) acquire(ctx context.Context, key string) (func(), error) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*repoLock{}
	}
	lk := l.locks[key]
	if lk == nil {
		lk = &repoLock{ch: make(chan struct{}, 1)}
		l.locks[key] = lk
	}
	lk.refs++
	l.mu.Unlock()

	select {
	case lk.ch <- struct{}{}:
		var once sync.Once
		return func() {
			once.Do(func() {
				<-lk.ch
				l.drop(key, lk)
			})
		}, nil
	case <-ctx.Done():
		l.drop(key, lk)
		return nil, fmt.Errorf("waiting for repository lock: %w", ctx.Err())
	}
}

func (l *repoLocks) drop(key string, lk *repoLock) {
	l.mu.Lock()
	lk.refs--
	if lk.refs == 0 {
		delete(l.locks, key)
	}
	l.mu.Unlock()
}

// Lock takes dir's write lock as Repos' own writes do (this process's and
// the shared Locker): the repository stays still until the returned func
// runs. For a caller that must keep a repository unchanged from outside.
func (r *Repos) Lock(ctx context.Context, dir string) (func(), error) { return r.lock(ctx, dir) }

// LockHolders is how many writers of this process hold or wait for the
// lock of the repository at dir: 2 means one holds it and one waits.
func (r *Repos) LockHolders(dir string) int {
	r.locks.mu.Lock()
	defer r.locks.mu.Unlock()
	if lk := r.locks.locks[dir]; lk != nil {
		return lk.refs
	}
	return 0
}
