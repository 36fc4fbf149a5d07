package match

import "sync"

// genCache is a bounded cache of values by key: a lookup finds a value in
// the current generation or the previous one (moving it to the current);
// when the current one is full it becomes the previous one, and the old
// previous one is forgotten. At most 2×max values are kept; what is used
// once a generation stays. Safe for concurrent use.
type genCache[K comparable, V any] struct {
	mu        sync.Mutex
	max       int
	cur, prev map[K]V
}

func newGenCache[K comparable, V any](max int) *genCache[K, V] {
	return &genCache[K, V]{max: max, cur: map[K]V{}, prev: map[K]V{}}
}

// get returns the value kept under k, if any.
func (c *genCache[K, V]) get(k K) (V, bool) {
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

// put keeps v under k.
func (c *genCache[K, V]) put(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.prev, k)
	c.putLocked(k, v)
}

func (c *genCache[K, V]) putLocked(k K, v V) {
	if _, ok := c.cur[k]; !ok && len(c.cur) >= c.max {
		c.prev, c.cur = c.cur, make(map[K]V, c.max)
	}
	c.cur[k] = v
}
