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
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/deltacache/deltacache/internal/testenv"
	"github.com/deltacache/deltacache/pkg/informer"
)

func forbiddenPods() error {
	return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("RBAC says no"))
}

// fastBackoff retries failed lists within milliseconds.
var fastBackoff = informer.Backoff{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond, Jitter: -1}

// createInformers creates the informers of objs without waiting for them to sync.
func createInformers(t *testing.T, c *Cache, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		if _, err := c.GetInformer(testCtx(t), obj, crcache.BlockUntilSynced(false)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWaitForCacheSyncReturnsFalseOnceEveryUnsyncedInformerIsForbidden(t *testing.T) {
	api := newFakeAPI(t, configMap("a", "x", nil))
	api.setListErrorFor(gvkPod, forbiddenPods())
	c := newTestCache(t, api, crcache.Options{})
	startCache(t, c)
	createInformers(t, c, &corev1.ConfigMap{}, &corev1.Pod{})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if c.WaitForCacheSync(ctx) {
		t.Fatal("WaitForCacheSync returned true with the Pod informer forbidden")
	}
	if ctx.Err() != nil {
		t.Fatal("WaitForCacheSync waited for its context instead of returning on the Forbidden error")
	}
	if err := c.SyncError(gvkPod); !apierrors.IsForbidden(err) {
		t.Errorf("SyncError(Pod) = %v, want Forbidden", err)
	}
	var lwe *informer.ListWatchError
	err := c.SyncError(gvkPod)
	if !errors.As(err, &lwe) || lwe.Reason != informer.ReasonForbidden || lwe.Name != "Pod.v1" {
		t.Errorf("SyncError(Pod) = %#v, want the Pod.v1 informer's ListWatchError with reason Forbidden", err)
	}
	if err := c.SyncError(gvkConfigMap); err != nil {
		t.Errorf("SyncError(ConfigMap) = %v, want nil (synced)", err)
	}
	if err := c.SyncError(gvkNode); err != nil {
		t.Errorf("SyncError(Node) = %v, want nil (no informer)", err)
	}
	errs := c.SyncErrors()
	if len(errs) != 1 || !apierrors.IsForbidden(errs[gvkPod]) {
		t.Errorf("SyncErrors() = %v, want only Pod: Forbidden", errs)
	}
}

func TestWaitForCacheSyncWaitsForTheContextOnTransientErrors(t *testing.T) {
	api := newFakeAPI(t)
	api.setListErrorFor(gvkPod, apierrors.NewServiceUnavailable("etcd is sleeping"))
	c := newTestCache(t, api, crcache.Options{}, WithBackoff(fastBackoff))
	startCache(t, c)
	createInformers(t, c, &corev1.Pod{})

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if c.WaitForCacheSync(ctx) {
		t.Fatal("WaitForCacheSync returned true")
	}
	if ctx.Err() == nil {
		t.Fatal("WaitForCacheSync gave up on a transient error before its context ended")
	}
	if err := c.SyncError(gvkPod); !apierrors.IsServiceUnavailable(err) {
		t.Errorf("SyncError(Pod) = %v, want ServiceUnavailable", err)
	}
}

func TestWaitForCacheSyncWithWaitThroughSyncErrorsWaitsForTheContext(t *testing.T) {
	api := newFakeAPI(t)
	api.setListErrorFor(gvkPod, forbiddenPods())
	c := newTestCache(t, api, crcache.Options{}, WithWaitThroughSyncErrors())
	startCache(t, c)
	createInformers(t, c, &corev1.Pod{})

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if c.WaitForCacheSync(ctx) {
		t.Fatal("WaitForCacheSync returned true")
	}
	if ctx.Err() == nil {
		t.Fatal("WaitForCacheSync returned before its context ended despite WithWaitThroughSyncErrors")
	}
}

func TestWaitForCacheSyncTurnsTrueAndSyncErrorNilOnceTheErrorIsFixed(t *testing.T) {
	api := newFakeAPI(t)
	api.setListErrorFor(gvkPod, forbiddenPods())
	c := newTestCache(t, api, crcache.Options{}, WithBackoff(fastBackoff))
	startCache(t, c)
	createInformers(t, c, &corev1.Pod{})
	ctx := testCtx(t)
	if c.WaitForCacheSync(ctx) {
		t.Fatal("WaitForCacheSync returned true while forbidden")
	}

	// The error stays until the next attempt succeeds; then the informer syncs.
	api.setListErrorFor(gvkPod, nil)
	waitUntil(t, "a successful list", func() bool { return c.SyncError(gvkPod) == nil })
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("WaitForCacheSync returned false after the list was allowed")
	}
	if err := c.SyncError(gvkPod); err != nil {
		t.Errorf("SyncError(Pod) = %v after sync, want nil", err)
	}
	if errs := c.SyncErrors(); len(errs) != 0 {
		t.Errorf("SyncErrors() = %v after sync, want empty", errs)
	}
}

func TestNotFoundListIsReportedAsNoKindMatchNotAsAMissingObject(t *testing.T) {
	api := newFakeAPI(t)
	api.setListErrorFor(gvkWidget,
		apierrors.NewNotFound(schema.GroupResource{Group: exampleGroup, Resource: "widgets"}, ""))
	c := newTestCache(t, api, crcache.Options{})
	startCache(t, c)

	u := newObjectOf(entryKey{gvk: gvkWidget})
	err := c.Get(testCtx(t), client.ObjectKey{Namespace: "a", Name: "w"}, u.(client.Object))
	var kindErr *meta.NoKindMatchError
	if !errors.As(err, &kindErr) || kindErr.GroupKind != gvkWidget.GroupKind() {
		t.Fatalf("err = %v, want a *meta.NoKindMatchError for %v", err, gvkWidget.GroupKind())
	}
	if apierrors.IsNotFound(err) {
		t.Errorf("err = %v satisfies apierrors.IsNotFound; client.IgnoreNotFound would swallow it", err)
	}
	if !strings.Contains(err.Error(), `list failed (NotFound): widgets.example.com "" not found`) {
		t.Errorf("err = %q does not carry the list error", err)
	}
	// SyncError keeps the list/watch error as it is.
	if err := c.SyncError(gvkWidget); !apierrors.IsNotFound(err) {
		t.Errorf("SyncError(Widget) = %v, want the NotFound list error", err)
	}
}

// waitUntil polls cond every 5ms until it holds, failing the test after 10s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestForbiddenListIsLoggedOncePerBackoffStepNotPerRead(t *testing.T) {
	api := newFakeAPI(t)
	api.setListErrorFor(gvkPod, forbiddenPods())
	log, logs := testenv.CaptureLogs()
	c := newTestCache(t, api, crcache.Options{},
		WithLogger(log),
		WithBackoff(informer.Backoff{Initial: time.Second, Factor: 2, Max: time.Hour, Jitter: -1}))
	fc := clocktesting.NewFakeClock(time.Now())
	c.clock = fc
	startCache(t, c)
	createInformers(t, c, &corev1.Pod{})
	failed := func() []string { return logs.Matching(`"msg"="list/watch failed; retrying"`, `"informer"="Pod.v1"`) }

	// The Reflector sleeps on the fake clock between attempts (its only timer while
	// the list fails), so an attempt happens exactly when the clock passes its delay.
	// An attempt may send more than one request (a WatchList, then a LIST).
	sleeping := func() bool { return fc.Waiters() == 1 }
	waitUntil(t, "the first failure", func() bool { return len(failed()) == 1 && sleeping() })
	perAttempt := api.listCallsOf(gvkPod)

	// Reads and sync waits while the informer is failing do not log list errors.
	ctx := testCtx(t)
	for range 10 {
		if err := c.List(ctx, &corev1.PodList{}); !apierrors.IsForbidden(err) {
			t.Fatalf("List: %v, want Forbidden", err)
		}
	}
	for range 3 {
		if c.WaitForCacheSync(ctx) {
			t.Fatal("WaitForCacheSync returned true")
		}
	}
	if got := api.listCallsOf(gvkPod); got != perAttempt {
		t.Fatalf("requests before the first delay elapsed = %d, want %d (one attempt)", got, perAttempt)
	}
	if got := failed(); len(got) != 1 || !strings.Contains(got[0], `"retryIn"="1s"`) {
		t.Fatalf("list failure lines after one attempt = %q, want one with retryIn 1s", got)
	}
	if got := logs.Matching(`"msg"="cache cannot sync`); len(got) != 3 {
		t.Errorf("cache-cannot-sync lines = %d, want 3 (one per WaitForCacheSync)", len(got))
	}

	// Each elapsed delay is one more attempt and one more line, with the next delay.
	for step, delay := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		fc.Step(delay)
		attempts := step + 2
		waitUntil(t, fmt.Sprintf("failure %d", attempts), func() bool { return len(failed()) >= attempts && sleeping() })
		got := failed()
		if len(got) != attempts {
			t.Fatalf("after %d attempts: %d list failure lines: %q", attempts, len(got), got)
		}
		if calls := api.listCallsOf(gvkPod); calls != attempts*perAttempt {
			t.Errorf("after %d attempts: %d requests, want %d", attempts, calls, attempts*perAttempt)
		}
		if want := fmt.Sprintf(`"retryIn"="%s"`, 2*delay); !strings.Contains(got[attempts-1], want) {
			t.Errorf("line %d = %s, want %s", attempts, got[attempts-1], want)
		}
	}
}

