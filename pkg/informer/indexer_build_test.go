package informer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
)

// buildTestIndexer returns an Indexer of n pods (names p0..p<n-1> in
// namespaces a..e, labels app and tier) with the namespace and app indexes,
// compact when compact.
func buildTestIndexer(t *testing.T, compact bool, n int) *Indexer {
	t.Helper()
	var opts IndexerOptions
	if compact {
		opts.Codec = podCodec(t)
	}
	ix := NewIndexerWithOptions(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{
		toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc,
		appLabel:                  labelIndex(appLabel),
	}, opts)
	for i := range n {
		must(t, ix.Add(churnPod(i, i+1, i%3, i%5)))
	}
	return ix
}

// churnPod is pod number i at resourceVersion rv with app a<app> and tier
// t<tier> (no tier label when tier is 4).
func churnPod(i, rv, app, tier int) any {
	labels := []string{fmt.Sprintf("app=a%d", app)}
	if tier != 4 {
		labels = append(labels, fmt.Sprintf("tier=t%d", tier))
	}
	return pod(string(rune('a'+i%5)), fmt.Sprintf("p%d", i), fmt.Sprint(rv), labels...)
}

// storeModel is what a store must hold: key → "key@rv".
type storeModel map[string]string

// modelOf returns the model of ix's current content.
func modelOf(ix *Indexer) storeModel {
	m := storeModel{}
	for _, obj := range ix.List() {
		m[keyOfObj(obj)] = describe(obj)
	}
	return m
}

// churn makes one random write to ix and m: add or update a pod of
// 0..keys-1 with random labels, or delete one. rv is the write's
// resourceVersion.
func churn(ix *Indexer, m storeModel, rng *rand.Rand, keys, rv int) error {
	i := rng.IntN(keys)
	obj := churnPod(i, rv, rng.IntN(3), rng.IntN(5))
	if rng.IntN(4) == 0 {
		delete(m, keyOfObj(obj))
		return ix.Delete(obj)
	}
	m[keyOfObj(obj)] = describe(obj)
	return ix.Update(obj)
}

// checkModel fails unless ix holds exactly m.
func checkModel(t *testing.T, ix *Indexer, m storeModel) {
	t.Helper()
	if got := modelOf(ix); fmt.Sprint(got) != fmt.Sprint(m) {
		t.Fatalf("store content differs from the writes: %d objects, want %d", len(got), len(m))
	}
}

// indexDump is every index of ix: name → value → sorted keys.
func indexDump(t *testing.T, ix *Indexer) map[string]map[string][]string {
	t.Helper()
	out := map[string]map[string][]string{}
	for name := range ix.GetIndexers() {
		out[name] = map[string][]string{}
		for _, v := range ix.ListIndexFuncValues(name) {
			keys, err := ix.IndexKeys(name, v)
			must(t, err)
			out[name][v] = keys
			if objs := byIndex(t, ix, name, v); len(objs) != len(keys) {
				t.Errorf("ByIndex(%s, %s) read %d objects, IndexKeys has %d", name, v, len(objs), len(keys))
			}
		}
	}
	return out
}

// checkAgainstAddIndexers compares every index of ix with those of a fresh
// Indexer holding ix's objects, built with the original indexes and given
// the others with AddIndexers.
func checkAgainstAddIndexers(t *testing.T, ix *Indexer) {
	t.Helper()
	all := ix.GetIndexers()
	base := toolscache.Indexers{}
	added := toolscache.Indexers{}
	for name, fn := range all {
		if name == toolscache.NamespaceIndex || name == appLabel {
			base[name] = fn
		} else {
			added[name] = fn
		}
	}
	ref := NewIndexer(toolscache.MetaNamespaceKeyFunc, base)
	for _, obj := range ix.List() {
		must(t, ref.Add(obj))
	}
	must(t, ref.AddIndexers(added))
	got, want := indexDump(t, ix), indexDump(t, ref)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("indexes differ from AddIndexers':\n got %v\nwant %v", got, want)
	}
	if ix.Len() != ref.Len() {
		t.Fatalf("Len %d, want %d", ix.Len(), ref.Len())
	}
}

