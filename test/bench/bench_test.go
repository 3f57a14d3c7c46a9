/*
Copyright 2026.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// The benchmarks below are the hot paths of `make bench` as testing.B benchmarks, for
// benchstat: (cd test/bench && go test . -run '^$' -bench . -count 10). Each sub-benchmark is
// named impl=<contender>, so benchstat can also compare the contenders (-col /impl).

var pipelineContenders = []Contender{Deltacache, ClientGo}

// BenchmarkInformerSync measures one initial sync of 10k pods (list in pages of 500 →
// queue → store → one handler), per sync; allocations include the list pages' copies.
func BenchmarkInformerSync(b *testing.B) {
	const n = 10_000
	for _, c := range pipelineContenders {
		b.Run("impl="+string(c), func(b *testing.B) {
			pods := ServerPods(NewLayout(n))
			b.ReportAllocs()
			for b.Loop() {
				ctx, cancel := context.WithCancel(context.Background())
				inf, err := NewPipelineInformer(c, NewMemoryListerWatcher(pods, strconv.Itoa(n+1)))
				if err != nil {
					b.Fatal(err)
				}
				reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(any) {}})
				if err != nil {
					b.Fatal(err)
				}
				go inf.RunWithContext(ctx)
				<-reg.HasSyncedChecker().Done()
				cancel()
			}
		})
	}
}

// BenchmarkPipelineUpdates measures watch updates over 1000 keys through queue → store
// → one handler; ns/op is per update sent, and the run ends when the handler has seen
// every key's last state.
func BenchmarkPipelineUpdates(b *testing.B) {
	const keys = 1000
	for _, c := range pipelineContenders {
		b.Run("impl="+string(c), func(b *testing.B) {
			events := max(b.N, keys)
			final := finalResourceVersions(keys, events)
			var reached atomic.Int64
			done := make(chan struct{})
			observe := func(obj any) {
				p := obj.(*corev1.Pod)
				if p.ResourceVersion == final[p.Generation] && reached.Add(1) == keys {
					close(done)
				}
			}
			ctx := b.Context()
			src, err := startEventSource(ctx, c, keys, toolscache.ResourceEventHandlerFuncs{
				AddFunc: observe, UpdateFunc: func(_, o any) { observe(o) },
			})
			if err != nil {
				b.Fatal(err)
			}
			rvs := resourceVersions(keys, 0, events)
			b.ReportAllocs()
			b.ResetTimer()
			if err := src.send(rvs); err != nil {
				b.Fatal(err)
			}
			<-done
			b.StopTimer()
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkStoreUpdate measures one Indexer update over 10k pods, alone and with 10
// goroutines calling List in a loop.
func BenchmarkStoreUpdate(b *testing.B) {
	for _, readers := range []int{0, 10} {
		for _, c := range pipelineContenders {
			b.Run(fmt.Sprintf("readers=%d/impl=%s", readers, c), func(b *testing.B) {
				store, err := NewPipelineStore(c)
				if err != nil {
					b.Fatal(err)
				}
				pods := ServerPods(NewLayout(10_000))
				for i := range pods {
					_ = store.Add(&pods[i])
				}
				stop := make(chan struct{})
				done := make(chan struct{}, readers)
				for range readers {
					go func() {
						defer func() { done <- struct{}{} }()
						for {
							select {
							case <-stop:
								return
							default:
								_ = store.List()
							}
						}
					}()
				}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					p := new(corev1.Pod)
					*p = pods[i%len(pods)]
					p.ResourceVersion = strconv.Itoa(i + 20_000)
					_ = store.Update(p)
					i++
				}
				close(stop)
				for range readers {
					<-done
				}
			})
		}
	}
}

// BenchmarkCacheReads measures the reads of every cache contender over 10k pods served
// by the in-memory API (one sync per contender, outside the timer).
func BenchmarkCacheReads(b *testing.B) {
	benchmarkReads(b, func(b *testing.B) (CacheWorkload, func()) {
		l := NewLayout(10_000)
		api, err := NewMemoryAPI(ServerPods(l), strconv.Itoa(l.Pods+1))
		if err != nil {
			b.Fatal(err)
		}
		return CacheWorkload{Config: api.Config(), Mapper: api.Mapper(), Layout: l}, func() {}
	})
}

// BenchmarkAPIServerReads is BenchmarkCacheReads against an envtest API server holding
// 2000 pods; it skips without KUBEBUILDER_ASSETS.
func BenchmarkAPIServerReads(b *testing.B) {
	benchmarkReads(b, func(b *testing.B) (CacheWorkload, func()) {
		cp, err := StartControlPlane()
		if errors.Is(err, ErrNoAssets) {
			b.Skip(err.Error())
		}
		if err != nil {
			b.Fatal(err)
		}
		l := NewLayout(2_000)
		if err := SeedPods(context.Background(), cp.Config, l, 16, nil); err != nil {
			_ = cp.Stop()
			b.Fatal(err)
		}
		return CacheWorkload{Config: cp.Config, Layout: l}, func() { _ = cp.Stop() }
	})
}

func benchmarkReads(b *testing.B, setup func(b *testing.B) (CacheWorkload, func())) {
	w, teardown := setup(b)
	defer teardown()
	for _, c := range []Contender{Deltacache, ControllerRuntime, ClientGo} {
		ctx, cancel := context.WithCancel(context.Background())
		cut, err := NewCacheUnderTest(ctx, c, w.Config, w.Mapper)
		if err != nil {
			b.Fatal(err)
		}
		syncCtx, syncCancel := context.WithTimeout(ctx, 5*time.Minute)
		err = cut.Start(syncCtx)
		syncCancel()
		if err != nil {
			b.Fatal(err)
		}
		l := w.Layout
		ns, name := l.Key(l.Pods / 2)
		reads := []struct {
			name string
			op   func() error
		}{
			{"get", func() error { return cut.Get(ctx, ns, name) }},
			{"list-label-namespace", func() error {
				_, err := cut.ListByLabel(ctx, l.AppNamespace(3), l.AppName(3))
				return err
			}},
			{"list-label-all", func() error { _, err := cut.ListByLabel(ctx, "", l.AppName(3)); return err }},
			{"list-field-index", func() error { _, err := cut.ListByNode(ctx, l.NodeName(3)); return err }},
			{"list-namespace", func() error { _, err := cut.ListNamespace(ctx, l.NamespaceName(3)); return err }},
		}
		for _, r := range reads {
			b.Run(fmt.Sprintf("read=%s/impl=%s", r.name, c), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := r.op(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		cancel()
	}
}
