package informer

import (
	"fmt"
	goruntime "runtime"
	"testing"

	toolscache "k8s.io/client-go/tools/cache"
)

// The store, pipeline and initial-sync benchmarks against client-go (writes
// with List readers, watch-event throughput, initial sync) live in test/bench
// (BenchmarkStoreUpdate, BenchmarkPipelineUpdates, BenchmarkInformerSync),
// where `make bench` runs them with the same objects as the other contenders;
// these are the Indexer's own.

// BenchmarkIndexerReplace10k measures a relist's store rebuild.
func BenchmarkIndexerReplace10k(b *testing.B) {
	list := make([]any, 10000)
	for i := range list {
		list[i] = pod(fmt.Sprintf("ns%d", i%20), fmt.Sprintf("p%d", i), "1", fmt.Sprintf("app=a%d", i%50))
	}
	ix := newTestIndexer()
	b.ResetTimer()
	for range b.N {
		_ = ix.Replace(list, "1")
	}
}

// benchStores are our Indexer and client-go's toolscache.NewIndexer (the
// peer) with the namespace and "app" label indexes.
func benchStores() []struct {
	name string
	new  func() toolscache.Indexer
} {
	indexers := toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc,
		appLabel: labelIndex(appLabel)}
	return []struct {
		name string
		new  func() toolscache.Indexer
	}{
		{"deltacache", func() toolscache.Indexer { return NewIndexer(toolscache.MetaNamespaceKeyFunc, indexers) }},
		{clientGoName, func() toolscache.Indexer { return toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, indexers) }},
	}
}

// BenchmarkIndexerReads measures the reads over 10k pods in 20 namespaces
// (ByIndex returns one namespace: 500 pods), ours against client-go's.
func BenchmarkIndexerReads(b *testing.B) {
	pods := make([]any, 10000)
	keys := make([]string, len(pods))
	for i := range pods {
		pods[i] = pod(fmt.Sprintf("ns%d", i%20), fmt.Sprintf("p%d", i), "1", fmt.Sprintf("app=a%d", i%50))
		keys[i] = fmt.Sprintf("ns%d/p%d", i%20, i)
	}
	namespaces := make([]string, 20)
	for i := range namespaces {
		namespaces[i] = fmt.Sprintf("ns%d", i)
	}
	for _, st := range benchStores() {
		ix := st.new()
		if err := ix.Replace(pods, "1"); err != nil {
			b.Fatal(err)
		}
		b.Run("GetByKey/store="+st.name, func(b *testing.B) {
			for i := range b.N {
				if _, ok, _ := ix.GetByKey(keys[i%len(keys)]); !ok {
					b.Fatal("missing")
				}
			}
		})
		b.Run("ByIndex/store="+st.name, func(b *testing.B) {
			for i := range b.N {
				if objs, _ := ix.ByIndex(toolscache.NamespaceIndex, namespaces[i%20]); len(objs) != 500 {
					b.Fatalf("ByIndex returned %d", len(objs))
				}
			}
		})
		b.Run("List/store="+st.name, func(b *testing.B) {
			for range b.N {
				if len(ix.List()) != len(pods) {
					b.Fatal("List lost objects")
				}
			}
		})
	}
}

// BenchmarkIndexerMemoryPerObject reports the heap a store of 10k pods
// holds on top of the pods themselves (map, indexes, bookkeeping), ours
// against client-go's, as B/object.
func BenchmarkIndexerMemoryPerObject(b *testing.B) {
	const n = 10000
	pods := make([]any, n)
	for i := range pods {
		pods[i] = pod(fmt.Sprintf("ns%d", i%20), fmt.Sprintf("p%d", i), "1", fmt.Sprintf("app=a%d", i%50))
	}
	for _, st := range benchStores() {
		b.Run("store="+st.name, func(b *testing.B) {
			var perObject float64
			for range b.N {
				var before, after goruntime.MemStats
				goruntime.GC()
				goruntime.ReadMemStats(&before)
				ix := st.new()
				for _, p := range pods {
					_ = ix.Add(p)
				}
				goruntime.GC()
				goruntime.ReadMemStats(&after)
				perObject = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
				goruntime.KeepAlive(ix)
			}
			b.ReportMetric(perObject, "B/object")
		})
	}
}
