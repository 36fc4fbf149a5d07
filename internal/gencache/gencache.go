// Package gencache is a bounded cache of two generations, for the
// process-wide caches of values derived from stored rows (the mutes'
// views of papers and compiled query mutes, the digests' papers and
// their renderings): no clock, no list, and what is used at least once a
// generation stays.
package gencache

import "sync"

// Cache is a bounded cache of values by key: a lookup finds a value in
// the current generation or the previous one (moving it to the current);
// when the current one is full it becomes the previous one, and the old
// previous one is forgotten. At most 2×max values are kept; what is used
// once a generation stays. Safe for concurrent use.
type Cache[K comparable, V any] struct {
	mu        sync.Mutex
	max       int
	cur, prev map[K]V
}

// New returns an empty cache of at most max values a generation (at
// least 1).
func New[K comparable, V any](max int) *Cache[K, V] {
	if max < 1 {
		max = 1
	}
	return &Cache[K, V]{max: max, cur: map[K]V{}, prev: map[K]V{}}
}

// Get returns the value kept under k, if any.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.cur[k]; ok {
		return v, true
	}
	v, ok := c.prev[k]
	if ok {
		delete(c.prev, k)
		c.putLocked(k, v)
	}
	return v, ok
}

// Put keeps v under k, in place of any value kept under it.
func (c *Cache[K, V]) Put(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.prev, k)
	c.putLocked(k, v)
}

// Len is how many values are kept (both generations).
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.cur) + len(c.prev)
}

func (c *Cache[K, V]) putLocked(k K, v V) {
	if _, ok := c.cur[k]; !ok && len(c.cur) >= c.max {
		c.prev, c.cur = c.cur, make(map[K]V, c.max)
	}
	c.cur[k] = v
}