// gatedObjectOf decodes as the Indexer would, and at its gate-th call waits
// until wait returns (the build is then past its snapshot).
func gatedObjectOf(ix *Indexer, gate int64, wait func()) func(string, []byte) (any, error) {
	var calls atomic.Int64
	return func(key string, data []byte) (any, error) {
		if calls.Add(1) == gate {
			wait()
		}
		return ix.decode(key, data)
	}
}

// TestBuildIndexUnderConcurrentWritesEqualsAddIndexers builds the tier
// index while a writer adds, updates (moving pods between tiers, dropping
// and adding the label) and deletes pods, some of them after the build's
// snapshot (the build waits for 300 writes after its 500th object); the
// index then equals one built by AddIndexers over the same objects, and
// writes after the build keep it so. Reproduce with INFORMER_TEST_SEED.
func TestBuildIndexUnderConcurrentWritesEqualsAddIndexers(t *testing.T) {
	seed := testSeed(t)
	t.Logf("seed %d (INFORMER_TEST_SEED=%d to reproduce)", seed, seed)
	for _, compact := range []bool{true, false} {
		t.Run(fmt.Sprintf("compact=%v", compact), func(t *testing.T) {
			const keys = 3000
			ix := buildTestIndexer(t, compact, keys)
			model := modelOf(ix)
			var written atomic.Int64
			enough := make(chan struct{})
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(seed, 1))
				for n := 0; ; n++ {
					select {
					case <-stop:
						return
					default:
					}
					if err := churn(ix, model, rng, keys+200, keys+n+1); err != nil {
						t.Error(err)
					}
					if written.Add(1) == 300 {
						close(enough)
					}
				}
			})
			opts := BuildIndexOptions{}
			wait := func() { <-enough }
			if compact {
				opts.objectOf = gatedObjectOf(ix, 500, wait)
			} else {
				// Decoded records do not call objectOf: gate on Observe.
				var seen atomic.Int64
				opts.Observe = func([]string) error {
					if seen.Add(1) == 500 {
						wait()
					}
					return nil
				}
			}
			must(t, ix.BuildIndex(context.Background(), tierLabel, labelIndex(tierLabel), opts))
			close(stop)
			wg.Wait()
			if written.Load() < 300 {
				t.Fatalf("only %d writes ran during the build", written.Load())
			}
			checkModel(t, ix, model)
			checkAgainstAddIndexers(t, ix)

			rng := rand.New(rand.NewPCG(seed, 2))
			for n := range 500 {
				must(t, churn(ix, model, rng, keys+200, 1_000_000+n))
			}
			checkModel(t, ix, model)
			checkAgainstAddIndexers(t, ix)
			if ix.changes != nil {
				t.Fatal("the change log is still on after the build")
			}
		})
	}
}

// TestRemoveIndexUnderConcurrentWrites drops the app index while a writer
// changes pods: afterwards the index is gone and the others equal
// AddIndexers'.
func TestRemoveIndexUnderConcurrentWrites(t *testing.T) {
	seed := testSeed(t)
	t.Logf("seed %d (INFORMER_TEST_SEED=%d to reproduce)", seed, seed)
	const keys = 2000
	ix := buildTestIndexer(t, true, keys)
	must(t, ix.AddIndexers(toolscache.Indexers{tierLabel: labelIndex(tierLabel)}))
	model := modelOf(ix)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		rng := rand.New(rand.NewPCG(seed, 3))
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := churn(ix, model, rng, keys+200, keys+n+1); err != nil {
				t.Error(err)
			}
		}
	})
	must(t, ix.RemoveIndex(context.Background(), appLabel))
	close(stop)
	wg.Wait()
	checkModel(t, ix, model)
	if _, err := ix.ByIndex(appLabel, "a1"); err == nil {
		t.Fatal("ByIndex of the removed index succeeded")
	}
	if got := slices.Sorted(maps.Keys(ix.GetIndexers())); !slices.Equal(got, []string{toolscache.NamespaceIndex, tierLabel}) {
		t.Fatalf("indexes %v", got)
	}
	ref := NewIndexer(toolscache.MetaNamespaceKeyFunc, ix.GetIndexers())
	for _, obj := range ix.List() {
		must(t, ref.Add(obj))
	}
	if got, want := indexDump(t, ix), indexDump(t, ref); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("indexes differ:\n got %v\nwant %v", got, want)
	}
	if err := ix.RemoveIndex(context.Background(), appLabel); err == nil {
		t.Fatal("removing an absent index succeeded")
	}
}

