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
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
// Which kinds are foreign is found by calling NewInformer once per kind, with a
// ListerWatcher that is never used, and looking at the type it returns; the informer
// it returns is not run.
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
}

// newForeignKinds returns nil when opts.NewInformer is nil, else the foreign kinds'
// state with controller-runtime's cache built from cfg and opts (defaulted already).
func newForeignKinds(cfg *rest.Config, opts crcache.Options) (*foreignKinds, error) {
	if opts.NewInformer == nil {
		return nil, nil
	}
	cr, err := crcache.New(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("building controller-runtime's cache for the kinds of Options.NewInformer: %w", err)
	}
	return &foreignKinds{
		newInformer: opts.NewInformer,
		cache:       cr,
		foreign:     map[entryKey]bool{},
		used:        map[entryKey]client.Object{},
	}, nil
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
	if !known {
		probe, err := c.exampleObject(key)
		if err != nil {
			return false // not foreign; deltacache's path reports the error
		}
		_, ours := f.newInformer(&toolscache.ListWatch{}, probe, 0, toolscache.Indexers{}).(*informer.SharedIndexInformer)
		foreign = !ours
	}
	f.mu.Lock()
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
