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
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/deltacache/deltacache/pkg/informer"
)

// Figure IDs of the store workload.
const (
	FigWrites0   = "writes_per_s_0_readers"
	FigWrites10  = "writes_per_s_10_readers"
	FigReadLists = "lists_per_s_10_readers"
)

// NewPipelineStore returns contender's Indexer (the informer's store) with the
// namespace and label:app indexes: pkg/informer's for Deltacache, client-go's for
// ClientGo.
func NewPipelineStore(c Contender) (toolscache.Indexer, error) {
	switch c {
	case Deltacache:
		return informer.NewIndexer(toolscache.MetaNamespaceKeyFunc, PodIndexers()), nil
	case ClientGo:
		return toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, PodIndexers()), nil
	default:
		return nil, fmt.Errorf("contender %q has no store of its own", c)
	}
}

// MeasureStoreWrites fills contender's store with keys pods, then for duration each
// updates them round-robin (each write a fresh shallow copy with a new
// resourceVersion) with 0 and then with readers goroutines calling List in a loop,
// and reports writes per second for both and the readers' Lists per second.
func MeasureStoreWrites(c Contender, keys, readers int, duration time.Duration) (Values, error) {
	store, err := NewPipelineStore(c)
	if err != nil {
		return nil, err
	}
	pods := ServerPods(NewLayout(keys))
	for i := range pods {
		if err := store.Add(&pods[i]); err != nil {
			return nil, err
		}
	}
	rv := keys
	v := Values{}
	for _, r := range []int{0, readers} {
		writes, lists, err := timedWrites(store, pods, &rv, r, duration)
		if err != nil {
			return nil, err
		}
		if r == 0 {
			v.add(FigWrites0, writes)
		} else {
			v.add(FigWrites10, writes)
			v.add(FigReadLists, lists)
		}
	}
	return v, nil
}

// timedWrites updates store for duration while readers goroutines List it, and returns
// writes and Lists per second.
func timedWrites(
	store toolscache.Indexer, pods []corev1.Pod, rv *int, readers int, duration time.Duration,
) (float64, float64, error) {
	stop := make(chan struct{})
	var lists atomic.Int64
	var wg sync.WaitGroup
	for range readers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = store.List()
				lists.Add(1)
			}
		})
	}
	start := time.Now()
	deadline := start.Add(duration)
	writes := 0
	var err error
	for time.Now().Before(deadline) {
		p := new(corev1.Pod)
		*p = pods[writes%len(pods)]
		*rv++
		p.ResourceVersion = strconv.Itoa(*rv)
		if err = store.Update(p); err != nil {
			break
		}
		writes++
	}
	elapsed := time.Since(start).Seconds()
	close(stop)
	wg.Wait()
	return float64(writes) / elapsed, float64(lists.Load()) / elapsed, err
}
