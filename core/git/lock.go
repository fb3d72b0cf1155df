package git

import (
	"context"
	"fmt"
	"sync"
)

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
