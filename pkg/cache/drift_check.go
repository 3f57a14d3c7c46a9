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

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/deltacache/deltacache/pkg/informer"
)

// consistencyCheck is the informer option of one scope of a kind: metadata-only LIST
// (informer.NewMetadataListWatch, with the scope's namespace and selectors; the
// informer adds its shard selector) and Get through the metadata client.
func (c *Cache) consistencyCheck(
	mapping *meta.RESTMapping, namespaced bool, opts informer.ListWatchOptions,
) informer.ConsistencyCheck {
	if c.settings.ConsistencyCheckInterval <= 0 {
		return informer.ConsistencyCheck{}
	}
	resource := c.metadataClient.Resource(mapping.Resource)
	return informer.ConsistencyCheck{
		Interval: c.settings.ConsistencyCheckInterval,
		PageSize: c.settings.ListPageSize,
		List:     c.metadataLister(mapping, namespaced, opts),
		Get: func(ctx context.Context, namespace, name string) (*metav1.PartialObjectMetadata, error) {
			if namespaced {
				return resource.Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
			}
			return resource.Get(ctx, name, metav1.GetOptions{})
		},
	}
}

// metadataLister lists one page of a scope as metadata (informer.NewMetadataListWatch,
// with the scope's namespace and selectors): the drift check's List and the warm
// start's metadata diff (Snapshot.ListMetadata).
func (c *Cache) metadataLister(
	mapping *meta.RESTMapping, namespaced bool, opts informer.ListWatchOptions,
) func(ctx context.Context, lo metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	lw := informer.NewMetadataListWatch(c.metadataClient, mapping.Resource, mapping.GroupVersionKind, namespaced, opts)
	return func(ctx context.Context, lo metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
		list, err := lw.ListWithContext(ctx, lo)
		if err != nil {
			return nil, err
		}
		m, ok := list.(*metav1.PartialObjectMetadataList)
		if !ok {
			return nil, fmt.Errorf("metadata list of %s is a %T", mapping.Resource, list)
		}
		return m, nil
	}
}
