package informer

import (
	"context"
	"fmt"
	goruntime "runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/deltacache/deltacache/pkg/informer/informertest"
)

// BenchmarkStoreWritesWithListReaders measures store updates over 10k pods
// (namespace and label indexes) while 0 or 10 goroutines List the whole
// store in a loop (DESIGN.md invariant 6), for our Indexer and, in the same
// run, client-go's toolscache.NewIndexer as the peer. It reports writes/s
// (and lists/s), then logs the ratios: readers=10 against readers=0 per
// store, and ours against client-go's. client-go's figures on this machine
// class were ≈118k / ≈74 writes/s (anchor-client-go.md §8.3).
//
// The ceiling: with 10 busy readers and GOMAXPROCS=2, Go's scheduler gives
// each of the 11 runnable goroutines an equal share, so a writer that never
// waits for a lock still gets only about 2/11 of the CPU it has alone. Our
// reads take no lock, and a read of ≥1024 objects yields its processor once
// (yieldAfter), which gives the writer back most of a processor; the rest
// is the readers' CPU and the garbage collection of their result slices.
// Run with -v for the ratios.
func BenchmarkStoreWritesWithListReaders(b *testing.B) {
	indexers := toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc,
		appLabel: labelIndex(appLabel)}
	stores := []struct {
		name string
		new  func() toolscache.Indexer
	}{
		{"deltacache", func() toolscache.Indexer { return NewIndexer(toolscache.MetaNamespaceKeyFunc, indexers) }},
		{clientGoName, func() toolscache.Indexer { return toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, indexers) }},
	}
	const objects = 10000
	// Two versions of every pod, so each write replaces the stored object;
	// every tenth moves to another app label.
	versions := [2][]*corev1.Pod{make([]*corev1.Pod, objects), make([]*corev1.Pod, objects)}
	for i := range objects {
		ns, name := fmt.Sprintf("ns%d", i%20), fmt.Sprintf("p%d", i)
		versions[0][i] = pod(ns, name, "1", fmt.Sprintf("app=a%d", i%50))
		app := i % 50
		if i%10 == 0 {
			app = (app + 1) % 50
		}
		versions[1][i] = pod(ns, name, "2", fmt.Sprintf("app=a%d", app))
	}
	rates := map[string]float64{}
	for _, readers := range []int{0, 10} {
		for _, st := range stores {
			name := fmt.Sprintf("readers=%d/store=%s", readers, st.name)
			b.Run(name, func(b *testing.B) {
				ix := st.new()
				for _, p := range versions[0] {
					_ = ix.Add(p)
				}
				stop := make(chan struct{})
				var wg sync.WaitGroup
				var lists atomic.Int64
				for range readers {
					wg.Go(func() {
						for {
							select {
							case <-stop:
								return
							default:
								if len(ix.List()) != objects {
									panic("List lost objects")
								}
								lists.Add(1)
							}
						}
					})
				}
				b.ResetTimer()
				for i := range b.N {
					_ = ix.Update(versions[(i/objects+1)%2][i%objects])
				}
				b.StopTimer()
				close(stop)
				wg.Wait()
				rate := float64(b.N) / b.Elapsed().Seconds()
				rates[name] = rate
				b.ReportMetric(rate, "writes/s")
				if readers > 0 {
					b.ReportMetric(float64(lists.Load())/b.Elapsed().Seconds(), "lists/s")
				}
			})
		}
	}
	for _, st := range stores {
		r0, r10 := rates["readers=0/store="+st.name], rates["readers=10/store="+st.name]
		if r0 > 0 && r10 > 0 {
			b.Logf("%s: %.0f writes/s alone, %.0f with 10 List readers (%.3f of alone)", st.name, r0, r10, r10/r0)
		}
	}
	for _, readers := range []string{"0", "10"} {
		ours, peer := rates["readers="+readers+"/store=deltacache"], rates["readers="+readers+"/store=client-go"]
		if ours > 0 && peer > 0 {
			b.Logf("readers=%s: deltacache/client-go = %.2f", readers, ours/peer)
		}
	}
}

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

// BenchmarkPipeline measures watch events per second through Reflector →
// DeltaFIFO → Indexer → one handler, over 1000 keys.
func BenchmarkPipeline(b *testing.B) {
	f := informertest.New(&corev1.Pod{})
	f.ScriptList(informertest.ListResponse{ResourceVersion: "1"})
	f.ScriptWatch(informertest.WatchResponse{})
	s := NewSharedIndexInformer(f, &corev1.Pod{},
		Options{Indexers: toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}})
	var handled atomic.Int64
	_, _ = s.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { handled.Add(1) },
		UpdateFunc: func(any, any) { handled.Add(1) },
	})
	ctx := b.Context()
	go s.RunWithContext(ctx)
	stream, err := f.WaitForWatch(ctx, 0)
	if err != nil {
		b.Fatal(err)
	}
	objs := make([]runtime.Object, b.N)
	for i := range objs {
		objs[i] = pod("a", fmt.Sprintf("p%d", i%1000), strconv.Itoa(i+2))
	}
	b.ResetTimer()
	for i, o := range objs {
		if i < 1000 {
			stream.Add(o)
		} else {
			stream.Modify(o)
		}
	}
	last := strconv.Itoa(b.N + 1)
	for s.Indexer().LastStoreSyncResourceVersion() != last {
		time.Sleep(50 * time.Microsecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
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

// syncHeapKeep keeps the last synced informer of BenchmarkInitialSync alive
// until the benchmark ends, so that -memprofile shows what it retains.
var syncHeapKeep *SharedIndexInformer

// BenchmarkInitialSync measures one initial sync of 10k pods (one LIST page
// → DeltaFIFO → Indexer with the namespace and "app" indexes → one handler,
// until the handler's registration has synced), and reports the live heap
// the synced informer holds beyond the pods themselves, as B/pod. Run with
// -memprofile to see what a synced informer retains (the last one is kept).
func BenchmarkInitialSync(b *testing.B) {
	const n = 10000
	items := make([]runtime.Object, n)
	for i := range items {
		items[i] = pod(fmt.Sprintf("ns%d", i%20), fmt.Sprintf("p%d", i), strconv.Itoa(i+1),
			fmt.Sprintf("app=a%d", i%200))
	}
	indexers := toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc,
		appLabel: labelIndex(appLabel)}
	var heap float64
	b.ReportAllocs()
	for b.Loop() {
		var before, after goruntime.MemStats
		syncHeapKeep = nil
		goruntime.GC()
		goruntime.ReadMemStats(&before)
		f := informertest.New(&corev1.Pod{})
		f.ScriptList(informertest.ListResponse{Items: items, ResourceVersion: strconv.Itoa(n + 1)})
		f.ScriptWatch(informertest.WatchResponse{})
		s := NewSharedIndexInformer(f, &corev1.Pod{}, Options{Indexers: indexers, DisableWatchList: true})
		reg, err := s.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(any) {}})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(b.Context())
		stopped := make(chan struct{})
		go func() {
			s.RunWithContext(ctx)
			close(stopped)
		}()
		<-reg.HasSyncedChecker().Done()
		goruntime.GC()
		goruntime.ReadMemStats(&after)
		heap = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
		syncHeapKeep = s
		cancel()
		<-stopped // the next round's baseline must not include this informer's goroutines
	}
	b.ReportMetric(heap, "heap-B/pod")
}
