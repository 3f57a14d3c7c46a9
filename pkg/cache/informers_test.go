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
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/deltacache/deltacache/pkg/informer"
)

func TestReadsBeforeStartReturnErrCacheNotStartedAndCreateTheInformer(t *testing.T) {
	api := newFakeAPI(t, configMap("a", "x", nil))
	c := newTestCache(t, api, crcache.Options{})
	ctx := testCtx(t)

	err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "x"}, &corev1.ConfigMap{})
	var notStarted *crcache.ErrCacheNotStarted
	if !errors.As(err, &notStarted) {
		t.Fatalf("Get before Start: err = %v, want ErrCacheNotStarted", err)
	}
	err = c.List(ctx, &corev1.PodList{})
	if !errors.As(err, &notStarted) {
		t.Fatalf("List before Start: err = %v, want ErrCacheNotStarted", err)
	}
	if got := len(c.informers.snapshot()); got != 2 {
		t.Fatalf("informers after reads before Start = %d, want 2 (ConfigMap, Pod)", got)
	}
	if len(api.listCalls()) != 0 {
		t.Fatalf("informers listed before Start")
	}

	startCache(t, c) // WaitForCacheSync covers the two informers created before Start.
	if got := len(api.listCalls()); got != 2 {
		t.Errorf("list calls after Start = %d, want 2", got)
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "x"}, &cm); err != nil || cm.Name != "x" {
		t.Errorf("Get after Start: %v, %q", err, cm.Name)
	}
}

func TestGetInformerBeforeStartDoesNotBlock(t *testing.T) {
	c := newTestCache(t, newFakeAPI(t), crcache.Options{})
	inf, err := c.GetInformer(testCtx(t), &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	if inf.HasSynced() {
		t.Error("informer synced before Start")
	}
	if _, ok := inf.(*informer.SharedIndexInformer); !ok {
		t.Errorf("GetInformer returned %T, want *informer.SharedIndexInformer", inf)
	}
}

func TestStartBlocksUntilContextEndsAndSecondStartFails(t *testing.T) {
	c := newTestCache(t, newFakeAPI(t), crcache.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()

	waitCtx, waitCancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer waitCancel()
	if !c.WaitForCacheSync(waitCtx) {
		t.Fatal("WaitForCacheSync returned false")
	}
	if err := c.Start(ctx); err == nil || !strings.Contains(err.Error(), "already started") {
		t.Errorf("second Start: err = %v, want already started", err)
	}
	select {
	case err := <-done:
		t.Fatalf("Start returned %v before its context ended", err)
	case <-time.After(200 * time.Millisecond):
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Start returned %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Start did not return after cancel")
	}
}

func TestWaitForCacheSyncReturnsFalseWhenNotStarted(t *testing.T) {
	c := newTestCache(t, newFakeAPI(t), crcache.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if c.WaitForCacheSync(ctx) {
		t.Error("WaitForCacheSync returned true before Start")
	}
}

func TestReaderFailOnMissingInformerReturnsErrResourceNotCached(t *testing.T) {
	api := newFakeAPI(t, configMap("a", "x", nil))
	c := newTestCache(t, api, crcache.Options{ReaderFailOnMissingInformer: true})
	startCache(t, c)
	ctx := testCtx(t)

	err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "x"}, &corev1.ConfigMap{})
	var notCached *crcache.ErrResourceNotCached
	if !errors.As(err, &notCached) || notCached.GVK != gvkConfigMap {
		t.Fatalf("Get: err = %v, want ErrResourceNotCached for ConfigMap", err)
	}
	if err := c.List(ctx, &corev1.ConfigMapList{}); !errors.As(err, &notCached) {
		t.Fatalf("List: err = %v, want ErrResourceNotCached", err)
	}
	if len(api.listCalls()) != 0 {
		t.Fatal("a read created an informer")
	}

	if _, err := c.GetInformer(ctx, &corev1.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "x"}, &cm); err != nil || cm.Name != "x" {
		t.Errorf("Get after GetInformer: %v %q", err, cm.Name)
	}
}

func TestBlockingReadReturnsForbiddenPromptly(t *testing.T) {
	api := newFakeAPI(t)
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: configMapsResource}, "", errors.New("RBAC says no"))
	api.setListError(forbidden)
	c := newTestCache(t, api, crcache.Options{})
	startCache(t, c)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	err := c.List(ctx, &corev1.ConfigMapList{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("err = %v, want Forbidden", err)
	}
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("took %v to report Forbidden", elapsed)
	}
}

