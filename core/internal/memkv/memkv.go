// Package memkv is the in-memory side table the tests of the parts built on
// store.Side (purgatory, sync, hosting) use instead of a database. A KV
// shared by two instances of a part is how a test restarts it: what one
// wrote, the next loads. It is never used outside tests.
package memkv

import (
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
func (k *KV) Put(bucket, key string, val []byte, _ time.Duration) error {
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
func (k *KV) Get(bucket, key string) ([]byte, bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.m[bucket][key]
	return append([]byte(nil), v...), ok, nil
}

// Delete removes key; a missing key is not an error.
func (k *KV) Delete(bucket, key string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.m[bucket], key)
	return nil
}

// Scan calls fn for every entry of bucket in key order, outside the lock
// (fn may write to the KV).
func (k *KV) Scan(bucket string, fn func(key string, val []byte, expires time.Time) error) error {
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
