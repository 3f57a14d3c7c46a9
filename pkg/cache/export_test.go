package cache

import "k8s.io/apimachinery/pkg/runtime/schema"

// WireStored returns, for the typed informer of gvk in c, how many objects its
// storage codec stored from the bytes they came in (codec.WireCapture), and
// false when there is no such informer or it has no wire capture.
func WireStored(c *Cache, gvk schema.GroupVersionKind) (int64, bool) {
	e, _, ok := c.informers.peek(entryKey{gvk: gvk, shape: shapeTyped})
	if !ok || len(e.scopes) == 0 || e.scopes[0].wire == nil {
		return 0, false
	}
	var n int64
	for _, s := range e.scopes {
		n += s.wire.Stored()
	}
	return n, true
}
