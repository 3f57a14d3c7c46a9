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

// plainLabel is a namespace-scoped index's function: the plain value of label
// key, nothing without it.
func plainLabel(key string) toolscache.IndexFunc {
	return func(obj any) ([]string, error) {
		m := obj.(metav1.Object)
		v, ok := m.GetLabels()[key]
		if !ok {
			return nil, nil
		}
		return []string{v}, nil
	}
}

// layoutLabel is the same index as controller-runtime files it: "<ns>/<v>" and
// "__all_namespaces/<v>" (only the latter for a cluster-scoped object).
func layoutLabel(key string) toolscache.IndexFunc {
	plain := plainLabel(key)
	return func(obj any) ([]string, error) {
		values, _ := plain(obj)
		if len(values) == 0 {
			return nil, nil
		}
		ns := obj.(metav1.Object).GetNamespace()
		if ns == "" {
			return []string{allNamespacesPrefix + values[0]}, nil
		}
		return []string{ns + "/" + values[0], allNamespacesPrefix + values[0]}, nil
	}
}

// A namespace-scoped index answers every read exactly as the same index filed
// in controller-runtime's layout: ByIndex, IndexKeys, IndexCount,
// ListIndexFuncValues, Index, Select (candidates and filed values) and the
// function GetIndexers returns, after random adds, updates (values that move
// between namespaces' objects) and deletes of namespaced and cluster-scoped
// objects, and after AddIndexers and BuildIndex add scoped indexes to a
// filled store. Reproduce with INFORMER_TEST_SEED=<seed>.
func TestNamespaceScopedIndexAnswersAsControllerRuntimesLayout(t *testing.T) {
	seed := testSeed(t)
	t.Logf("seed %d (INFORMER_TEST_SEED=%d to reproduce)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 11))

	scopedNames := func(name string) bool { return name != toolscache.NamespaceIndex }
	scoped := NewIndexerWithOptions(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{
		toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc, "label:app": plainLabel("app"),
	}, IndexerOptions{NamespaceScoped: scopedNames})
	layout := NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{
		toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc, "label:app": layoutLabel("app"),
	})
	namespaces := []string{"", "a", "b", "ab"} // "a" is a prefix of "ab": a namespace is matched whole
	values := []string{"x", "y", "", "a/x"}    // "" and a value holding a slash are values too
	object := func(i int) any {
		ns := namespaces[i%len(namespaces)]
		labels := map[string]string{}
		if v := rng.IntN(len(values) + 1); v < len(values) {
			labels["app"] = values[v]
		}
		if v := rng.IntN(len(values) + 1); v < len(values) {
			labels["tier"] = values[v]
		}
		meta := metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("o%d", i), Labels: labels,
			ResourceVersion: fmt.Sprint(rng.IntN(1000))}
		if ns == "" {
			return &corev1.Node{ObjectMeta: meta}
		}
		return &corev1.Pod{ObjectMeta: meta}
	}
	write := func(steps int) {
		for range steps {
			i := rng.IntN(40)
			obj, del := object(i), rng.IntN(5) == 0
			for _, ix := range []*Indexer{scoped, layout} {
				var err error
				if del {
					err = ix.Delete(obj)
				} else {
					err = ix.Update(obj)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	// asked are the values a reader may ask, in the layout, and some no index holds.
	var asked []string
	for _, v := range values {
		asked = append(asked, allNamespacesPrefix+v, "other/"+v, v)
		for _, ns := range namespaces[1:] {
			asked = append(asked, ns+"/"+v)
		}
	}
	asked = append(asked, "/x", "__all_namespaces", "")
	compare := func(round string, names ...string) {
		t.Helper()
		for _, name := range names {
			sameIndexReads(t, round, scoped, layout, indexReads{name: name, asked: asked, objects: 40, object: object,
				candidate: allNamespacesPrefix + "y"})
			for i := range 40 {
				obj := object(i)
				fnGot, _ := scoped.GetIndexers()[name](obj)
				fnWant, _ := layout.GetIndexers()[name](obj)
				if !slices.Equal(fnGot, fnWant) {
					t.Fatalf("%s: GetIndexers()[%s](o%d) = %q, want %q", round, name, i, fnGot, fnWant)
				}
			}
		}
	}
	for round := range 30 {
		write(20)
		compare(fmt.Sprintf("round %d", round), "label:app")
	}
	// Indexes added to a filled store are scoped as the option says.
	if err := scoped.AddIndexers(toolscache.Indexers{"label:tier": plainLabel("tier")}); err != nil {
		t.Fatal(err)
	}
	if err := layout.AddIndexers(toolscache.Indexers{"label:tier": layoutLabel("tier")}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := scoped.BuildIndex(ctx, "label:tier2", plainLabel("tier"), BuildIndexOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := layout.BuildIndex(ctx, "label:tier2", layoutLabel("tier"), BuildIndexOptions{}); err != nil {
		t.Fatal(err)
	}
	for round := range 10 {
		write(20)
		compare(fmt.Sprintf("after AddIndexers and BuildIndex, round %d", round), "label:app", "label:tier", "label:tier2")
	}
	// Removing an index keeps the others as they were.
	for _, ix := range []*Indexer{scoped, layout} {
		if err := ix.RemoveIndex(ctx, "label:tier"); err != nil {
			t.Fatal(err)
		}
	}
	write(20)
	compare("after RemoveIndex", "label:app", "label:tier2", toolscache.NamespaceIndex)
	// The scoped store holds one entry per object and value; the layout one more for
	// each namespaced object (its "<ns>/<v>").
	labelled, namespaced := 0, 0
	for _, obj := range scoped.List() {
		m := obj.(metav1.Object)
		if _, ok := m.GetLabels()["app"]; ok {
			labelled++
			if m.GetNamespace() != "" {
				namespaced++
			}
		}
	}
	_, scopedEntries, _ := scoped.IndexStats("label:app")
	_, layoutEntries, _ := layout.IndexStats("label:app")
	if namespaced == 0 || scopedEntries != labelled || layoutEntries != labelled+namespaced {
		t.Errorf("entries: scoped %d, layout %d; want %d and %d (%d labelled objects, %d namespaced)",
			scopedEntries, layoutEntries, labelled, labelled+namespaced, labelled, namespaced)
	}
}

// indexReads names what sameIndexReads asks of an index: each value of asked
// (ByIndex, IndexKeys, IndexCount, and Select of candidates {value,
// candidate} filed under the value and filed), and Index of object(i) for i
// below objects.
type indexReads struct {
	name      string
	asked     []string
	candidate string
	filed     []IndexValue
	objects   int
	object    func(i int) any
}

// sameIndexReads fails t unless got answers every read r names, and
// ListIndexFuncValues, as want does (keys compared, sorted).
func sameIndexReads(t *testing.T, round string, got, want *Indexer, r indexReads) {
	t.Helper()
	name := r.name
	g, w := got.ListIndexFuncValues(name), want.ListIndexFuncValues(name)
	slices.Sort(g)
	slices.Sort(w)
	if !slices.Equal(g, w) {
		t.Fatalf("%s: ListIndexFuncValues(%s) = %q, want %q", round, name, g, w)
	}
	for _, v := range r.asked {
		gObjs, err1 := got.ByIndex(name, v)
		wObjs, err2 := want.ByIndex(name, v)
		if err1 != nil || err2 != nil || !slices.Equal(keysSorted(gObjs), keysSorted(wObjs)) {
			t.Fatalf("%s: ByIndex(%s, %q) = %v (%v), want %v (%v)", round, name, v, keysSorted(gObjs), err1, keysSorted(wObjs), err2)
		}
		gKeys, _ := got.IndexKeys(name, v)
		if wKeys, _ := want.IndexKeys(name, v); !slices.Equal(gKeys, wKeys) {
			t.Fatalf("%s: IndexKeys(%s, %q) = %v, want %v", round, name, v, gKeys, wKeys)
		}
		if g, w := got.IndexCount(name, v), want.IndexCount(name, v); g != w {
			t.Fatalf("%s: IndexCount(%s, %q) = %d, want %d", round, name, v, g, w)
		}
		cands := Candidates{Index: name, Values: []string{v, r.candidate}}
		sel := Selection{Filed: append([]IndexValue{{Index: name, Value: v}}, r.filed...)}
		gObjs, err1 = got.Select(cands, sel)
		wObjs, err2 = want.Select(cands, sel)
		if err1 != nil || err2 != nil || !slices.Equal(keysSorted(gObjs), keysSorted(wObjs)) {
			t.Fatalf("%s: Select(%s, %q) = %v (%v), want %v (%v)", round, name, v, keysSorted(gObjs), err1, keysSorted(wObjs), err2)
		}
	}
	for i := range r.objects {
		obj := r.object(i)
		gObjs, err1 := got.Index(name, obj)
		wObjs, err2 := want.Index(name, obj)
		if err1 != nil || err2 != nil || !slices.Equal(keysSorted(gObjs), keysSorted(wObjs)) {
			t.Fatalf("%s: Index(%s, o%d) = %v, want %v", round, name, i, keysSorted(gObjs), keysSorted(wObjs))
		}
	}
}
