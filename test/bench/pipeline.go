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
	"os"
	"strconv"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/deltacache/deltacache/pkg/informer"
	storagecodec "github.com/deltacache/deltacache/pkg/informer/codec"
)

// Figure IDs of the in-process pipeline workloads.
const (
	FigPipeSync       = "sync_s"
	FigPipeAllocs     = "allocs_per_pod"
	FigPipeAllocBytes = "alloc_bytes_per_pod"
	FigPipeHeap       = "heap_bytes_per_pod"
	FigThroughput     = "events_per_s"
	FigStuckFew       = "stuck_mib_few"
	FigStuckMany      = "stuck_mib_many"
)

// NewPipelineInformer returns contender's SharedIndexInformer for pods from lw, with the
// namespace and label:app indexes: pkg/informer's for Deltacache (objects held
// decoded) and DeltacacheCompact (held as protobuf), client-go's for ClientGo.
// controller-runtime's cache runs client-go's informer, so it has no pipeline of its
// own to measure. DeltacacheSnapshots needs a directory: see newPipelineInformer.
func NewPipelineInformer(c Contender, lw toolscache.ListerWatcher) (toolscache.SharedIndexInformer, error) {
	return newPipelineInformer(c, lw, "")
}

// PipelineSnapshotInterval is how often DeltacacheSnapshots writes its snapshot: short
// enough that writes follow each other during the whole of B3.
const PipelineSnapshotInterval = 50 * time.Millisecond

// newPipelineInformer is NewPipelineInformer with the snapshot directory of
// DeltacacheSnapshots (required for it, ignored for the others).
func newPipelineInformer(c Contender, lw toolscache.ListerWatcher, snapshotDir string) (toolscache.SharedIndexInformer, error) {
	switch c {
	case Deltacache:
		return informer.NewSharedIndexInformer(lw, &corev1.Pod{}, informer.Options{Indexers: PodIndexers()}), nil
	case DeltacacheCompact, DeltacacheSnapshots:
		// pkg/cache's default for pods: protobuf, compressed.
		pc, err := storagecodec.NewProtobuf(&corev1.Pod{})
		if err != nil {
			return nil, err
		}
		cc, err := storagecodec.NewCompressed(pc, storagecodec.CompressedOptions{})
		if err != nil {
			return nil, err
		}
		opts := informer.Options{Indexers: PodIndexers(), StorageCodec: cc}
		if c == DeltacacheSnapshots {
			if snapshotDir == "" {
				return nil, fmt.Errorf("contender %q needs a snapshot directory", c)
			}
			opts.Snapshot = informer.Snapshot{Dir: snapshotDir, Identity: "bench pods", Interval: PipelineSnapshotInterval}
		}
		return informer.NewSharedIndexInformer(lw, &corev1.Pod{}, opts), nil
	case ClientGo:
		return toolscache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, PodIndexers()), nil
	default:
		return nil, fmt.Errorf("contender %q has no informer pipeline of its own", c)
	}
}

// ServerPods returns the pods of l as the API server returns them, pod i at
// resourceVersion i+1, its Generation set to i (the workloads use it as the key's
// index).
func ServerPods(l Layout) []corev1.Pod {
	pods := make([]corev1.Pod, l.Pods)
	for i := range pods {
		pods[i] = *l.ServerPod(i, strconv.Itoa(i+1))
		pods[i].Generation = int64(i)
	}
	return pods
}

// MeasureSync runs contender's informer with one handler over n pods listed in pages
// of 500 and reports the time until the handler has seen every pod (its registration
// synced), the allocations during that time per pod (count and bytes), and the live
// heap it added per pod. The pods exist before the measurement starts, so the figures
// are the pipeline's own: list pages, queue, store, indexes, handler queue.
func MeasureSync(ctx context.Context, c Contender, n int) (Values, error) {
	return measureSyncOf(ctx, c, n, NewMemoryListerWatcher(ServerPods(NewLayout(n)), strconv.Itoa(n+1)))
}

// MeasureSyncSmallObjects is MeasureSync over n metadata-sized pods (name, namespace,
// two labels, resourceVersion) listed in one page whatever the informer asks
// (section B2m).
func MeasureSyncSmallObjects(ctx context.Context, c Contender, n int) (Values, error) {
	pods := make([]corev1.Pod, n)
	for i := range pods {
		pods[i] = corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: fmt.Sprintf("ns-%d", i%50), Name: fmt.Sprintf("pod-%07d", i),
			ResourceVersion: strconv.Itoa(i + 1), Generation: int64(i),
			Labels: map[string]string{appLabel: fmt.Sprintf("app-%d", i%500), "tier": "backend"},
		}}
	}
	return measureSyncOf(ctx, c, n, unpagedListerWatcher{NewMemoryListerWatcher(pods, strconv.Itoa(n+1))})
}

