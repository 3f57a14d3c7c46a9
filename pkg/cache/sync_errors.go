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
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Errors that keep informers from syncing are values: blocking reads return them
// (waitForSync), WaitForCacheSync gives up on them, and SyncError/SyncErrors return
// them. This file holds the classification and the cache-wide API.

// SyncError returns the error that keeps the informers of gvk (every shape: typed,
// unstructured, metadata-only; every namespace) from syncing or from staying in sync:
// each informer's last list/watch error, a *informer.ListWatchError wrapping the API
// error (so apierrors.IsForbidden and friends work on it), cleared by the informer's
// next successful list or watch. Several failing informers give their errors joined
// with errors.Join. It returns nil when the kind has no informer or all of its
// informers are healthy. It never blocks and creates no informer.
//
// controller-runtime has no equivalent: its informers only report errors to the
// WatchErrorHandler and the log (controller-runtime #1653).
func (c *Cache) SyncError(gvk schema.GroupVersionKind) error {
	var errs []error
	for _, s := range c.informers.scopesOf(gvk) {
		if err := s.informer.LastError(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// SyncErrors returns SyncError for every GVK whose informers report an error; an
// empty map when all are healthy.
func (c *Cache) SyncErrors() map[schema.GroupVersionKind]error {
	out := make(map[schema.GroupVersionKind]error)
	for _, gvk := range c.informers.gvks() {
		if err := c.SyncError(gvk); err != nil {
			out[gvk] = err
		}
	}
	return out
}

// WaitForCacheSync waits until Start was called, then until every informer that
// exists now has synced (informers removed meanwhile are not waited for), and returns
// true. It returns false when ctx ends first; when an informer stopped without having
// synced because the cache stopped (it never will: controller-runtime would wait for
// ctx, then return false); and — unless waitThroughErrors — as soon as every informer
// that has not synced yet reports an error that retrying will not fix
// (isPermanentSyncError: Forbidden, Unauthorized, a resource that is not served, ...),
// logging those errors once. Informers that wait on transient errors (timeouts, 5xx,
// 429) are waited for until ctx ends.
func (m *informerMap) WaitForCacheSync(ctx context.Context, waitThroughErrors bool) bool {
	select {
	case <-m.startWait:
	case <-ctx.Done():
		return false
	}
	pending := m.snapshot()
	ticker := time.NewTicker(syncErrorPollInterval)
	defer ticker.Stop()
	for {
		pending = slices.DeleteFunc(pending, (*scopedInformer).syncedOrRemoved)
		if len(pending) == 0 {
			return true
		}
		if slices.ContainsFunc(pending, (*scopedInformer).isStopped) {
			return false
		}
		if !waitThroughErrors {
			if errs := permanentErrors(pending); errs != nil {
				m.log.Error(errors.Join(errs...), "cache cannot sync: informers fail with errors that retrying will not fix",
					"failing", len(errs))
				return false
			}
		}
		select {
		case <-ctx.Done():
			return false
		case <-pending[0].informer.HasSyncedChecker().Done():
		case <-pending[0].stopped:
		case <-ticker.C:
		}
	}
}

// syncedOrRemoved reports whether s has synced or was removed with RemoveInformer.
func (s *scopedInformer) syncedOrRemoved() bool {
	return s.informer.HasSynced() || s.removed.Load()
}

// isStopped reports whether s will never run (again).
func (s *scopedInformer) isStopped() bool {
	select {
	case <-s.stopped:
		return true
	default:
		return false
	}
}

// permanentErrors returns the last error of every informer of pending if each has one
// that retrying will not fix, else nil.
func permanentErrors(pending []*scopedInformer) []error {
	errs := make([]error, 0, len(pending))
	for _, s := range pending {
		last := s.informer.LastError()
		if last == nil || !isPermanentSyncError(last) {
			return nil
		}
		errs = append(errs, last)
	}
	return errs
}

// isPermanentSyncError reports whether err, returned by a list or watch, will keep the
// informer from syncing until something outside it changes (RBAC, a CRD, the request):
// retrying with backoff will not help, so a blocking read returns it instead of waiting.
func isPermanentSyncError(err error) bool {
	return apierrors.IsForbidden(err) ||
		apierrors.IsUnauthorized(err) ||
		apierrors.IsNotFound(err) ||
		apierrors.IsMethodNotSupported(err) ||
		apierrors.IsBadRequest(err) ||
		apierrors.IsInvalid(err) ||
		apierrors.IsNotAcceptable(err) ||
		apierrors.IsUnsupportedMediaType(err)
}

// permanentSyncError is the error a blocking read returns for last, a permanent
// list/watch error of the informer of key. It wraps last, except a NotFound: a LIST
// answered 404 means the resource is not served (its CRD is not installed any more),
// which is reported as a *meta.NoKindMatchError carrying last's text. Wrapping the 404
// would make apierrors.IsNotFound true, and client.IgnoreNotFound would then take a
// cache that cannot read the kind for an object that does not exist.
func permanentSyncError(key entryKey, last error) error {
	if apierrors.IsNotFound(last) {
		return fmt.Errorf("informer for %s cannot sync: %w (list/watch: %v)", key, noKindMatch(key.gvk), last)
	}
	return fmt.Errorf("informer for %s cannot sync: %w", key, last)
}

// noKindMatch is the *meta.NoKindMatchError of gvk.
func noKindMatch(gvk schema.GroupVersionKind) *meta.NoKindMatchError {
	return &meta.NoKindMatchError{GroupKind: gvk.GroupKind(), SearchedVersions: []string{gvk.Version}}
}

// mappingError returns err, an error of the RESTMapper for gvk, so that callers can
// branch on it as controller-runtime's callers do: a no-match error that is not a
// *meta.NoKindMatchError (controller-runtime's dynamic mapper answers a group it has
// never seen with an *apiutil.ErrResourceDiscoveryFailed wrapping a
// *meta.NoResourceMatchError) is wrapped in one, which source.Kind recognises ("if
// kind is a CRD, it should be installed"). Other errors are returned as they are.
func mappingError(gvk schema.GroupVersionKind, err error) error {
	var kindErr *meta.NoKindMatchError
	if !meta.IsNoMatchError(err) || errors.As(err, &kindErr) {
		return err
	}
	return fmt.Errorf("%w: %w", noKindMatch(gvk), err)
}
