// Package memkv is the in-memory side table the tests of the parts built on
// store.Side (purgatory, sync, hosting) use instead of a database. A KV
// shared by two instances of a part is how a test restarts it: what one
// wrote, the next loads. It is never used outside tests.
package memkv

import (
	"context"
	"sort"
	"sync"
	"time"
)

// KV is an in-memory Put/Delete/Scan table; the zero value is ready.
type KV struct {
	mu sync.Mutex
	m  map[string]map[string][]byte
}

// Put stores a copy of val; the ttl is not enforced (the parts expire
// entries themselves, on their own clock).
func (k *KV) Put(_ context.Context, bucket, key string, val []byte, _ time.Duration) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]map[string][]byte{}
	}
	if k.m[bucket] == nil {
		k.m[bucket] = map[string][]byte{}
	}
	k.m[bucket][key] = append([]byte(nil), val...)
	return nil
}

// Get returns a copy of the value of key.
func (k *KV) Get(_ context.Context, bucket, key string) ([]byte, bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.m[bucket][key]
	return append([]byte(nil), v...), ok, nil
}

// Delete removes key; a missing key is not an error.
func (k *KV) Delete(_ context.Context, bucket, key string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.m[bucket], key)
	return nil
}

// Scan calls fn for every entry of bucket in key order, outside the lock
// (fn may write to the KV).
func (k *KV) Scan(_ context.Context, bucket string, fn func(key string, val []byte, expires time.Time) error) error {
	k.mu.Lock()
	keys := make([]string, 0, len(k.m[bucket]))
	for key := range k.m[bucket] {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	vals := make([][]byte, len(keys))
	for i, key := range keys {
		vals[i] = k.m[bucket][key]
	}
	k.mu.Unlock()
	for i := range keys {
		if err := fn(keys[i], vals[i], time.Time{}); err != nil {
			return err
		}
	}
	return nil
}

// Privacy is GRASP-08's durable record in memory (core/visibility's
// Records; core/store's Privacy is the real one); the zero value is ready.
// A Privacy shared by two Visibility instances is how a test restarts one.
type Privacy struct {
	mu     sync.Mutex
	events map[string][]byte
	repos  KV
	marks  KV
}

// PutEvent keeps a copy of val for event id.
func (p *Privacy) PutEvent(_ context.Context, id string, val []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.events == nil {
		p.events = map[string][]byte{}
	}
	p.events[id] = append([]byte(nil), val...)
	return nil
}

// Events returns the records of those of ids that have one.
func (p *Privacy) Events(_ context.Context, ids []string) (map[string][]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string][]byte{}
	for _, id := range ids {
		if v, ok := p.events[id]; ok {
			out[id] = append([]byte(nil), v...)
		}
	}
	return out, nil
}

// UpdateRepo runs fn on key's record and keeps what it returns, under one
// lock.
func (p *Privacy) UpdateRepo(key string, fn func([]byte, bool) ([]byte, bool, error)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	old, ok, _ := p.repos.Get(context.Background(), "repo", key)
	val, write, err := fn(old, ok)
	if err != nil || !write {
		return err
	}
	return p.repos.Put(context.Background(), "repo", key, val, 0)
}

// Repo returns key's record.
func (p *Privacy) Repo(key string) ([]byte, bool, error) {
	return p.repos.Get(context.Background(), "repo", key)
}

// Repos visits every repository record.
func (p *Privacy) Repos(fn func(string, []byte) error) error {
	return p.repos.Scan(context.Background(), "repo", func(k string, v []byte, _ time.Time) error { return fn(k, v) })
}

// Mark returns the record's state entry name.
func (p *Privacy) Mark(name string) (string, error) {
	v, _, err := p.marks.Get(context.Background(), "mark", name)
	return string(v), err
}

// SetMark sets the record's state entry name.
func (p *Privacy) SetMark(name, val string) error {
	return p.marks.Put(context.Background(), "mark", name, []byte(val), 0)
}
