package pages

import (
	"container/list"
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
