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

	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/deltacache/deltacache/pkg/informer"
)

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
