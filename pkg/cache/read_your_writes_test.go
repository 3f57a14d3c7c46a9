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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func liveConfigMap(name string, uid types.UID, data string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, UID: uid},
		Data:       map[string]string{"v": data},
	}
}

// startLiveConfigMaps starts a cache on a liveAPI holding a/x (resourceVersion 2) and
// syncs its ConfigMap informer.
func startLiveConfigMaps(t *testing.T, opts crcache.Options, options ...Option) (*Cache, *liveAPI) {
	t.Helper()
	c, api := newLiveCache(t, opts, options...)
	api.fake(gvkConfigMap).Create(liveConfigMap("x", "uid-1", "0"))
	startCache(t, c)
	if err := c.Get(testCtx(t), client.ObjectKey{Namespace: "a", Name: "x"}, &corev1.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	return c, api
}

func TestWaitForResourceVersionReturnsOnceTheCacheHoldsThatVersion(t *testing.T) {
	c, api := startLiveConfigMaps(t, crcache.Options{})
	ctx := testCtx(t)
	f := api.fake(gvkConfigMap)

	for i, data := range []string{"1", "2", "3"} {
		written := f.Update(liveConfigMap("x", "uid-1", data)).(*corev1.ConfigMap)
		if err := c.WaitForResourceVersion(ctx, written); err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
		var got corev1.ConfigMap
		if err := c.Get(ctx, client.ObjectKeyFromObject(written), &got); err != nil {
			t.Fatal(err)
		}
		if got.ResourceVersion != written.ResourceVersion || got.Data["v"] != data {
			t.Errorf("update %d: cache has rv %s data %v, want rv %s data %s",
				i, got.ResourceVersion, got.Data, written.ResourceVersion, data)
		}
	}
	// An older version than the cached one is observed already.
	old := liveConfigMap("x", "uid-1", "")
	old.ResourceVersion = "2"
	if err := c.WaitForResourceVersion(ctx, old); err != nil {
		t.Errorf("older resourceVersion: %v", err)
	}
}

func TestWaitForResourceVersionCountsTheStoreResourceVersionForLaterChanges(t *testing.T) {
	c, api := startLiveConfigMaps(t, crcache.Options{})
	ctx := testCtx(t)
	f := api.fake(gvkConfigMap)

	// x was written at rv 3, then another object moved the store to rv 4: x at 3 is
	// observed even if the awaited version is 4 (x changed no more, or was filtered).
	f.Update(liveConfigMap("x", "uid-1", "1"))
	other := f.Create(liveConfigMap("y", "uid-2", "0")).(*corev1.ConfigMap)
	x := liveConfigMap("x", "uid-1", "")
	x.ResourceVersion = other.ResourceVersion
	if err := c.WaitForResourceVersion(ctx, x); err != nil {
		t.Fatal(err)
	}
	var got corev1.ConfigMap
	err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "y"}, &got)
	if err != nil || got.ResourceVersion != other.ResourceVersion {
		t.Errorf("y: %v rv %q, want rv %s", err, got.ResourceVersion, other.ResourceVersion)
	}

	// A deleted object: its deletion's resourceVersion is observed once the store
	// reflects it, and the object is gone.
	deleted := f.Delete(liveConfigMap("x", "uid-1", "")).(*corev1.ConfigMap)
	if err := c.WaitForResourceVersion(ctx, deleted); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "x"}, &got); !apierrors.IsNotFound(err) {
		t.Errorf("Get after the deletion was observed: %v, want NotFound", err)
	}
}

func TestWaitForDeletionReturnsWhenTheObjectIsGoneOrReCreated(t *testing.T) {
	c, api := startLiveConfigMaps(t, crcache.Options{})
	ctx := testCtx(t)
	f := api.fake(gvkConfigMap)

	original := liveConfigMap("x", "uid-1", "")
	f.Delete(original)
	if err := c.WaitForDeletion(ctx, original); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(original), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("Get after WaitForDeletion: %v, want NotFound", err)
	}

	// Re-created with a new UID: the deletion of the first incarnation is observed
	// once the cache holds the second (or nothing).
	created := f.Create(liveConfigMap("x", "uid-2", "again")).(*corev1.ConfigMap)
	if err := c.WaitForResourceVersion(ctx, created); err != nil {
		t.Fatal(err) // from here the cache holds uid-2
	}
	f.Delete(liveConfigMap("x", "", ""))
	f.Create(liveConfigMap("x", "uid-3", "third"))
	second := liveConfigMap("x", "uid-2", "")
	if err := c.WaitForDeletion(ctx, second); err != nil {
		t.Fatal(err)
	}
	var got corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKeyFromObject(second), &got); err == nil && got.UID == "uid-2" {
		t.Errorf("cache still holds uid-2 after WaitForDeletion")
	}
}

func TestWaitForResourceVersionAndDeletionErrors(t *testing.T) {
	c, _ := newLiveCache(t, crcache.Options{})
	ctx := testCtx(t)
	written := liveConfigMap("x", "uid-1", "")
	written.ResourceVersion = "7"

	var notStarted *crcache.ErrCacheNotStarted
	if err := c.WaitForResourceVersion(ctx, written); !errors.As(err, &notStarted) {
		t.Errorf("before Start: %v, want ErrCacheNotStarted", err)
	}
	if err := c.WaitForDeletion(ctx, written); !errors.As(err, &notStarted) {
		t.Errorf("WaitForDeletion before Start: %v, want ErrCacheNotStarted", err)
	}
	startCache(t, c)

	if err := c.WaitForResourceVersion(ctx, liveConfigMap("x", "", "")); err == nil {
		t.Error("an object without resourceVersion was accepted")
	}
	notYet := liveConfigMap("x", "", "")
	notYet.ResourceVersion = "100"
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	err := c.WaitForResourceVersion(short, notYet)
	if !apierrors.IsTimeout(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("unobserved resourceVersion: %v, want a Timeout wrapping DeadlineExceeded", err)
	}
}

func TestWaitForResourceVersionInANamespaceTheCacheDoesNotHoldIsAnError(t *testing.T) {
	c, _ := newLiveCache(t, crcache.Options{DefaultNamespaces: map[string]crcache.Config{"a": {}}})
	startCache(t, c)
	elsewhere := liveConfigMap("x", "", "")
	elsewhere.Namespace = "b"
	elsewhere.ResourceVersion = "2"
	// The informer of namespace a exists and has synced: the lookup a Get shares with
	// the waits finds no scope for b and reports it.
	if err := c.Get(testCtx(t), client.ObjectKey{Namespace: "a", Name: "none"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Get in a: %v, want NotFound", err)
	}
	const want = `namespace "b" is not cached`
	if err := c.WaitForResourceVersion(testCtx(t), elsewhere); err == nil || err.Error() != want {
		t.Errorf("WaitForResourceVersion in an uncached namespace: %v, want %q", err, want)
	}
	if err := c.WaitForDeletion(testCtx(t), elsewhere); err == nil || err.Error() != want {
		t.Errorf("WaitForDeletion in an uncached namespace: %v, want %q", err, want)
	}
	const wantGet = "unable to get: b/x because of unknown namespace for the cache"
	if err := c.Get(testCtx(t), client.ObjectKeyFromObject(elsewhere), &corev1.ConfigMap{}); err == nil || err.Error() != wantGet {
		t.Errorf("Get in an uncached namespace: %v, want %q", err, wantGet)
	}
}