// unpagedListerWatcher lists everything in one page, whatever the Limit asked.
type unpagedListerWatcher struct{ *MemoryListerWatcher }

func (u unpagedListerWatcher) List(opts metav1.ListOptions) (runtime.Object, error) {
	return u.ListWithContext(context.Background(), opts)
}

func (u unpagedListerWatcher) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	opts.Limit, opts.Continue = 0, ""
	return u.MemoryListerWatcher.ListWithContext(ctx, opts)
}

// measureSyncOf is MeasureSync over the n pods of lw.
func measureSyncOf(ctx context.Context, c Contender, n int, lw toolscache.ListerWatcher) (Values, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	before := LiveHeap()
	start := time.Now()
	inf, err := NewPipelineInformer(c, lw)
	if err != nil {
		return nil, err
	}
	var added atomic.Int64
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(any) { added.Add(1) }})
	if err != nil {
		return nil, err
	}
	go inf.RunWithContext(ctx)
	select {
	case <-reg.HasSyncedChecker().Done():
	case <-ctx.Done():
		return nil, fmt.Errorf("%s did not sync: %w", c, ctx.Err())
	}
	elapsed := time.Since(start)
	allocated := ReadMem()
	after := LiveHeap()
	if got := added.Load(); got != int64(n) {
		return nil, fmt.Errorf("%s: handler saw %d adds at sync, want %d", c, got, n)
	}
	v := Values{}
	v.add(FigPipeSync, elapsed.Seconds())
	v.add(FigPipeAllocs, float64(allocated.Mallocs-before.Mallocs)/float64(n))
	v.add(FigPipeAllocBytes, float64(allocated.TotalAlloc-before.TotalAlloc)/float64(n))
	v.add(FigPipeHeap, HeapGrowth(before, after)/float64(n))
	return v, nil
}

// eventSource is a synced informer over keys pods and the watch that feeds it updates.
type eventSource struct {
	pods  []corev1.Pod
	inf   toolscache.SharedIndexInformer
	watch *Watch
	keys  int
	sent  int
	// stopped is closed when the informer has stopped; snapshotDir is
	// DeltacacheSnapshots' directory ("" for the others).
	stopped     chan struct{}
	snapshotDir string
}

// close stops the informer with cancel (its context's), waits for it to stop (it
// writes a last snapshot then) and removes the snapshot directory.
func (s *eventSource) close(cancel context.CancelFunc) {
	cancel()
	<-s.stopped
	if s.snapshotDir != "" {
		_ = os.RemoveAll(s.snapshotDir)
	}
}

// startEventSource lists keys pods into contender's informer, with handler registered
// first, and waits until the informer's store has synced (not the handler: it may be
// stuck).
func startEventSource(
	ctx context.Context, c Contender, keys int, handler toolscache.ResourceEventHandler,
) (*eventSource, error) {
	pods := ServerPods(NewLayout(keys))
	lw := NewMemoryListerWatcher(pods, strconv.Itoa(keys))
	snapshotDir := ""
	if c == DeltacacheSnapshots {
		dir, err := os.MkdirTemp("", "deltacache-bench-snapshots-")
		if err != nil {
			return nil, err
		}
		snapshotDir = dir
	}
	inf, err := newPipelineInformer(c, lw, snapshotDir)
	if err != nil {
		_ = os.RemoveAll(snapshotDir)
		return nil, err
	}
	if _, err := inf.AddEventHandler(handler); err != nil {
		return nil, err
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		inf.RunWithContext(ctx)
	}()
	select {
	case <-inf.HasSyncedChecker().Done():
	case <-ctx.Done():
		return nil, fmt.Errorf("%s did not sync: %w", c, ctx.Err())
	}
	w, err := lw.NextWatch(ctx, 0)
	if err != nil {
		return nil, err
	}
	return &eventSource{pods: pods, inf: inf, watch: w, keys: keys, stopped: stopped, snapshotDir: snapshotDir}, nil
}

// resourceVersions returns the resourceVersions of events from..to-1 of a source with
// keys pods: event j updates pod j mod keys at resourceVersion keys+1+j.
func resourceVersions(keys, from, to int) []string {
	rvs := make([]string, to-from)
	for j := range rvs {
		rvs[j] = strconv.Itoa(keys + 1 + from + j)
	}
	return rvs
}

// finalResourceVersions returns, per key, the resourceVersion of its last event among
// the first events events.
func finalResourceVersions(keys, events int) []string {
	final := make([]string, keys)
	for k := range final {
		final[k] = strconv.Itoa(k + 1)
	}
	for j := max(0, events-keys); j < events; j++ {
		final[j%keys] = strconv.Itoa(keys + 1 + j)
	}
	return final
}

