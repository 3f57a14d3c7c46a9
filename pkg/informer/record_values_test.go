package informer

import (
	"strings"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// TestRecordsOfOneValueShareItsString: the namespace of each object decoded
// from the API server is a string of its own; the store keeps one string per
// indexed value (the bucket's key), not one per record.
func TestRecordsOfOneValueShareItsString(t *testing.T) {
	// An index of the namespace by a function of its own: not keyed (the
	// Indexer keeps its values in records).
	ix := NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{"ns": func(obj any) ([]string, error) {
		return []string{obj.(*corev1.Pod).Namespace}, nil
	}})
	for _, name := range []string{"a", "b", "c"} {
		// strings.Clone: a namespace of its own bytes, as a decoder makes it.
		must(t, ix.Add(pod(strings.Clone("shop"), name, "1")))
	}
	b := ix.beginBatch(0)
	b.put("shop/d", pod(strings.Clone("shop"), "d", "2"))
	b.commit()
	t0 := ix.table.Load()
	first := unsafe.StringData(t0.funcs.filed("shop/a", t0.get("shop/a"), 0)[0])
	for _, key := range []string{"shop/b", "shop/c", "shop/d"} {
		got := t0.funcs.filed(key, t0.get(key), 0)
		if len(got) != 1 || got[0] != "shop" {
			t.Fatalf("%s filed under %q, want [shop]", key, got)
		}
		if unsafe.StringData(got[0]) != first {
			t.Errorf("%s keeps a namespace string of its own, want the one of shop/a (the bucket's key)", key)
		}
	}
	// A value that changes to one the index has is shared too; the values
	// that stay are kept.
	must(t, ix.Update(pod(strings.Clone("shop"), "a", "3")))
	t1 := ix.table.Load()
	if got := t1.funcs.filed("shop/a", t1.get("shop/a"), 0); unsafe.StringData(got[0]) != first {
		t.Errorf("an update of shop/a changed its namespace string")
	}
}

// TestRecordAndItsValuesAreOneAllocation: allocRecord gives the record and
// room for its values in one object up to eight values, a slice beside it
// above; the values are the record's own (newRecord copies an unchanged
// record's values instead of sharing them, which would keep the old record,
// and its bytes, alive).
func TestRecordAndItsValuesAreOneAllocation(t *testing.T) {
	for size, want := range map[int]float64{0: 1, 1: 1, 2: 1, 3: 1, 4: 1, 6: 1, 8: 1, 9: 2, 12: 2} {
		var r *record
		allocs := testing.AllocsPerRun(100, func() { r = allocRecord(size) })
		if allocs != want {
			t.Errorf("size %d: %v allocations, want %v", size, allocs, want)
		}
		if len(r.vals) != size || (size == 0 && r.vals != nil) {
			t.Errorf("size %d: vals %q", size, r.vals)
		}
	}
	funcs := newIndexFuncs(toolscache.Indexers{"a": nil, "b": nil}, nil, false)
	vals := indexValues{funcs: funcs, values: [][]string{{"x"}, {"y"}}}
	old, changed := newRecord(nil, []byte("1"), nil, vals, nil)
	if !changed {
		t.Fatal("a first record's values count as changed")
	}
	rec, changed := newRecord(nil, []byte("2"), old, vals, nil)
	if changed {
		t.Fatal("the same values count as changed")
	}
	if &rec.vals[0] == &old.vals[0] {
		t.Error("an unchanged record shares its predecessor's values")
	}
	if got := funcs.filed("", rec, 1); len(got) != 1 || got[0] != "y" {
		t.Errorf("index b: %q, want [y]", got)
	}
}
