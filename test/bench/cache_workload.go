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
	"fmt"
	"math/rand/v2"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
)

// Values holds a workload's figures: figure ID → one value per repetition.
type Values map[string][]float64

func (v Values) add(id string, x float64) { v[id] = append(v[id], x) }

// Figure IDs of the cache workloads (real API server and in-memory API).
const (
	FigSync        = "sync_s"
	FigHeapPerPod  = "heap_bytes_per_pod"
	FigPeakRSS     = "peak_rss_mib"
	FigGet         = "get_us"
	FigListLabelNS = "list_label_ns_us"
	FigListLabel   = "list_label_all_us"
	// FigListLabelShared is FigListLabel with UnsafeDisableDeepCopy; FigListLabelAlloc
	// and FigListLabelGC are FigListLabel's bytes allocated (KiB) and collector CPU (µs)
	// per List: what deep copies cost beyond the copying itself. FigListLabel is then
	// measured until two collections have completed (at most 10 OpTimes), and
	// FigListLabelGC is missing when none did.
	FigListLabelShared = "list_label_all_shared_us"
	FigListLabelAlloc  = "list_label_all_alloc_kib"
	FigListLabelGC     = "list_label_all_gc_us"
	FigListNode        = "list_node_us"
	FigListNS          = "list_namespace_us"
	// FigListRequests and FigWatchListRequests count the LIST requests and the
	// WATCH requests with sendInitialEvents=true (WatchList) the cache made to sync.
	FigListRequests      = "list_requests"
	FigWatchListRequests = "watchlist_requests"
)

// CacheWorkload is the measurement of one contender's cache over the pods of Layout
// served at Config: time to sync, live heap per pod after sync, peak RSS, then Reps
// repetitions of the read figures, each the mean over at least OpTime (and 20 calls),
// started right after a garbage collection.
type CacheWorkload struct {
	Contender Contender
	Config    *rest.Config
	Mapper    meta.RESTMapper // nil: the caches discover the API
	Layout    Layout
	Reps      int
	OpTime    time.Duration
	Seed      uint64
}