// send delivers the next len(rvs) MODIFIED events (see events).
func (s *eventSource) send(rvs []string) error { return s.deliver(s.events(rvs)) }

// events builds the next len(rvs) MODIFIED events, in order. Each carries a fresh
// shallow copy of its pod (a decoder returns a new object per event).
func (s *eventSource) events(rvs []string) []watch.Event {
	events := make([]watch.Event, len(rvs))
	for j, rv := range rvs {
		p := new(corev1.Pod)
		*p = s.pods[(s.sent+j)%s.keys]
		p.ResourceVersion = rv
		events[j] = watch.Event{Type: watch.Modified, Object: p}
	}
	return events
}

// deliver sends events, built by events, through the watch.
func (s *eventSource) deliver(events []watch.Event) error {
	for _, e := range events {
		if !s.watch.Send(e) {
			return fmt.Errorf("watch stopped after %d events", s.sent)
		}
		s.sent++
	}
	return nil
}

// MeasureThroughput lists keys pods, then sends events updates over them (event j
// updates pod j mod keys) through the watch, and reports events per second from the
// first event sent until one handler has seen the last state of every key. Both
// informers deliver every key's last state; deltacache's coalesces what the handler
// has not taken yet. The events (a fresh shallow copy of its pod each) are built before
// the clock starts.
func MeasureThroughput(ctx context.Context, c Contender, keys, events int) (Values, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	final := finalResourceVersions(keys, events)
	var reached atomic.Int64
	done := make(chan struct{})
	observe := func(obj any) {
		p := obj.(*corev1.Pod)
		if p.ResourceVersion == final[p.Generation] && reached.Add(1) == int64(keys) {
			close(done)
		}
	}
	src, err := startEventSource(ctx, c, keys, toolscache.ResourceEventHandlerFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, obj any) { observe(obj) },
	})
	if err != nil {
		return nil, err
	}
	defer src.close(cancel)
	// The events are built before the clock starts, as the pods of MeasureSync exist
	// before it: the figure is the pipeline's, not the copying of a million cold pods
	// by the test's sender (which bounded both contenders alike at 1M keys).
	batch := src.events(resourceVersions(keys, 0, events))
	start := time.Now()
	sendErr := make(chan error, 1)
	go func() { sendErr <- src.deliver(batch) }()
	select {
	case <-done:
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: handler reached the last state of %d of %d keys: %w", c, reached.Load(), keys, ctx.Err())
	}
	elapsed := time.Since(start)
	if err := <-sendErr; err != nil {
		return nil, err
	}
	return Values{FigThroughput: {float64(events) / elapsed.Seconds()}}, nil
}

// MeasureStuckHandler lists keys pods into an informer whose only handler blocks on
// its first notification, then sends few and later many events (in total) over the
// keys, and reports the live heap added after each, in MiB, once the store holds the
// last state of every key. That memory is what the informer holds for the stuck handler.
func MeasureStuckHandler(ctx context.Context, c Contender, keys, few, many int) (Values, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	release := make(chan struct{})
	defer close(release)
	stuck := func() { <-release }
	src, err := startEventSource(ctx, c, keys, toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { stuck() },
		UpdateFunc: func(any, any) { stuck() },
		DeleteFunc: func(any) { stuck() },
	})
	if err != nil {
		return nil, err
	}
	base := LiveHeap()
	v := Values{}
	for _, step := range []struct {
		id    string
		total int
	}{{FigStuckFew, few}, {FigStuckMany, many}} {
		if err := src.send(resourceVersions(keys, src.sent, step.total)); err != nil {
			return nil, err
		}
		if err := waitForStore(ctx, src.inf.GetIndexer(), finalResourceVersions(keys, step.total)); err != nil {
			return nil, fmt.Errorf("%s: %w", c, err)
		}
		v.add(step.id, HeapGrowth(base, LiveHeap())/(1<<20))
	}
	return v, nil
}

// waitForStore polls until the store holds resourceVersion final[k] for pod k.
func waitForStore(ctx context.Context, store toolscache.Indexer, final []string) error {
	l := NewLayout(len(final))
	keys := make([]string, len(final))
	for k := range keys {
		ns, name := l.Key(k)
		keys[k] = ns + "/" + name
	}
	next := 0
	err := pollUntil(ctx, 2*time.Millisecond, func() bool {
		for ; next < len(keys); next++ {
			obj, ok, _ := store.GetByKey(keys[next])
			if !ok || obj.(*corev1.Pod).ResourceVersion != final[next] {
				return false
			}
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("store reached the last state of %d of %d keys: %w", next, len(keys), err)
	}
	return nil
}
