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
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// MemoryListerWatcher is the in-process workloads' ListerWatcher: it lists a fixed set
// of pods at a fixed resourceVersion, paginated by ListOptions.Limit, and every watch it
// opens is a Watch that the workload feeds with Send. It declares that it does not
// support WatchList (IsWatchListSemanticsUnSupported), so client-go's Reflector and ours
// both take the paginated LIST path.
//
// Each page is a fresh []corev1.Pod holding shallow copies of the pods, as a decoded
// list is a fresh array: an informer that keeps pointers into the page and one that
// copies the items retain the same memory. Pods are listed in the order of their keys
// (namespace/name), as kube-apiserver lists them (etcd ranges, and the watch cache,
// are sorted by key): the pods of one app come together, as from a real server.
type MemoryListerWatcher struct {
	pods []corev1.Pod
	// order is the positions in pods sorted by key: the list order.
	order []int
	rv    string

	mu      sync.Mutex
	watches []*Watch
	opened  chan struct{} // closed and replaced when a watch opens
}

var (
	_ toolscache.ListerWatcher            = (*MemoryListerWatcher)(nil)
	_ toolscache.ListerWatcherWithContext = (*MemoryListerWatcher)(nil)
)

// NewMemoryListerWatcher serves pods (not copied; do not modify them afterwards) at
// resourceVersion rv.
func NewMemoryListerWatcher(pods []corev1.Pod, rv string) *MemoryListerWatcher {
	order := make([]int, len(pods))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		pa, pb := &pods[a], &pods[b]
		return cmp.Or(cmp.Compare(pa.Namespace, pb.Namespace), cmp.Compare(pa.Name, pb.Name))
	})
	return &MemoryListerWatcher{pods: pods, order: order, rv: rv, opened: make(chan struct{})}
}

// IsWatchListSemanticsUnSupported returns true: lists are served by List only.
func (m *MemoryListerWatcher) IsWatchListSemanticsUnSupported() bool { return true }

// List is ListWithContext without a context.
func (m *MemoryListerWatcher) List(opts metav1.ListOptions) (runtime.Object, error) {
	return m.ListWithContext(context.Background(), opts)
}

// ListWithContext returns the page of pods that opts.Limit and opts.Continue select
// (every pod when Limit is 0), with a continue token if more follow.
func (m *MemoryListerWatcher) ListWithContext(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	start := 0
	if opts.Continue != "" {
		n, err := strconv.Atoi(opts.Continue)
		if err != nil || n < 0 || n > len(m.pods) {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid continue token %q", opts.Continue))
		}
		start = n
	}
	end := len(m.pods)
	cont := ""
	if opts.Limit > 0 && start+int(opts.Limit) < end {
		end = start + int(opts.Limit)
		cont = strconv.Itoa(end)
	}
	items := make([]corev1.Pod, end-start)
	for i, at := range m.order[start:end] {
		items[i] = m.pods[at]
	}
	return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: m.rv, Continue: cont}, Items: items}, nil
}

// Watch is WatchWithContext without a context.
func (m *MemoryListerWatcher) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return m.WatchWithContext(context.Background(), opts)
}

// WatchWithContext opens a Watch that delivers what the workload Sends.
func (m *MemoryListerWatcher) WatchWithContext(_ context.Context, _ metav1.ListOptions) (watch.Interface, error) {
	w := &Watch{result: make(chan watch.Event), stop: make(chan struct{})}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.watches = append(m.watches, w)
	close(m.opened)
	m.opened = make(chan struct{})
	return w, nil
}

// NextWatch waits until at least n+1 watches were opened and returns the n-th (0-based).
func (m *MemoryListerWatcher) NextWatch(ctx context.Context, n int) (*Watch, error) {
	for {
		m.mu.Lock()
		if len(m.watches) > n {
			w := m.watches[n]
			m.mu.Unlock()
			return w, nil
		}
		opened := m.opened
		m.mu.Unlock()
		select {
		case <-opened:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for watch %d: %w", n, ctx.Err())
		}
	}
}

// Watch is one open watch of a MemoryListerWatcher. Its result channel is unbuffered,
// like the one of client-go's StreamWatcher: Send returns once the informer took the
// event.
type Watch struct {
	result   chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
}

// ResultChan returns the informer's channel of events.
func (w *Watch) ResultChan() <-chan watch.Event { return w.result }

// Stop is the informer ending the watch; idempotent.
func (w *Watch) Stop() { w.stopOnce.Do(func() { close(w.stop) }) }

// Send delivers e and reports true, or false if the watch was stopped first.
func (w *Watch) Send(e watch.Event) bool {
	select {
	case w.result <- e:
		return true
	case <-w.stop:
		return false
	}
}