// Run builds, starts and measures the cache; the cache stops when Run returns. It fails
// if a read returns an error or a number of pods other than Layout's.
func (w CacheWorkload) Run(ctx context.Context) (Values, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cfg := rest.CopyConfig(w.Config)
	requests := &requestCounter{}
	cfg.Wrap(requests.wrap)
	before := LiveHeap()
	cut, err := NewCacheUnderTest(ctx, w.Contender, cfg, w.Mapper)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := cut.Start(ctx); err != nil {
		return nil, err
	}
	synced := time.Since(start)
	lists, watchLists := requests.lists.Load(), requests.watchLists.Load()
	rss, err := PeakRSS()
	if err != nil {
		return nil, err
	}
	after := LiveHeap()

	v := Values{}
	v.add(FigSync, synced.Seconds())
	v.add(FigHeapPerPod, HeapGrowth(before, after)/float64(w.Layout.Pods))
	v.add(FigPeakRSS, rss/(1<<20))
	v.add(FigListRequests, float64(lists))
	v.add(FigWatchListRequests, float64(watchLists))
	if err := w.check(ctx, cut); err != nil {
		return nil, err
	}
	for range max(1, w.Reps) {
		if err := w.measureReads(ctx, cut, v); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// check verifies that the cache answers every kind of read with Layout's counts.
func (w CacheWorkload) check(ctx context.Context, r PodReader) error {
	l := w.Layout
	ns, name := l.Key(l.Pods - 1)
	if err := r.Get(ctx, ns, name); err != nil {
		return fmt.Errorf("%s: Get %s/%s: %w", w.Contender, ns, name, err)
	}
	expect := func(what string, want int, got int, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %s: %w", w.Contender, what, err)
		}
		if got != want {
			return fmt.Errorf("%s: %s returned %d pods, want %d", w.Contender, what, got, want)
		}
		return nil
	}
	got, err := r.ListByLabel(ctx, l.AppNamespace(1), l.AppName(1))
	if err := expect("List by label in a namespace", l.PodsOfApp(1), got, err); err != nil {
		return err
	}
	got, err = r.ListByLabel(ctx, "", l.AppName(1))
	if err := expect("List by label", l.PodsOfApp(1), got, err); err != nil {
		return err
	}
	got, err = r.ListByNode(ctx, l.NodeName(1))
	if err := expect("List by node", podsOfNode(l, 1), got, err); err != nil {
		return err
	}
	got, err = r.ListNamespace(ctx, l.NamespaceName(1))
	return expect("List of a namespace", l.PodsPerNamespace(1), got, err)
}

// podsOfNode counts the pods Layout places on node n.
func podsOfNode(l Layout, n int) int {
	count := 0
	for i := range l.Pods {
		if (i/l.Namespaces)%l.Nodes == n {
			count++
		}
	}
	return count
}

// measureReads adds one repetition of each read figure to v. Keys and label values
// are drawn from a seeded generator and prepared before timing.
func (w CacheWorkload) measureReads(ctx context.Context, r PodReader, v Values) error {
	l := w.Layout
	rng := rand.New(rand.NewPCG(w.Seed, uint64(len(v[FigGet]))))
	const prepared = 1024
	type key struct{ ns, name string }
	keys := make([]key, prepared)
	apps := make([]int, prepared)
	for i := range prepared {
		keys[i].ns, keys[i].name = l.Key(rng.IntN(l.Pods))
		apps[i] = rng.IntN(l.Apps)
	}
	appNames := make([]string, l.Apps)
	appNamespaces := make([]string, l.Apps)
	for a := range l.Apps {
		appNames[a], appNamespaces[a] = l.AppName(a), l.AppNamespace(a)
	}
	nodes := make([]string, l.Nodes)
	for n := range l.Nodes {
		nodes[n] = l.NodeName(n)
	}
	namespaces := make([]string, l.Namespaces)
	for n := range l.Namespaces {
		namespaces[n] = l.NamespaceName(n)
	}

	ops := []struct {
		id string
		op func(i int) error
		// allocID and gcID, when set, receive the op's bytes allocated and GC CPU.
		allocID, gcID string
	}{
		{id: FigGet, op: func(i int) error { k := keys[i%prepared]; return r.Get(ctx, k.ns, k.name) }},
		{id: FigListLabelNS, op: func(i int) error {
			a := apps[i%prepared]
			_, err := r.ListByLabel(ctx, appNamespaces[a], appNames[a])
			return err
		}},
		{id: FigListLabel, op: func(i int) error { _, err := r.ListByLabel(ctx, "", appNames[apps[i%prepared]]); return err },
			allocID: FigListLabelAlloc, gcID: FigListLabelGC},
		{id: FigListLabelShared, op: func(i int) error {
			_, err := r.ListByLabelShared(ctx, "", appNames[apps[i%prepared]])
			return err
		}},
		{id: FigListNode, op: func(i int) error { _, err := r.ListByNode(ctx, nodes[apps[i%prepared]%l.Nodes]); return err }},
		{id: FigListNS, op: func(i int) error { _, err := r.ListNamespace(ctx, namespaces[i%l.Namespaces]); return err }},
	}
	for _, o := range ops {
		// Every figure starts right after a collection, as testing.B does, so that a
		// collection of the cache's large heap falls on no figure by chance.
		runtime.GC()
		sampling := Sampling{MinCalls: 20, MaxCalls: 1_000_000, MinDuration: w.OpTime}
		if o.gcID != "" {
			sampling.MinGCCycles, sampling.MaxDuration = 2, 10*w.OpTime
		}
		cost, err := MeasureOp(sampling, o.op)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", w.Contender, o.id, err)
		}
		v.add(o.id, cost.NS/1e3)
		if o.allocID != "" {
			v.add(o.allocID, cost.AllocBytes/1024)
		}
		if o.gcID != "" && cost.GCCycles > 0 {
			// Without a completed collection the figure would say the garbage is free.
			v.add(o.gcID, cost.GCCPUNS/1e3)
		}
	}
	return nil
}

// requestCounter counts a client's pod LIST and WatchList requests.
type requestCounter struct {
	lists, watchLists atomic.Int64
}

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/pods") {
			q := req.URL.Query()
			switch {
			case q.Get("watch") != trueValue && q.Get("watch") != "1":
				c.lists.Add(1)
			case q.Get("sendInitialEvents") == trueValue:
				c.watchLists.Add(1)
			}
		}
		return rt.RoundTrip(req)
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
