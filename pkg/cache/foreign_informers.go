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
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/deltacache/deltacache/pkg/informer"
)

// foreignKinds serves the kinds whose informer controller-runtime's
// cache.Options.NewInformer builds as something other than deltacache's own
// (*informer.SharedIndexInformer, e.g. informer.NewInformer): client-go's
// SharedIndexInformer with its metrics (Cluster API), or a test's fake. Such a kind is
// cached by controller-runtime's informer cache, built with the same Options, which
// runs the informer NewInformer builds and serves Get and List from its indexer,
// deep-copied, exactly as controller-runtime does. It therefore lacks what deltacache
// adds: compact storage, label indexes (declared or adaptive), merged and bounded
// handler queues, sharding, the consistency check, the mutation detector, ListStats,
// and deltacache's informer metrics and readyz detail (readyz and WaitForCacheSync
// still wait for it). Every other kind is deltacache's.
//
// Which kinds are foreign is found by calling NewInformer on the kind's first use and
// looking at the type it returns. NewInformer is called no more often than with
// controller-runtime's cache (its callers may register per-informer metrics names,
// as client-go's InformerName, that a second call would find taken): a foreign
// informer is built with a ListerWatcher that forwards to the one controller-runtime's
// cache builds, and handed to it when it asks NewInformer for that kind; deltacache's
// own informer returned for a kind is dropped unrun (the cache builds its own, with its
// settings).
type foreignKinds struct {
	newInformer func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer
	// cache is controller-runtime's informer cache for the foreign kinds.
	cache crcache.Cache
	// started: Start has started cache.
	started atomic.Bool

	mu sync.RWMutex
	// foreign is, per kind asked about, whether it is foreign.
	foreign map[entryKey]bool
	// used are the foreign kinds read or asked for, with an example object, for the
	// readyz check.
	used map[entryKey]client.Object
	// pending are the informers built by isForeign, not yet claimed by the cache.
	pending map[entryKey]pendingInformer
}

// pendingInformer is a foreign informer built before controller-runtime's cache asked
// for it, and the ListerWatcher it was built with.
type pendingInformer struct {
	informer toolscache.SharedIndexInformer
	lw       *forwardingListerWatcher
}

// newForeignKinds returns nil when opts.NewInformer is nil, else the foreign kinds'
// state with controller-runtime's cache built from cfg and opts (defaulted already).
func newForeignKinds(cfg *rest.Config, opts crcache.Options) (*foreignKinds, error) {
	if opts.NewInformer == nil {
		return nil, nil
	}
	f := &foreignKinds{
		newInformer: opts.NewInformer,
		foreign:     map[entryKey]bool{},
		used:        map[entryKey]client.Object{},
		pending:     map[entryKey]pendingInformer{},
	}
	scheme := opts.Scheme
	opts.NewInformer = func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration,
		indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		if gvk, err := apiutil.GVKForObject(obj, scheme); err == nil {
			if p, ok := f.claim(entryKey{gvk: gvk, shape: shapeOf(obj)}); ok {
				p.lw.target.Store(&lw)
				if err := p.informer.AddIndexers(indexers); err != nil {
					return f.newInformer(lw, obj, resync, indexers)
				}
				return p.informer
			}
		}
		return f.newInformer(lw, obj, resync, indexers)
	}
	cr, err := crcache.New(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("building controller-runtime's cache for the kinds of Options.NewInformer: %w", err)
	}
	f.cache = cr
	return f, nil
}

// claim takes the pending informer of key, if any.
func (f *foreignKinds) claim(key entryKey) (pendingInformer, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.pending[key]
	delete(f.pending, key)
	return p, ok
}