// TestBuildIndexHoldsTheWriterOnlyForTheCatchUp: while the build computes
// values (here: stopped in its objectOf), a write completes.
func TestBuildIndexHoldsTheWriterOnlyForTheCatchUp(t *testing.T) {
	ix := buildTestIndexer(t, true, 100)
	var blocked atomic.Bool
	opts := BuildIndexOptions{objectOf: gatedObjectOf(ix, 10, func() {
		done := make(chan struct{})
		go func() {
			_ = ix.Add(churnPod(7, 500, 1, 2))
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			blocked.Store(true)
			<-done // let the build go on, the write waits for it
		}
	})}
	must(t, ix.BuildIndex(context.Background(), tierLabel, labelIndex(tierLabel), opts))
	if blocked.Load() {
		t.Fatal("a write waited for the build")
	}
	keys, err := ix.IndexKeys(tierLabel, "t2")
	must(t, err)
	if !slices.Contains(keys, "c/p7") {
		t.Fatalf("c/p7, written during the build, is not filed under tier t2: %v", keys)
	}
	checkAgainstAddIndexers(t, ix)
}

// TestBuildIndexStartsAgainAfterReplace: a Replace during the build
// invalidates its snapshot; the build starts again and the index matches
// the replaced content.
func TestBuildIndexStartsAgainAfterReplace(t *testing.T) {
	ix := buildTestIndexer(t, true, 300)
	var replaced []any
	for i := range 50 {
		replaced = append(replaced, churnPod(i, 900+i, 2, 1))
	}
	var calls atomic.Int64
	opts := BuildIndexOptions{objectOf: func(key string, data []byte) (any, error) {
		if calls.Add(1) == 20 {
			must(t, ix.Replace(replaced, "950"))
		}
		return ix.decode(key, data)
	}}
	must(t, ix.BuildIndex(context.Background(), tierLabel, labelIndex(tierLabel), opts))
	if got := calls.Load(); got != 300+50 {
		t.Fatalf("objectOf called %d times, want 300 (first attempt) + 50 (second)", got)
	}
	if ix.Len() != 50 || ix.LastStoreSyncResourceVersion() != "950" {
		t.Fatalf("Len %d RV %s", ix.Len(), ix.LastStoreSyncResourceVersion())
	}
	checkAgainstAddIndexers(t, ix)
}

// TestBuildIndexStartsAgainAfterAddIndexers: AddIndexers during the build
// changes the index functions; the build starts again and keeps both.
func TestBuildIndexStartsAgainAfterAddIndexers(t *testing.T) {
	ix := buildTestIndexer(t, true, 300)
	var calls atomic.Int64
	opts := BuildIndexOptions{objectOf: func(key string, data []byte) (any, error) {
		if calls.Add(1) == 20 {
			must(t, ix.AddIndexers(toolscache.Indexers{"other": labelIndex(tierLabel)}))
		}
		return ix.decode(key, data)
	}}
	must(t, ix.BuildIndex(context.Background(), tierLabel, labelIndex(tierLabel), opts))
	if got := slices.Sorted(maps.Keys(ix.GetIndexers())); !slices.Equal(got, []string{appLabel, toolscache.NamespaceIndex, "other", tierLabel}) {
		t.Fatalf("indexes %v", got)
	}
	checkAgainstAddIndexers(t, ix)
}

