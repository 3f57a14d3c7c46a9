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
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/deltacache/deltacache/pkg/informer"
)

// WithConsistencyCheck turns on the production consistency checker
// (Config.ConsistencyCheckInterval): every interval (plus up to 10%), each informer
// lists its scope — namespace, selectors and, for a sharded kind (WithSharding), this
// replica's shard — as metadata only (pages of the cache's ListPageSize, default 500,
// RV "": a consistent read from etcd) and compares uid and resourceVersion per key with
// its store. Drift (objects missing, extra or stale) is counted in
// deltacache_consistency_drift_objects_total, logged in one line naming up to three keys
// of each kind, and healed by a relist at once; checks are counted by result in
// deltacache_consistency_checks_total. It catches watch streams that lose events
// without breaking (proxies, aggregated API servers), which nothing else detects. Cost
// per check and informer of N objects: ⌈N/500⌉ LIST requests and the metadata of N
// objects (docs/consistency-check.md has measured figures); choose an interval of
// minutes. interval ≤ 0 turns it off.
//
// With sharding, N is the replica's share when the server filters by shard selector
// (the ShardedListAndWatch gate), and every object of the kind when it does not (the
// check then filters what it receives, as the informer does); a check that falls while
// the replica's shard changes is skipped, not counted (see informer.ConsistencyCheck).
func WithConsistencyCheck(interval time.Duration) Option {
	return func(c *Config) {
		c.ConsistencyCheckInterval = interval
	}
}

// consistencyCheck is the informer option of one scope of a kind: metadata-only LIST
// (informer.NewMetadataListWatch, with the scope's namespace and selectors; the
// informer adds its shard selector) and Get through the metadata client.
func (c *Cache) consistencyCheck(
	mapping *meta.RESTMapping, namespaced bool, opts informer.ListWatchOptions,
) informer.ConsistencyCheck {
	if c.settings.ConsistencyCheckInterval <= 0 {
		return informer.ConsistencyCheck{}
	}
	lw := informer.NewMetadataListWatch(c.metadataClient, mapping.Resource, mapping.GroupVersionKind, namespaced, opts)
	resource := c.metadataClient.Resource(mapping.Resource)
	return informer.ConsistencyCheck{
		Interval: c.settings.ConsistencyCheckInterval,
		PageSize: c.settings.ListPageSize,
		List: func(ctx context.Context, lo metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
			list, err := lw.ListWithContext(ctx, lo)
			if err != nil {
				return nil, err
			}
			m, ok := list.(*metav1.PartialObjectMetadataList)
			if !ok {
				return nil, fmt.Errorf("metadata list of %s is a %T", mapping.Resource, list)
			}
			return m, nil
		},
		Get: func(ctx context.Context, namespace, name string) (*metav1.PartialObjectMetadata, error) {
			if namespaced {
				return resource.Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
			}
			return resource.Get(ctx, name, metav1.GetOptions{})
		},
	}
}
