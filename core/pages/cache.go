package pages

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"sync"
)

// cache keeps what was read from git and rendered, keyed by the
// repository's ref tips (or by object ids, which never change), bounded in
// bytes, least recently used first out. A push moves a tip and so changes
// the key: nothing is ever invalidated by hand.
type cache struct {
	mu    sync.Mutex
	max   int
	size  int
	order *list.List // front: most recent
	items map[string]*list.Element
	// flights are the values being computed (load)
	flights map[string]*flight
}

type cacheEntry struct {
	key  string
	val  any
	size int
}

func newCache(max int) *cache {
	return &cache{max: max, order: list.New(), items: map[string]*list.Element{}}
}

func (c *cache) get(key string) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cacheEntry).val, true
}

// put stores val of about size bytes; a value larger than a quarter of the
// cache is not kept.
func (c *cache) put(key string, val any, size int) {
	size += len(key) + 64
	if size > c.max/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.size -= el.Value.(*cacheEntry).size
		c.order.Remove(el)
	}
	c.items[key] = c.order.PushFront(&cacheEntry{key: key, val: val, size: size})
	c.size += size
	for c.size > c.max {
		el := c.order.Back()
		e := el.Value.(*cacheEntry)
		c.order.Remove(el)
		delete(c.items, e.key)
		c.size -= e.size
	}
}

// tipsKey names a repository's state: HEAD and every ref with its object.
func tipsKey(head string, refs map[string]string) string {
	names := make([]string, 0, len(refs))
	for n := range refs {
		names = append(names, n)
	}
	sort.Strings(names)
	h := sha256.New()
	h.Write([]byte(head + "\n"))
	for _, n := range names {
		h.Write([]byte(n + " " + refs[n] + "\n"))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// flight is one computation of a cache value that concurrent views of the
// same key wait for instead of repeating it (audit 2026-11b, F29: 48
// parallel views of one large tree each ran ls-tree and built the listing).
type flight struct {
	done    chan struct{}
	val     any
	err     error
	waiters int                // views waiting for it
	cancel  context.CancelFunc // stops it once no view waits
}

// load returns the cached value of key, or computes it with fn once however
// many views ask at the same time; fn returns the value, its size in bytes
// and an error (errors are not cached). fn's context ends when every view
// waiting for it has gone: nobody's leftover work runs on.
func (c *cache) load(ctx context.Context, key string, fn func(context.Context) (any, int, error)) (any, error) {
	c.mu.Lock()
	if el, ok := c.items[key]; ok {
		c.order.MoveToFront(el)
		c.mu.Unlock()
		return el.Value.(*cacheEntry).val, nil
	}
	if c.flights == nil {
		c.flights = map[string]*flight{}
	}
	f, ok := c.flights[key]
	if !ok {
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		f = &flight{done: make(chan struct{}), cancel: cancel}
		c.flights[key] = f
		go func() {
			defer cancel()
			var size int
			f.val, size, f.err = fn(fctx)
			if f.err == nil {
				c.put(key, f.val, size)
			}
			c.mu.Lock()
			if c.flights[key] == f {
				delete(c.flights, key)
			}
			c.mu.Unlock()
			close(f.done)
		}()
	}
	f.waiters++
	c.mu.Unlock()
	select {
	case <-f.done:
		return f.val, f.err
	case <-ctx.Done():
		c.mu.Lock()
		if f.waiters--; f.waiters == 0 {
			// abandoned: a view arriving now starts afresh
			f.cancel()
			if c.flights[key] == f {
				delete(c.flights, key)
			}
		}
		c.mu.Unlock()
		return nil, ctx.Err()
	}
}
