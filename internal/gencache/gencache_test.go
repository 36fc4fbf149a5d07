package gencache_test

import (
	"sync"
	"testing"

	"followfeed/internal/gencache"
)

// Two generations: a full generation becomes the previous one, whose
// values are still found (and move back to the current one when used);
// the one before it is forgotten.
func TestKeepsTwoGenerations(t *testing.T) {
	c := gencache.New[int, string](2)
	c.Put(1, "one")
	c.Put(2, "two")
	c.Put(3, "three") // 1 and 2 are the previous generation now
	if v, ok := c.Get(1); !ok || v != "one" {
		t.Fatalf("1, in the previous generation: %q %v", v, ok)
	}
	// Using 1 moved it to the current generation (with 3): it is full,
	// so the next Put makes {3, 1} the previous one and 2 is forgotten.
	c.Put(4, "four")
	if _, ok := c.Get(2); ok {
		t.Error("2, unused for two generations, is still kept")
	}
	for _, k := range []int{1, 3, 4} {
		if _, ok := c.Get(k); !ok {
			t.Errorf("%d, used within a generation, was forgotten", k)
		}
	}
	if n := c.Len(); n > 4 {
		t.Errorf("%d values kept, want at most two generations of 2", n)
	}
}

// Put replaces a value, in whichever generation it was.
func TestPutReplaces(t *testing.T) {
	c := gencache.New[string, int](2)
	c.Put("a", 1)
	c.Put("b", 2)
	c.Put("c", 3) // a and b are the previous generation
	c.Put("a", 10)
	if v, _ := c.Get("a"); v != 10 {
		t.Errorf("a is %d after its Put of 10", v)
	}
	c.Put("c", 30)
	if v, _ := c.Get("c"); v != 30 {
		t.Errorf("c is %d after its Put of 30", v)
	}
	if n := c.Len(); n != 3 {
		t.Errorf("%d values kept, want a, b and c once each", n)
	}
}

// A cache of size 0 keeps one value a generation rather than none.
func TestSizeAtLeastOne(t *testing.T) {
	c := gencache.New[int, int](0)
	c.Put(1, 1)
	if _, ok := c.Get(1); !ok {
		t.Error("a cache of size 0 kept nothing")
	}
}

// Concurrent users (go test -race).
func TestConcurrentUse(t *testing.T) {
	c := gencache.New[int, int](16)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 1000 {
				k := (i*7 + g) % 40
				if v, ok := c.Get(k); ok && v != k*k {
					t.Errorf("%d holds %d", k, v)
					return
				}
				c.Put(k, k*k)
			}
		})
	}
	wg.Wait()
	if n := c.Len(); n > 32 {
		t.Errorf("%d values kept, more than two generations of 16", n)
	}
}