func TestBlockingReadWaitsThroughTransientErrorsAndTimesOutWithTheLastOne(t *testing.T) {
	api := newFakeAPI(t)
	api.setListError(apierrors.NewServiceUnavailable("etcd is sleeping"))
	c := newTestCache(t, api, crcache.Options{})
	startCache(t, c)

	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "x"}, &corev1.ConfigMap{})
	if !apierrors.IsTimeout(err) {
		t.Fatalf("err = %v, want Timeout", err)
	}
	if !strings.Contains(err.Error(), "etcd is sleeping") {
		t.Errorf("timeout error %q does not carry the last list error", err)
	}
	if ctx.Err() == nil {
		t.Errorf("returned before the context ended")
	}
}

func TestWithWaitThroughSyncErrorsWaitsForTheContext(t *testing.T) {
	api := newFakeAPI(t)
	api.setListError(apierrors.NewForbidden(schema.GroupResource{Resource: configMapsResource}, "", errors.New("no")))
	c := newTestCache(t, api, crcache.Options{}, WithWaitThroughSyncErrors())
	startCache(t, c)

	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	err := c.List(ctx, &corev1.ConfigMapList{})
	if !apierrors.IsTimeout(err) {
		t.Fatalf("err = %v, want Timeout", err)
	}
}

func TestRemoveInformerStopsAndForgetsIt(t *testing.T) {
	api := newFakeAPI(t, configMap("a", "x", nil))
	c := newTestCache(t, api, crcache.Options{})
	startCache(t, c)
	ctx := testCtx(t)

	inf, err := c.GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveInformer(ctx, &corev1.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !inf.IsStopped() {
		if time.Now().After(deadline) {
			t.Fatal("removed informer did not stop")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(c.informers.snapshot()) != 0 {
		t.Error("removed informer is still in the map")
	}
	// Removing again is a no-op; the next read builds a new informer.
	if err := c.RemoveInformer(ctx, &corev1.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "x"}, &cm); err != nil {
		t.Fatal(err)
	}
	if got := len(api.listCalls()); got != 2 {
		t.Errorf("list calls = %d, want 2 (one per informer)", got)
	}
	again, _ := c.GetInformer(ctx, &corev1.ConfigMap{})
	if again == inf {
		t.Error("GetInformer after RemoveInformer returned the removed informer")
	}
}

func TestTypedUnstructuredAndMetadataAreDistinctInformers(t *testing.T) {
	c := newTestCache(t, newFakeAPI(t), crcache.Options{})
	ctx := testCtx(t)
	typed, err := c.GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	pom := &metav1.PartialObjectMetadata{}
	pom.SetGroupVersionKind(gvkConfigMap)
	meta, err := c.GetInformer(ctx, pom)
	if err != nil {
		t.Fatal(err)
	}
	byKind, err := c.GetInformerForKind(ctx, gvkConfigMap)
	if err != nil {
		t.Fatal(err)
	}
	if typed == meta {
		t.Error("typed and metadata informers are the same")
	}
	if byKind != typed {
		t.Error("GetInformerForKind of a Scheme kind did not return the typed informer")
	}
}

func TestGetInformerOfUnknownKindReturnsNoKindMatch(t *testing.T) {
	c := newTestCache(t, newFakeAPI(t), crcache.Options{})
	_, err := c.GetInformer(testCtx(t), &corev1.Secret{})
	if err == nil || !strings.Contains(err.Error(), "no matches for kind") {
		t.Fatalf("err = %v, want a no-kind-match error", err)
	}
}

func TestEntryKeyNamesKindVersionGroupAndShape(t *testing.T) {
	for _, tc := range []struct {
		key  entryKey
		want string
	}{
		{entryKey{gvk: gvkPod}, "Pod.v1"},
		{entryKey{gvk: gvkWidget, shape: shapeUnstructured}, "Widget.v1.example.com (unstructured)"},
		{entryKey{gvk: gvkConfigMap, shape: shapeMetadata}, "ConfigMap.v1 (metadata)"},
	} {
		if got := tc.key.String(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}
