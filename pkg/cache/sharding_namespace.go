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

package cache

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/deltacache/deltacache/pkg/informer"
	"github.com/deltacache/deltacache/pkg/shard"
)

// NamespaceDebounce is how long a namespace-sharding cache coalesces the creations
// and deletions of namespaces before it changes the selectors of its
// namespace-sharded informers (one relist each): namespaces created within it cost
// one relist together.
const NamespaceDebounce = 500 * time.Millisecond

var namespaceGVK = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}

// namespaceWatch is the cache's own metadata-only, cluster-wide informer of
// Namespaces: the namespaces a namespace-sharding replica may own.
type namespaceWatch struct {
	informer *informer.SharedIndexInformer
	// kick has a value when a namespace came or went since the last refresh.
	kick chan struct{}
}

// requireNamespaced returns an error if the RESTMapper knows gvk as cluster-scoped;
// nil if it is namespaced or not known (yet: newEntry checks again).
func requireNamespaced(mapper meta.RESTMapper, gvk schema.GroupVersionKind) error {
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil || mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return nil
	}
	return clusterScopedError(gvk)
}

func clusterScopedError(gvk schema.GroupVersionKind) error {
	return fmt.Errorf("deltacache: %s is cluster-scoped: Sharding.ByNamespace applies to namespaced kinds only "+
		"(shard it ByUID, or cache it whole)", gvk.Kind)
}

// newNamespaceWatch builds the Namespace informer of c (not started). The mapping of
// core/v1 Namespace is fixed, so no discovery is needed. Errors: the handler's
// registration.
func newNamespaceWatch(c *Cache) (*namespaceWatch, error) {
	mapping := &meta.RESTMapping{
		Resource:         schema.GroupVersionResource{Version: "v1", Resource: "namespaces"},
		GroupVersionKind: namespaceGVK,
		Scope:            meta.RESTScopeRoot,
	}
	// Resolved at the first list, through c.listWatcher (which tests replace after New).
	var (
		once  sync.Once
		inner toolscache.ListerWatcherWithContext
		err   error
	)
	resolve := func() (toolscache.ListerWatcherWithContext, error) {
		once.Do(func() {
			var lw toolscache.ListerWatcher
			lw, err = c.listWatcher(entryKey{gvk: namespaceGVK, shape: shapeMetadata}, mapping, false,
				informer.ListWatchOptions{AllowWatchBookmarks: true}, nil)
			if err == nil {
				inner = toolscache.ToListerWatcherWithContext(lw)
			}
		})
		return inner, err
	}
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			lw, err := resolve()
			if err != nil {
				return nil, err
			}
			return lw.ListWithContext(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			lw, err := resolve()
			if err != nil {
				return nil, err
			}
			return lw.WatchWithContext(ctx, o)
		},
	}
	example := &metav1.PartialObjectMetadata{}
	example.SetGroupVersionKind(namespaceGVK)
	w := &namespaceWatch{kick: make(chan struct{}, 1)}
	w.informer = informer.NewSharedIndexInformer(lw, example, informer.Options{
		Name:   "Namespaces for namespace sharding",
		Logger: c.log,
		Clock:  c.clock,
		// Names are all that is needed.
		Transform: func(obj any) (any, error) {
			if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
				m.ManagedFields, m.Annotations, m.Labels, m.OwnerReferences = nil, nil, nil, nil
			}
			return obj, nil
		},
	})
	kick := func(any) {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	if _, err := w.informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: kick, DeleteFunc: kick}); err != nil {
		return nil, err
	}
	return w, nil
}

// selector returns the selector of the namespaces whose slot is in slots: one
// one-hash range per namespace, sorted, equal hashes merged; no ranges (nothing) for
// none.
func (w *namespaceWatch) selector(slots shard.Slots) *informer.ShardSelector {
	sel := &informer.ShardSelector{Field: informer.ShardByNamespace}
	if slots.IsEmpty() {
		return sel
	}
	for _, name := range w.informer.GetStore().ListKeys() {
		if slots.Has(shard.SlotOfNamespace(name)) {
			h := informer.ShardHash(name)
			sel.Ranges = append(sel.Ranges, informer.HashRange{First: h, Last: h})
		}
	}
	slices.SortFunc(sel.Ranges, func(a, b informer.HashRange) int { return cmp.Compare(a.First, b.First) })
	sel.Ranges = slices.Compact(sel.Ranges)
	return sel
}

// awaitSynced waits until the Namespace informer has synced, or ctx ends (its error).
func (w *namespaceWatch) awaitSynced(ctx context.Context) error {
	select {
	case <-w.informer.HasSyncedChecker().Done():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for the Namespace informer of namespace sharding: %w", ctx.Err())
	}
}

// runNamespaces runs the Namespace informer and, until ctx ends, follows the coming
// and going of namespaces: after the first change it waits NamespaceDebounce, then
// gives the namespace-sharded informers the selector of the namespaces now owned
// (unchanged if none of the changes concerns this replica's slots).
func (c *Cache) runNamespaces(ctx context.Context) {
	sh := c.sharder
	w := sh.namespaces
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.informer.RunWithContext(ctx)
	}()
	defer func() { <-done }()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.kick:
		}
		t := c.clock.NewTimer(NamespaceDebounce)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		select {
		case <-w.kick:
		default:
		}
		if err := c.refreshNamespaceShard(ctx); err != nil && ctx.Err() == nil {
			c.log.Error(err, "Following the namespaces of namespace sharding")
		}
	}
}

// refreshNamespaceShard recomputes the selector of the namespace-sharded kinds for the
// served slots and applies it if it changed.
func (c *Cache) refreshNamespaceShard(ctx context.Context) error {
	sh := c.sharder
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if !sh.namespaces.informer.HasSynced() {
		return nil // serveSlots waits for the sync and computes it then
	}
	sel := sh.namespaces.selector(sh.serving)
	if sel.Equal(sh.nsSel) {
		return nil
	}
	c.log.V(1).Info("Namespaces owned changed", "before", len(sh.nsSel.Ranges), "after", len(sel.Ranges))
	sh.nsSel = sel
	return c.applyShardLocked(ctx, func(gvk schema.GroupVersionKind) bool { return sh.byNamespace[gvk] })
}