// An informer that stopped without syncing because the cache stopped never will, so
// WaitForCacheSync is false (controller-runtime's waits for its context, then is false),
// while a removed informer is not waited for.
func TestWaitForCacheSyncIsFalseOnceTheCacheStoppedBeforeAnInformerSynced(t *testing.T) {
	api := newFakeAPI(t, configMap("ns1", "a", nil))
	api.setListError(apierrors.NewInternalError(errors.New("transient")))
	c := newTestCache(t, api, crcache.Options{})
	if _, err := c.GetInformer(testCtx(t), &corev1.ConfigMap{}, crcache.BlockUntilSynced(false)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	waitUntil(t, "the ConfigMap informer's list error", func() bool {
		return c.SyncError(corev1.SchemeGroupVersion.WithKind("ConfigMap")) != nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waitCtx, waitCancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer waitCancel()
	start := time.Now()
	if c.WaitForCacheSync(waitCtx) {
		t.Error("WaitForCacheSync is true although the ConfigMap informer never synced")
	}
	if waited := time.Since(start); waited > 2*time.Second {
		t.Errorf("WaitForCacheSync took %v to give up on a stopped cache, want no wait for its context", waited)
	}

	if err := c.RemoveInformer(testCtx(t), &corev1.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	if !c.WaitForCacheSync(waitCtx) {
		t.Error("WaitForCacheSync is false with the only unsynced informer removed")
	}
}
