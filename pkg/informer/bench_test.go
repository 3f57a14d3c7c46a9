package informer

import (
	"context"
	"fmt"
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

// BenchmarkIndexerWrite measures store writes over 10k pods (namespace and
// label indexes) while 0 or 10 goroutines List the store in a loop; compare
// with client-go's ≈118k / ≈74 updates/s (anchor-client-go.md §8.3).
func BenchmarkIndexerWrite(b *testing.B) {
	for _, readers := range []int{0, 10} {
		b.Run(fmt.Sprintf("readers=%d", readers), func(b *testing.B) {
			ix := newTestIndexer()
			pods := make([]*corev1.Pod, 10000)
			for i := range pods {
				pods[i] = pod(fmt.Sprintf("ns%d", i%20), fmt.Sprintf("p%d", i), "1", fmt.Sprintf("app=a%d", i%50))
				_ = ix.Add(pods[i])
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
							_ = ix.List()
							lists.Add(1)
						}
					}
				})
			}
			b.ResetTimer()
			for i := range b.N {
				p := pods[i%len(pods)].DeepCopy()
				p.ResourceVersion = strconv.Itoa(i + 2)
				_ = ix.Update(p)
			}
			b.StopTimer()
			close(stop)
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
			if readers > 0 {
				b.ReportMetric(float64(lists.Load())/b.Elapsed().Seconds(), "lists/s")
			}
		})
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
	s := NewSharedIndexInformer(f, &corev1.Pod{}, Options{Indexers: toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}})
	var handled atomic.Int64
	_, _ = s.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { handled.Add(1) },
		UpdateFunc: func(any, any) { handled.Add(1) },
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
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
