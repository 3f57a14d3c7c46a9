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
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/deltacache/deltacache/pkg/informer"
)

// newEntry builds (but does not start) the informers of key: it maps the GVK to its
// resource and scope with the RESTMapper, resolves the watch scopes from the options,
// and builds one ListerWatcher and one informer per scope. It talks to the API server
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
	for _, scope := range set.scopes {
		if !namespaced {
			scope.namespace = ""
		}
		lwOpts := listWatchOptions(scope)
		lw, err := c.listWatcher(key, mapping, namespaced, lwOpts)
		if err != nil {
			return nil, err
		}
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
		var detector *mutationDetector
		if c.settings.MutationDetector {
			detector = newMutationDetector(name, c.clock, c.settings.MutationCheckPeriod, c.settings.OnMutation)
		}
		inf := informer.NewSharedIndexInformer(lw, example, informer.Options{
			Name:                name,
			ResyncPeriod:        jitter(scope.syncPeriod),
			Indexers:            c.baseIndexers(),
			Transform:           c.storeTransform(key.gvk, scope.transform, detector, codec != nil),
			WatchErrorHandler:   c.watchErrorHandler,
			Logger:              c.log,
			PageSize:            c.settings.ListPageSize,
			Backoff:             c.settings.Backoff,
			Clock:               c.clock,
			MetricLabels:        metricLabels(key),
			HandlerLabel:        handlerLabel,
			ConsistencyCheck:    c.consistencyCheck(mapping, namespaced, lwOpts),
			CrashOnHandlerPanic: c.settings.CrashOnHandlerPanic,
			StorageCodec:        codec,
			ShardSelector:       c.shardSelectorFor(key.gvk),
		})
		e.scopes = append(e.scopes, &scopedInformer{
			scope:      scope,
			informer:   inf,
			indexer:    inf.GetIndexer(),
			readsCopy:  codec != nil,
			storedType: reflect.TypeOf(example),
			detector:   detector,
			stopped:    make(chan struct{}),
		})
	}
	if len(e.scopes) == 1 {
		e.informer = e.scopes[0].informer
	} else {
		e.informer = newMultiNamespaceInformer(e.scopes)
	}
	return e, nil
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

// listWatchOptions returns the ListWatchOptions of a scope: its namespace, its
// server-side selectors, and bookmarks when the scope enables them.
func listWatchOptions(scope watchScope) informer.ListWatchOptions {
	opts := informer.ListWatchOptions{
		Namespace:           scope.namespace,
		AllowWatchBookmarks: scope.enableWatchBookmarks,
	}
	if scope.label != nil {
		opts.LabelSelector = scope.label.String()
	}
	if scope.field != nil {
		opts.FieldSelector = scope.field.String()
	}
	return opts
}

// newListWatch builds the ListerWatcher of one scope: typed objects through a REST
// client from apiutil.RESTClientForGVK (protobuf for built-in types), unstructured
// objects through the dynamic client, metadata through the metadata client.
func (c *Cache) newListWatch(
	key entryKey, mapping *meta.RESTMapping, namespaced bool, opts informer.ListWatchOptions,
) (toolscache.ListerWatcher, error) {
	switch key.shape {
	case shapeUnstructured:
		return informer.NewDynamicListWatch(c.dynamicClient, mapping.Resource, namespaced, opts), nil
	case shapeMetadata:
		return informer.NewMetadataListWatch(c.metadataClient, mapping.Resource, key.gvk, namespaced, opts), nil
	default:
		client, err := apiutil.RESTClientForGVK(key.gvk, false, false, c.config, c.codecs, c.httpClient)
		if err != nil {
			return nil, fmt.Errorf("building REST client for %s: %w", key.gvk, err)
		}
		return informer.NewRESTListWatch(client, mapping.Resource.Resource, namespaced, c.paramCodec, opts), nil
	}
}

// jitter returns period scaled by a random factor in [0.9, 1.1), so that informers
// created together do not resync in lock-step (controller-runtime's
// calculateResyncPeriod). Zero stays zero (no resync).
func jitter(period time.Duration) time.Duration {
	factor := rand.Float64()/5.0 + 0.9
	return time.Duration(float64(period) * factor)
}
