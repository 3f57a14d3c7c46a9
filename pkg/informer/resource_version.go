package informer

import (
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
)

// resourceVersions, as the store, the Reflector and the snapshot compare
// them: opaque strings by the API's contract, compared as integers (etcd's
// revision) when both parse.

// parseRV parses a resourceVersion as an unsigned integer (etcd's revision).
func parseRV(rv string) (uint64, bool) {
	n, err := strconv.ParseUint(rv, 10, 64)
	return n, err == nil
}

// rvOlder reports whether a is older than b. Only integer RVs are compared;
// an RV that does not parse is never older (RVs are opaque by contract).
func rvOlder(a, b string) bool {
	x, ok1 := parseRV(a)
	y, ok2 := parseRV(b)
	return ok1 && ok2 && x < y
}

// objectRV returns the resourceVersion of obj (a queuedItem or a runtime
// object); "" when it has none.
func objectRV(obj any) string {
	if e, ok := obj.(*queuedItem); ok {
		return e.rv
	}
	if m, err := meta.Accessor(obj); err == nil {
		return m.GetResourceVersion()
	}
	return ""
}