// TestBuildIndexAbandonedByObserveLeavesTheStoreAsItWas: Observe's error is
// BuildIndex's, the index is not added and writes go on as before.
func TestBuildIndexAbandonedByObserveLeavesTheStoreAsItWas(t *testing.T) {
	ix := buildTestIndexer(t, true, 300)
	before := ix.table.Load()
	errUnique := errors.New("values are unique")
	var n int
	err := ix.BuildIndex(context.Background(), tierLabel, labelIndex(tierLabel), BuildIndexOptions{
		Observe: func([]string) error {
			if n++; n == 100 {
				return errUnique
			}
			return nil
		},
	})
	if !errors.Is(err, errUnique) {
		t.Fatalf("BuildIndex returned %v, want %v", err, errUnique)
	}
	if ix.table.Load() != before || ix.changes != nil {
		t.Fatal("the abandoned build changed the store or left its change log on")
	}
	if _, err := ix.ByIndex(tierLabel, "t1"); err == nil {
		t.Fatal("the abandoned index exists")
	}
	must(t, ix.Add(churnPod(1, 2000, 1, 1)))
}

// TestBuildIndexErrors: an existing name, and a context that ended.
func TestBuildIndexErrors(t *testing.T) {
	ix := buildTestIndexer(t, true, 600)
	if err := ix.BuildIndex(context.Background(), appLabel, labelIndex(appLabel), BuildIndexOptions{}); err == nil {
		t.Fatal("building an existing index succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ix.BuildIndex(ctx, tierLabel, labelIndex(tierLabel), BuildIndexOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("BuildIndex with a canceled context returned %v", err)
	}
	if _, err := ix.ByIndex(tierLabel, "t1"); err == nil || ix.changes != nil {
		t.Fatal("a canceled build left an index or its change log")
	}
}

// TestIndexStatsAndCount report the shape of an index without reading it.
func TestIndexStatsAndCount(t *testing.T) {
	ix := buildTestIndexer(t, true, 30)
	values, entries, ok := ix.IndexStats(appLabel)
	if !ok || values != 3 || entries != 30 {
		t.Fatalf("IndexStats(app) = %d, %d, %v; want 3, 30, true", values, entries, ok)
	}
	if got := ix.IndexCount(toolscache.NamespaceIndex, "a"); got != 6 {
		t.Fatalf("IndexCount(namespace, a) = %d, want 6", got)
	}
	if _, _, ok := ix.IndexStats("nope"); ok || ix.IndexCount("nope", "x") != 0 {
		t.Fatal("stats of an absent index")
	}
}

// With LabelsOnly, a compact store's records are not decoded: their labels
// are read from the bytes (counted by the codec wrapper), and the index is
// the one AddIndexers builds from decoded objects.
func TestBuildIndexLabelsOnlyReadsLabelsWithoutDecoding(t *testing.T) {
	ix := buildTestIndexer(t, true, 50)
	counting := &labelCountingCodec{countingCodec: ix.codec.(*countingCodec)}
	ix.codec = counting
	decodedBefore := counting.decodes.Load()
	// Reads only the namespace and a label, through the metadata accessor.
	tierInNamespace := func(obj any) ([]string, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		if v, ok := m.GetLabels()["tier"]; ok {
			return []string{m.GetNamespace() + "/" + v}, nil
		}
		return nil, nil
	}
	must(t, ix.BuildIndex(context.Background(), "tier", tierInNamespace, BuildIndexOptions{LabelsOnly: true}))
	if n := counting.decodes.Load() - decodedBefore; n != 0 {
		t.Errorf("the build decoded %d objects, want 0", n)
	}
	if counting.labelReads != 50 {
		t.Errorf("the build read the labels of %d objects, want 50", counting.labelReads)
	}
	checkAgainstAddIndexers(t, ix)
}
