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
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/deltacache/deltacache/pkg/informer"
	"github.com/deltacache/deltacache/pkg/shard"
)

// shardedMissWait bounds how long a Get that missed a sharded kind's key waits for
// the batch applying a delta of that key (informer.SharedIndexInformer.AwaitApplied).
const shardedMissWait = time.Second

// notHeldError is the error of a Get of key (storeKey in the store), of the sharded
// kind gvk, that inf's store does not hold: NotFound (as for a kind that is not
// sharded) where the replica knows it would hold the object if it existed, an error
// wrapping ErrNotInShard (a *NotInShardError) where it cannot know. NotFound:
//
//   - by namespace: when the store's answer for storeKey is final
//     (informer.SharedIndexInformer.ShardHolds: the list of the current selector is in
//     the store or queued, and nothing of storeKey is pending) and the selector has
//     key's namespace; or when the replica serves the namespace's slot and the
//     namespace is absent from the cache's Namespace informer (synced): no object can
//     exist in a namespace that does not, as of that informer's resourceVersion. A
//     namespace this replica owns but whose objects the informer is not holding yet
//     (created within NamespaceDebounce, or the relist that adds it not handed to the
//     store) is ErrNotInShard, as are the other replicas' namespaces.
//   - by uid: when the store's answer is final and the selector is the whole hash space
//     (the replica serves every slot). Otherwise the key names no uid, so the cache
//     cannot tell an object of another replica's share from an absent one.
func (c *Cache) notHeldError(
	gvk schema.GroupVersionKind, key client.ObjectKey, storeKey string, inf *informer.SharedIndexInformer,
) error {
	if c.sharder.wouldHold(gvk, key, storeKey, inf) {
		return apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, key.Name)
	}
	return &NotInShardError{GVK: gvk, Key: key}
}

// wouldHold reports whether inf would hold key's object if it existed (see
// notHeldError).
func (sh *sharder) wouldHold(
	gvk schema.GroupVersionKind, key client.ObjectKey, storeKey string, inf *informer.SharedIndexInformer,
) bool {
	sel, final := inf.ShardHolds(storeKey)
	if sh.byNamespace[gvk] {
		return final && sel.ContainsHash(informer.ShardHash(key.Namespace)) || sh.servesAbsentNamespace(key.Namespace)
	}
	return final && wholeHashSpace(sel)
}

// servesAbsentNamespace reports whether this replica serves the slot of namespace and
// the synced Namespace informer does not have it.
func (sh *sharder) servesAbsentNamespace(namespace string) bool {
	served := sh.served.Load()
	if served == nil || !served.Has(shard.SlotOfNamespace(namespace)) || !sh.namespaces.informer.HasSynced() {
		return false
	}
	_, exists, err := sh.namespaces.informer.GetStore().GetByKey(namespace)
	return err == nil && !exists
}

// wholeHashSpace reports whether sel selects every hash (nil does): its sorted,
// disjoint ranges leave no gap.
func wholeHashSpace(sel *informer.ShardSelector) bool {
	if sel == nil {
		return true
	}
	next := uint64(0)
	for i, r := range sel.Ranges {
		if r.First != next {
			return false
		}
		if r.Last == informer.FullRange.Last {
			return i == len(sel.Ranges)-1
		}
		next = r.Last + 1
	}
	return false
}
