package informer

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
)

// Namespace-scoped indexes. controller-runtime files an object of namespace
// ns under "<ns>/<v>" and "__all_namespaces/<v>" for each value v of a field
// index (its IndexField), so that a List with or without InNamespace is one
// lookup; pkg/cache's label indexes follow that layout. An index the
// Indexer's NamespaceScoped option names is given a function that returns
// the plain values v, and files each object under v alone: half the entries,
// and one bucket per value instead of one per value and namespace. Readers
// ask in the layout: a value "__all_namespaces/<v>" reads the bucket of v, a
// value "<ns>/<v>" the objects of that bucket whose key is in ns (keys are
// "<namespace>/<name>", as toolscache.MetaNamespaceKeyFunc makes them).
// ByIndex, IndexKeys, IndexCount, ListIndexFuncValues, Select and the
// functions GetIndexers returns all speak the layout; only the stored
// entries differ from controller-runtime's.

// allNamespacesPrefix is the layout's prefix of a value across namespaces
// (controller-runtime's "__all_namespaces" and a slash).
const allNamespacesPrefix = "__all_namespaces/"

// indexLookup is where a value asked of an index is filed: the value of its
// bucket, and the namespace the answer keeps ("": every object of it).
type indexLookup struct {
	value, namespace string
}

// lookupOf returns the lookup of value, asked of index i of f; ok is false
// when a namespace-scoped index holds no such value (neither prefix).
func (f *indexFuncs) lookupOf(i int, value string) (l indexLookup, ok bool) {
	if !f.scoped[i] {
		return indexLookup{value: value}, true
	}
	if v, found := strings.CutPrefix(value, allNamespacesPrefix); found {
		return indexLookup{value: v}, true
	}
	ns, v, found := strings.Cut(value, "/")
	if !found || ns == "" {
		return indexLookup{}, false
	}
	return indexLookup{value: v, namespace: ns}, true
}

// holds reports whether the object of key, whose current record is r, is
// filed under l in index i of f.
func (l indexLookup) holds(f *indexFuncs, i int, key string, r *record) bool {
	return f.filedUnder(key, r, i, l.value) && inNamespace(key, l.namespace)
}

// inNamespace reports whether key is the key of an object of namespace ns
// ("": any object).
func inNamespace(key, ns string) bool {
	return ns == "" || (len(key) > len(ns) && key[len(ns)] == '/' && key[:len(ns)] == ns)
}

// scopedFunc returns fn, the function of a namespace-scoped index, as one
// of controller-runtime's layout: "<ns>/<v>" for each value v of a
// namespaced object, then "__all_namespaces/<v>" for each (GetIndexers).
func scopedFunc(fn toolscache.IndexFunc) toolscache.IndexFunc {
	return func(obj any) ([]string, error) {
		values, err := fn(obj)
		if err != nil || len(values) == 0 {
			return values, err
		}
		ns := ""
		if m, err := meta.Accessor(obj); err == nil {
			ns = m.GetNamespace()
		}
		out := make([]string, 0, 2*len(values))
		if ns != "" {
			for _, v := range values {
				out = append(out, ns+"/"+v)
			}
		}
		for _, v := range values {
			out = append(out, allNamespacesPrefix+v)
		}
		return out, nil
	}
}

// scopedValues returns the values a namespace-scoped index (i of t) holds in
// controller-runtime's layout: "__all_namespaces/<v>" for each bucket value
// v, and "<ns>/<v>" for each namespace with an object filed under v, sorted
// (ListIndexFuncValues).
func (t *segmentTable) scopedValues(i int, idx trie[indexValue, bucket]) []string {
	out := make([]string, 0, 2*idx.Len())
	idx.each(func(v indexValue, b bucket) bool {
		value := string(v)
		filed := false
		namespaces := map[string]struct{}{}
		b.each(func(e *cell) bool {
			if r := e.rec.Load(); t.funcs.filedUnder(e.key, r, i, value) {
				filed = true
				if ns, _, found := strings.Cut(e.key, "/"); found {
					namespaces[ns] = struct{}{}
				}
			}
			return true
		})
		if filed {
			out = append(out, allNamespacesPrefix+value)
		}
		for ns := range namespaces {
			out = append(out, ns+"/"+value)
		}
		return true
	})
	slices.Sort(out)
	return out
}
