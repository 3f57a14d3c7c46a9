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
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Read-your-writes helpers. A controller that writes through a direct client (or the
// Manager's client, which writes to the API server) and then reads from the cache may
// read an older version: the write reaches the cache only when the informer's watch
// delivers it. WaitForResourceVersion and WaitForDeletion wait for that, for one
// object, without a handler registration (controller-runtime's
// EnableReadYourWritesConsistency does the same for every read of a client, and
// works with this cache too).

// Poll intervals of the waits: the first check is immediate, then the interval
// doubles from waitPollMin to waitPollMax.
const (
	waitPollMin = time.Millisecond
	waitPollMax = 50 * time.Millisecond
)

// WaitForResourceVersion waits until the cache has observed obj at obj's
// resourceVersion or a newer one, and returns nil: until the informer of obj's GVK
// and Go type (typed, *unstructured.Unstructured or *metav1.PartialObjectMetadata)
// holds the object of obj's namespace and name with a resourceVersion ≥ obj's, or its
// store reflects a resourceVersion ≥ obj's (the object changed again, was deleted,
// or is outside the cache's selectors). A Get from the cache that follows returns
// that version or a newer one.
//
// obj is typically the object a write returned: Create, Update and Patch of a
// controller-runtime client set its resourceVersion. resourceVersions are compared
// as unsigned integers, as controller-runtime's EnableReadYourWritesConsistency does
// (they are opaque by contract, but every etcd-backed API server uses etcd's
// revision).
//
// The informer is created if needed and waited for as by Get. Errors:
// *cache.ErrCacheNotStarted before Start; *cache.ErrResourceNotCached with
// ReaderFailOnMissingInformer and no informer; obj without an integer
// resourceVersion; a namespace the cache does not hold; the informer's errors as for
// Get; a Timeout error (apierrors.IsTimeout) that wraps ctx's error when ctx ends
// first.
func (c *Cache) WaitForResourceVersion(ctx context.Context, obj client.Object) error {
	want, err := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	if err != nil {
		return fmt.Errorf("WaitForResourceVersion: %s/%s has no integer resourceVersion (%q)",
			obj.GetNamespace(), obj.GetName(), obj.GetResourceVersion())
	}
	s, storeKey, err := c.storeOf(ctx, obj)
	if err != nil {
		return err
	}
	observed := func() bool {
		if rv, ok := parseRV(s.indexer.LastStoreSyncResourceVersion()); ok && rv >= want {
			return true
		}
		item, exists, err := s.indexer.GetByKey(storeKey)
		if err != nil || !exists {
			return false
		}
		m, err := apimeta.Accessor(item)
		if err != nil {
			return false
		}
		rv, ok := parseRV(m.GetResourceVersion())
		return ok && rv >= want
	}
	return poll(ctx, observed, func() string {
		return fmt.Sprintf("the cache to observe %s at resourceVersion %d (store at %q)",
			storeKey, want, s.indexer.LastStoreSyncResourceVersion())
	})
}

// WaitForDeletion waits until the cache no longer holds obj, and returns nil: until
// the informer of obj's GVK and Go type has no object of obj's namespace and name,
// or one with another UID (obj was deleted and re-created). When obj's UID is empty,
// only absence counts. A Get from the cache that follows returns NotFound, or the
// re-created object.
//
// The informer is created and waited for, and errors are returned, as by
// WaitForResourceVersion (obj's resourceVersion is not used).
func (c *Cache) WaitForDeletion(ctx context.Context, obj client.Object) error {
	s, storeKey, err := c.storeOf(ctx, obj)
	if err != nil {
		return err
	}
	uid := obj.GetUID()
	gone := func() bool {
		item, exists, err := s.indexer.GetByKey(storeKey)
		if err != nil || !exists {
			return true
		}
		m, err := apimeta.Accessor(item)
		return err == nil && uid != "" && m.GetUID() != uid
	}
	return poll(ctx, gone, func() string { return fmt.Sprintf("the cache to observe the deletion of %s", storeKey) })
}

// storeOf returns the scoped informer that caches obj, creating and waiting for the
// entry as Get does (scopeForRead), and obj's store key.
func (c *Cache) storeOf(ctx context.Context, obj client.Object) (*scopedInformer, string, error) {
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return nil, "", err
	}
	e, s, err := c.scopeForRead(ctx, gvk, obj.GetNamespace(), obj)
	if err != nil {
		return nil, "", err
	}
	namespace := obj.GetNamespace()
	if !e.namespaced {
		namespace = ""
	}
	if namespace == "" {
		return s, obj.GetName(), nil
	}
	return s, namespace + "/" + obj.GetName(), nil
}

// poll calls done at once and then at intervals doubling from waitPollMin to
// waitPollMax until it returns true (nil) or ctx ends (a Timeout error naming what
// was awaited, wrapping ctx.Err()).
func poll(ctx context.Context, done func() bool, awaited func() string) error {
	interval := waitPollMin
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for {
		if done() {
			return nil
		}
		select {
		case <-ctx.Done():
			timeout := apierrors.NewTimeoutError("timed out waiting for "+awaited(), 0)
			return fmt.Errorf("%w: %w", timeout, ctx.Err())
		case <-timer.C:
		}
		interval = min(2*interval, waitPollMax)
		timer.Reset(interval)
	}
}

// parseRV parses a resourceVersion as an unsigned integer.
func parseRV(rv string) (uint64, bool) {
	n, err := strconv.ParseUint(rv, 10, 64)
	return n, err == nil
}
