package informer

import (
	"strings"
	"sync"
)

// valueCopies copies the index values computed from an object decoded out of
// a stored record before the store keeps them. The codecs' decoders make an
// object's strings over the bytes they decode (for a compressed record, the
// copy decompressed for this read), so a value kept as it is keeps all of
// those bytes alive: the namespace index value of a pod restored from a
// snapshot kept its whole decompressed encoding (50k pods and 20k ConfigMaps
// held 85 MB of live heap after a warm start against 34 MB after a cold one).
// Objects from the API server's decoder do not need it. Equal values share
// one copy. Safe for concurrent use; the zero value is ready.
type valueCopies struct {
	mu   sync.Mutex
	seen map[string]string
}

// detach replaces every value of v with its copy, in place (v's slices are
// the index functions' results, owned by the caller).
func (c *valueCopies) detach(v indexValues) {
	c.detachAll(v.values...)
}

// detachAll replaces every string of each slice with its copy, in place.
func (c *valueCopies) detachAll(lists ...[]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, vals := range lists {
		for i, s := range vals {
			vals[i] = c.ofLocked(s)
		}
	}
}

// of returns the copy of s.
func (c *valueCopies) of(s string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ofLocked(s)
}

func (c *valueCopies) ofLocked(s string) string {
	if s == "" {
		return s
	}
	if shared, ok := c.seen[s]; ok {
		return shared
	}
	if c.seen == nil {
		c.seen = make(map[string]string)
	}
	cp := strings.Clone(s)
	c.seen[cp] = cp
	return cp
}
