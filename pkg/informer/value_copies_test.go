package informer

import (
	"fmt"
	"sync"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// scratchCodec decodes with podCodec, then points the pod's namespace and
// node name into a buffer of its own, as a decompressing codec's decoder
// points every string into the bytes it decompressed for that read; it
// remembers the buffers.
type scratchCodec struct {
	StorageCodec
	mu   sync.Mutex
	bufs [][]byte
}

func (c *scratchCodec) Decode(data []byte) (any, error) {
	obj, err := c.StorageCodec.Decode(data)
	if err != nil {
		return nil, err
	}
	p := obj.(*corev1.Pod)
	buf := []byte(p.Namespace + p.Spec.NodeName + "-and-the-rest-of-the-object")
	c.mu.Lock()
	c.bufs = append(c.bufs, buf)
	c.mu.Unlock()
	p.Namespace = unsafe.String(&buf[0], len(p.Namespace))
	if n := len(p.Spec.NodeName); n > 0 {
		p.Spec.NodeName = unsafe.String(&buf[len(p.Namespace)], n)
	}
	return p, nil
}

// pointsInto reports whether s's bytes lie in one of c's buffers.
func (c *scratchCodec) pointsInto(s string) bool {
	if s == "" {
		return false
	}
	p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.bufs {
		start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		if p >= start && p < start+uintptr(len(b)) {
			return true
		}
	}
	return false
}

func nodeNameIndex(obj any) ([]string, error) {
	return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
}

// heldValues returns every index value the store keeps, with the index
// functions' names.
func heldValues(ix *Indexer) map[string][]string {
	out := map[string][]string{}
	t := ix.table.Load()
	t.eachCell(func(e *cell) bool {
		r := e.rec.Load()
		for i, name := range t.funcs.names {
			out[name] = append(out[name], t.funcs.filed(e.key, r, i)...)
		}
		return true
	})
	return out
}

func TestIndexValuesOfObjectsDecodedFromRecordsAreCopies(t *testing.T) {
	// A value computed from an object decoded out of a stored record must not
	// point into the decoder's bytes, or the store keeps all of them: a
	// snapshot's restore, BuildIndex and AddIndexers on a filled store.
	pods := make([]any, 40)
	for i := range pods {
		p := fullPod(fmt.Sprintf("ns-%d", i%4), fmt.Sprintf("pod-%d", i), fmt.Sprint(10+i))
		p.Spec.NodeName = fmt.Sprintf("node-%d", i%3)
		pods[i] = p
	}
	check := func(t *testing.T, c *scratchCodec, ix *Indexer, wantIndexes int) {
		t.Helper()
		held := heldValues(ix)
		if len(held) != wantIndexes {
			t.Fatalf("indexes with values: %d (%v), want %d", len(held), held, wantIndexes)
		}
		for name, vals := range held {
			if len(vals) != len(pods) {
				t.Fatalf("index %s holds %d values, want %d", name, len(vals), len(pods))
			}
			for _, v := range vals {
				if c.pointsInto(v) {
					t.Fatalf("index %s keeps %q pointing into the bytes a record was decoded into", name, v)
				}
			}
		}
	}

	t.Run("restore", func(t *testing.T) {
		c := &scratchCodec{StorageCodec: podCodec(t)}
		ix := NewIndexerWithOptions(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{
			toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc, "node": nodeNameIndex}, IndexerOptions{Codec: c})
		recs := make([]snapshotRecord, len(pods))
		for i, p := range pods {
			data, err := c.Encode(p)
			must(t, err)
			key, _ := toolscache.MetaNamespaceKeyFunc(p)
			recs[i] = snapshotRecord{key: key, data: data}
		}
		restored, err := ix.restoreAll(recs)
		must(t, err)
		for _, e := range restored {
			if c.pointsInto(e.namespace) || c.pointsInto(e.rv) || c.pointsInto(string(e.uid)) {
				t.Fatalf("restored %s keeps its namespace, resourceVersion or uid in the decoder's bytes", e.key)
			}
			if c.pointsInto(e.key) {
				t.Fatalf("restored %s keeps its key (and so its keyed namespace value) in the decoder's bytes", e.key)
			}
			// The values the store files the record under (Indexer.stored);
			// none for the keyed namespace index, derived from the key.
			for i, name := range e.vals.funcs.names {
				vals := e.vals.filed(i)
				if e.vals.funcs.keyed[i] {
					if vals != nil {
						t.Fatalf("restored %s has values %q in the keyed index %s, want none", e.key, vals, name)
					}
					continue
				}
				if len(vals) != 1 {
					t.Fatalf("restored %s has values %q in index %s, want one", e.key, vals, name)
				}
				if c.pointsInto(vals[0]) {
					t.Fatalf("restored %s keeps %q of index %s in the decoder's bytes", e.key, vals[0], name)
				}
			}
		}
		if len(c.bufs) != len(pods) {
			t.Fatalf("%d decodes, want one per record (%d)", len(c.bufs), len(pods))
		}
	})

	t.Run("BuildIndex", func(t *testing.T) {
		c := &scratchCodec{StorageCodec: podCodec(t)}
		ix := NewIndexerWithOptions(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{
			toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}, IndexerOptions{Codec: c})
		must(t, ix.Replace(pods, "100"))
		must(t, ix.BuildIndex(t.Context(), "node", nodeNameIndex, BuildIndexOptions{}))
		check(t, c, ix, 2)
	})

	t.Run("AddIndexers", func(t *testing.T) {
		c := &scratchCodec{StorageCodec: podCodec(t)}
		ix := NewIndexerWithOptions(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{
			"node": nodeNameIndex}, IndexerOptions{Codec: c})
		must(t, ix.Replace(pods, "100"))
		// The namespace by a function of its own: not keyed, its values are
		// kept in the records (a keyed index's are the keys' own prefixes).
		must(t, ix.AddIndexers(toolscache.Indexers{"ns": func(obj any) ([]string, error) {
			return []string{obj.(*corev1.Pod).Namespace}, nil
		}}))
		check(t, c, ix, 2)
		// Equal values share one copy.
		vals := heldValues(ix)["ns"]
		distinct := map[uintptr]bool{}
		for _, v := range vals {
			distinct[uintptr(unsafe.Pointer(unsafe.StringData(v)))] = true
		}
		if len(distinct) != 4 {
			t.Fatalf("namespace values of 40 pods in 4 namespaces held in %d copies, want 4", len(distinct))
		}
	})
}
