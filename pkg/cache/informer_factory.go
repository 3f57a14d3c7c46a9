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
	"maps"
	"math/rand/v2"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/deltacache/deltacache/pkg/informer"
)

// The informer factory: an entry's informers, one per watch scope, built from the
// cache's settings (options.go) with pkg/informer's Options. The ListerWatcher of a
// scope is built in listwatch.go, its storage codec in storage.go, its transform in
// transform.go, its drift check in drift_check.go.

// newEntry builds (but does not start) the informers of key: it maps the GVK to its
// resource and scope with the RESTMapper, resolves the watch scopes from the options,
// and builds one informer per scope (newScopedInformer). It talks to the API server
// only through the RESTMapper (discovery), never lists or watches. A kind the
// RESTMapper does not know is a *meta.NoKindMatchError (see mappingError); nothing is
// remembered, so the next call asks the RESTMapper again, and controller-runtime's
// dynamic RESTMapper re-discovers the group on a miss: once the CRD is installed, the
// next Get, List or GetInformer creates the informer.
func (c *Cache) newEntry(key entryKey) (*entry, error) {
	mapping, err := c.mapper.RESTMapping(key.gvk.GroupKind(), key.gvk.Version)
	if err != nil {
		return nil, mappingError(key.gvk, err)
	}
	namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
	if !namespaced && c.sharder != nil && c.sharder.byNamespace[key.gvk] {
		return nil, clusterScopedError(key.gvk)
	}
	set := c.scopes.scopesFor(key.gvk, namespaced)

	e := &entry{key: key, namespaced: namespaced, restricted: set.restricted}
	for _, k := range c.settings.LabelIndexes {
		e.scoped.add(LabelIndexName(k))
	}
	for _, scope := range set.scopes {
		if !namespaced {
			scope.namespace = ""
		}
		s, err := c.newScopedInformer(key, mapping, namespaced, scope, e.scoped.has)
		if err != nil {
			return nil, err
		}
		e.scopes = append(e.scopes, s)
	}
	if len(e.scopes) == 1 {
		e.informer = e.scopes[0].informer
	} else {
		e.informer = newMultiNamespaceInformer(e.scopes)
	}
	return e, nil
}

// newScopedInformer builds the informer of one scope of key: the scope's ListerWatcher
// (listwatch.go), the base indexes, the store transform, the storage codec, the drift
// check, the shard selector and the mutation detector, with the cache's settings for
// pkg/informer's Options. mapping and namespaced are key's REST mapping and scope.
func (c *Cache) newScopedInformer(
	key entryKey, mapping *meta.RESTMapping, namespaced bool, scope watchScope, scoped func(string) bool,
) (*scopedInformer, error) {
	example, err := c.exampleObject(key)
	if err != nil {
		return nil, err
	}
	name := key.String()
	if scope.namespace != "" {
		name += " in namespace " + scope.namespace
	}
	codec, err := c.storageCodec(key, example, scope.unsafeDisableDeepCopy)
	if err != nil {
		return nil, err
	}
	lwOpts := listWatchOptions(scope)
	wire := c.wireCapture(key, codec, scope)
	lw, err := c.listWatcher(key, mapping, namespaced, lwOpts, wire)
	if err != nil {
		return nil, err
	}
	snapshot, err := c.snapshot(key, mapping, namespaced, scope, lwOpts, codec)
	if err != nil {
		return nil, err
	}
	var detector *mutationDetector
	if c.settings.MutationDetector {
		detector = newMutationDetector(name, c.clock, c.settings.MutationCheckPeriod, c.settings.OnMutation)
	}
	inf := informer.NewSharedIndexInformer(lw, example, informer.Options{
		Name:                name,
		ResyncPeriod:        jitter(scope.syncPeriod),
		Indexers:            c.baseIndexers(),
		NamespaceScoped:     scoped,
		Transform:           c.storeTransform(key.gvk, scope.transform, detector, codec != nil),
		WatchErrorHandler:   c.watchErrorHandler,
		Logger:              c.log,
		PageSize:            c.settings.ListPageSize,
		Backoff:             c.settings.Backoff,
		MinWatchTimeout:     c.settings.MinWatchTimeout,
		WatchStallTimeout:   c.settings.WatchStallTimeout,
		Clock:               c.clock,
		MetricLabels:        metricLabels(key),
		HandlerLabel:        handlerLabel,
		ConsistencyCheck:    c.consistencyCheck(mapping, namespaced, lwOpts),
		CrashOnHandlerPanic: c.settings.CrashOnHandlerPanic,
		StorageCodec:        codec,
		ShardSelector:       c.shardSelectorFor(key.gvk),
		Snapshot:            snapshot,
	})
	return &scopedInformer{
		scope:      scope,
		informer:   inf,
		indexer:    inf.Indexer(),
		readsCopy:  codec != nil,
		storedType: reflect.TypeOf(example),
		detector:   detector,
		wire:       wire,
		stopped:    make(chan struct{}),
	}, nil
}

// baseIndexers are the indexes every informer starts with: the namespace index and one
// "label:<key>" index per key of Config.LabelIndexes.
func (c *Cache) baseIndexers() toolscache.Indexers {
	indexers := toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}
	maps.Copy(indexers, labelIndexers(c.settings.LabelIndexes, c.intern))
	return indexers
}

// exampleObject returns a fresh object of key's shape with its GVK set.
func (c *Cache) exampleObject(key entryKey) (runtime.Object, error) {
	switch key.shape {
	case shapeUnstructured:
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(key.gvk)
		return u, nil
	case shapeMetadata:
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(key.gvk)
		return m, nil
	default:
		obj, err := c.scheme.New(key.gvk)
		if err != nil {
			return nil, err
		}
		obj.GetObjectKind().SetGroupVersionKind(key.gvk)
		return obj, nil
	}
}

// jitter returns period scaled by a random factor in [0.9, 1.1), so that informers
// created together do not resync in lock-step (controller-runtime's
// calculateResyncPeriod). Zero stays zero (no resync).
func jitter(period time.Duration) time.Duration {
	factor := rand.Float64()/5.0 + 0.9
	return time.Duration(float64(period) * factor)
}