// isForeign reports whether key's informer is built by NewInformer as a foreign one
// (see foreignKinds), and remembers example for the readyz check if so. It is false
// without NewInformer.
func (c *Cache) isForeign(key entryKey, example runtime.Object) bool {
	f := c.foreign
	if f == nil {
		return false
	}
	f.mu.RLock()
	foreign, known := f.foreign[key]
	_, used := f.used[key]
	f.mu.RUnlock()
	if known && (!foreign || used) {
		return foreign
	}
	var built toolscache.SharedIndexInformer
	lw := &forwardingListerWatcher{}
	if !known {
		probe, err := c.exampleObject(key)
		if err != nil {
			return false // not foreign; deltacache's path reports the error
		}
		// The resync period controller-runtime's cache would ask for (jittered
		// SyncPeriod); the indexes it asks for are added when it claims the informer.
		resync := jitter(c.scopes.scopesFor(key.gvk, true).scopes[0].syncPeriod)
		built = f.newInformer(lw, probe, resync, toolscache.Indexers{})
		_, ours := built.(*informer.SharedIndexInformer)
		foreign = !ours
	}
	f.mu.Lock()
	if _, raced := f.foreign[key]; !raced && foreign && built != nil {
		f.pending[key] = pendingInformer{informer: built, lw: lw}
	}
	f.foreign[key] = foreign
	if obj, ok := example.DeepCopyObject().(client.Object); ok && foreign {
		f.used[key] = obj
	}
	f.mu.Unlock()
	return foreign
}

// forgetForeign drops key from the kinds the readyz check looks at (RemoveInformer).
func (c *Cache) forgetForeign(key entryKey) {
	if f := c.foreign; f != nil {
		f.mu.Lock()
		delete(f.used, key)
		f.mu.Unlock()
	}
}

// foreignNotReadyLines are the readyz lines of the foreign kinds in use whose informer
// has not synced.
func (c *Cache) foreignNotReadyLines() []string {
	f := c.foreign
	if f == nil {
		return nil
	}
	f.mu.RLock()
	used := make(map[entryKey]client.Object, len(f.used))
	maps.Copy(used, f.used)
	f.mu.RUnlock()
	var lines []string
	for key, example := range used {
		inf, err := f.cache.GetInformer(context.Background(), example, crcache.BlockUntilSynced(false))
		switch {
		case err != nil:
			lines = append(lines, fmt.Sprintf("%s: %v", c.resourceName(key), err))
		case !inf.HasSynced():
			lines = append(lines, fmt.Sprintf("%s: not synced yet: the informer Options.NewInformer built (%T) has not synced",
				c.resourceName(key), inf))
		}
	}
	slices.Sort(lines)
	return lines
}

// forwardingListerWatcher is the ListerWatcher of a foreign informer built before
// controller-runtime's cache built the kind's own: it forwards to that one once set.
// The informer does not list or watch before the cache runs it, which is after.
type forwardingListerWatcher struct {
	target atomic.Pointer[toolscache.ListerWatcher]
}

var errNoListerWatcher = errors.New("deltacache: the informer built by Options.NewInformer was run " +
	"outside the cache (no ListerWatcher yet)")

func (l *forwardingListerWatcher) get() (toolscache.ListerWatcherWithContext, error) {
	lw := l.target.Load()
	if lw == nil {
		return nil, errNoListerWatcher
	}
	return toolscache.ToListerWatcherWithContext(*lw), nil
}

// List implements toolscache.Lister.
func (l *forwardingListerWatcher) List(options metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), options)
}

// Watch implements toolscache.Watcher.
func (l *forwardingListerWatcher) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), options)
}

// ListWithContext implements toolscache.ListerWithContext.
func (l *forwardingListerWatcher) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	lw, err := l.get()
	if err != nil {
		return nil, err
	}
	return lw.ListWithContext(ctx, options)
}

// WatchWithContext implements toolscache.WatcherWithContext.
func (l *forwardingListerWatcher) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	lw, err := l.get()
	if err != nil {
		return nil, err
	}
	return lw.WatchWithContext(ctx, options)
}

// IsWatchListSemanticsUnSupported forwards the target's answer (client-go asks when
// the informer runs).
func (l *forwardingListerWatcher) IsWatchListSemanticsUnSupported() bool {
	lw := l.target.Load()
	return lw == nil || watchlist.DoesClientNotSupportWatchListSemantics(*lw)
}
