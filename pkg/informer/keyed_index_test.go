package informer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// namespaceByFunc is toolscache.MetaNamespaceIndexFunc behind a function of
// its own: an index of it is not keyed (its values are computed and kept).
func namespaceByFunc(obj any) ([]string, error) { return toolscache.MetaNamespaceIndexFunc(obj) }

// TestKeyedNamespaceIndexAnswersAsTheFunctionItDerives: an Indexer whose
// namespace index is keyed (toolscache.MetaNamespaceIndexFunc with
// "<namespace>/<name>" keys: the value derived from the key, neither computed
// nor kept per record) answers every read of that index exactly as one that
// computes and keeps the values, through adds, updates, deletes, batches,
// Replace, and keyed indexes added (AddIndexers, BuildIndex) and removed.
func TestKeyedNamespaceIndexAnswersAsTheFunctionItDerives(t *testing.T) {
	seed := testSeed(t)
	t.Logf("seed %d (INFORMER_TEST_SEED=%d to reproduce)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 17))

	keyed := NewIndexer(toolscache.DeletionHandlingMetaNamespaceKeyFunc, toolscache.Indexers{
		toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc, "label:app": plainLabel("app"),
	})
	computed := NewIndexer(toolscache.DeletionHandlingMetaNamespaceKeyFunc, toolscache.Indexers{
		toolscache.NamespaceIndex: namespaceByFunc, "label:app": plainLabel("app"),
	})
	if f := keyed.table.Load().funcs; !f.keyed[1] || len(f.storedIndex) != 1 {
		t.Fatalf("keyed Indexer: keyed %v, %d indexes kept in records; want the namespace index keyed", f.keyed, len(f.storedIndex))
	}
	if f := computed.table.Load().funcs; slices.Contains(f.keyed, true) {
		t.Fatalf("an index of another function is keyed: %v", f.keyed)
	}
	// Keys of another shape: never keyed.
	if f := NewIndexer(func(obj any) (string, error) { return "x", nil }, toolscache.Indexers{
		toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}).table.Load().funcs; f.keyed[0] {
		t.Fatal("a namespace index keyed over keys of another key function")
	}

	namespaces := []string{"", "a", "b", "ab"} // "": cluster-scoped; "a" is a prefix of "ab"
	object := func(i int) any {
		ns := namespaces[i%len(namespaces)]
		labels := map[string]string{}
		if v := rng.IntN(3); v < 2 {
			labels["app"] = []string{"x", "y"}[v]
		}
		m := metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("o%d", i), Labels: labels,
			ResourceVersion: fmt.Sprint(rng.IntN(1000))}
		if ns == "" {
			return &corev1.Node{ObjectMeta: m}
		}
		return &corev1.Pod{ObjectMeta: m}
	}
	both := []*Indexer{keyed, computed}
	write := func(steps int) {
		for range steps {
			obj, op := object(rng.IntN(40)), rng.IntN(10)
			for _, ix := range both {
				var err error
				switch {
				case op == 0:
					err = ix.Delete(obj)
				case op == 1:
					w := ix.beginBatch(2) // a batch: the object and a neighbour
					if err = w.put(mustKey(t, obj), obj); err == nil {
						w.remove("b/o2")
					}
					w.commit()
				default:
					err = ix.Update(obj)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	asked := append(slices.Clone(namespaces), "other", "a/")
	compare := func(round string, names ...string) {
		t.Helper()
		for _, name := range names {
			gv, ge, gok := keyed.IndexStats(name)
			wv, we, wok := computed.IndexStats(name)
			if gv != wv || ge != we || gok != wok {
				t.Fatalf("%s: IndexStats(%s) = %d, %d, %v; want %d, %d, %v", round, name, gv, ge, gok, wv, we, wok)
			}
			sameIndexReads(t, round, keyed, computed, indexReads{name: name, asked: asked, objects: 40, object: object,
				candidate: "b", filed: []IndexValue{{Index: "label:app", Value: "x"}}})
		}
		if g, w := keysSorted(keyed.List()), keysSorted(computed.List()); !slices.Equal(g, w) {
			t.Fatalf("%s: List = %v, want %v", round, g, w)
		}
	}
	for round := range 30 {
		write(20)
		compare(fmt.Sprintf("round %d", round), toolscache.NamespaceIndex, "label:app")
	}
	// A record keeps the values of the label index only.
	keyed.table.Load().eachCell(func(e *cell) bool {
		r := e.rec.Load()
		want := len(keyed.table.Load().funcs.filed(e.key, r, 0)) // label:app, sorted first
		if len(r.vals) != want {
			t.Fatalf("%s keeps %d values (%q), want %d: the label's, not the namespace", e.key, len(r.vals), r.vals, want)
		}
		return true
	})

	var list []any
	for i := range 30 {
		list = append(list, object(i))
	}
	for _, ix := range both {
		must(t, ix.Replace(list, "2000"))
	}
	compare("after Replace", toolscache.NamespaceIndex, "label:app")

	// Keyed indexes added to a filled store, and the first one removed.
	must(t, keyed.AddIndexers(toolscache.Indexers{"ns2": toolscache.MetaNamespaceIndexFunc}))
	must(t, computed.AddIndexers(toolscache.Indexers{"ns2": namespaceByFunc}))
	ctx := context.Background()
	must(t, keyed.BuildIndex(ctx, "ns3", toolscache.MetaNamespaceIndexFunc, BuildIndexOptions{}))
	must(t, computed.BuildIndex(ctx, "ns3", namespaceByFunc, BuildIndexOptions{}))
	write(40)
	compare("after AddIndexers and BuildIndex", toolscache.NamespaceIndex, "label:app", "ns2", "ns3")
	must(t, keyed.RemoveIndex(ctx, toolscache.NamespaceIndex))
	must(t, computed.RemoveIndex(ctx, toolscache.NamespaceIndex))
	write(40)
	compare("after RemoveIndex", "label:app", "ns2", "ns3")
	if f := keyed.table.Load().funcs; len(f.storedIndex) != 1 || len(f.names) != 3 {
		t.Fatalf("after the changes: %d of %v kept in records, want 1 (label:app)", len(f.storedIndex), f.names)
	}
}

func mustKey(t *testing.T, obj any) string {
	t.Helper()
	k, err := toolscache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func keysSorted(objs []any) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		k, _ := toolscache.MetaNamespaceKeyFunc(o)
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// filed returns the values the record r of key is filed under in index i
// of f (nil: r is nil), a keyed index's derived from key (the store itself
// reads a keyed value only through filedUnder and refileCell).
func (f *indexFuncs) filed(key string, r *record, i int) []string {
	if r == nil {
		return nil
	}
	if f.keyed[i] {
		return []string{keyNamespace(key)}
	}
	return r.vals.of(f.pos[i], len(f.storedIndex))
}
