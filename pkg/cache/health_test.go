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
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/deltacache/deltacache/pkg/informer"
)

// pollCheck polls check every 10ms until ok accepts its result or 20s pass.
func pollCheck(t *testing.T, what string, check func() error, ok func(error) bool) error {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := check()
		if ok(err) {
			return err
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; last result: %v", what, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestReadyzCheckFailsUntilTheCacheHasStarted(t *testing.T) {
	c := newTestCache(t, newFakeAPI(t), crcache.Options{})
	err := c.ReadyzCheck()(nil)
	if err == nil || err.Error() != "the informer cache has not started" {
		t.Fatalf("readyz before Start = %v", err)
	}
	startCache(t, c)
	if err := c.ReadyzCheck()(nil); err != nil {
		t.Fatalf("readyz of a started cache without informers = %v", err)
	}
}

func TestReadyzCheckNamesTheResourceKindAndLastErrorUntilTheInformerSyncs(t *testing.T) {
	api := newFakeAPI(t, configMap("a", "cm1", nil))
	api.setListErrorFor(gvkConfigMap,
		apierrors.NewForbidden(schema.GroupResource{Resource: configMapsResource}, "", errors.New("RBAC says no")))
	c := newTestCache(t, api, crcache.Options{})
	startCache(t, c)
	if _, err := c.GetInformer(testCtx(t), &corev1.ConfigMap{}, crcache.BlockUntilSynced(false)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetInformer(testCtx(t), &corev1.Pod{}); err != nil {
		t.Fatal(err)
	}

	err := pollCheck(t, "the Forbidden error", readyz(c), func(err error) bool {
		return err != nil && strings.Contains(err.Error(), "RBAC says no")
	})
	msg := err.Error()
	if !strings.HasPrefix(msg, "configmaps: forbidden: ConfigMap.v1: ") || strings.Contains(msg, "pods") ||
		!strings.HasSuffix(msg, `failed (Forbidden): configmaps is forbidden: RBAC says no`) {
		t.Fatalf("readyz message = %q", msg)
	}

	api.setListErrorFor(gvkConfigMap, nil)
	_ = pollCheck(t, "readyz to pass", readyz(c), func(err error) bool { return err == nil })
}

func TestReadyzCheckSaysWhichInformerStillListsWithoutError(t *testing.T) {
	c := newTestCache(t, newFakeAPI(t), crcache.Options{})
	// Not started: the entry exists, its informer has not listed.
	if _, err := c.GetInformer(testCtx(t), &corev1.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	c.informers.mu.Lock()
	c.informers.started = true // as if Start ran, without running the informer
	c.informers.mu.Unlock()
	err := c.ReadyzCheck()(nil)
	if err == nil || err.Error() != "configmaps: not synced yet: ConfigMap.v1 has not completed its initial list" {
		t.Fatalf("readyz = %v", err)
	}
}

func TestHealthzCheckFailsWhenASyncedInformerIsQuietLongerThanTheStallTimeout(t *testing.T) {
	c := newTestCache(t, newFakeAPI(t, configMap("a", "cm1", nil)), crcache.Options{})
	if err := c.HealthzCheck(time.Minute)(nil); err != nil {
		t.Fatalf("healthz before Start = %v", err)
	}
	startCache(t, c)
	inf, err := c.GetInformer(testCtx(t), &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	// The fake API's watch never sends anything: the last activity is the watch's
	// opening, and stays so.
	var last time.Time
	_ = pollCheck(t, "the watch to open", func() error { return nil }, func(error) bool {
		last = inf.(*informer.SharedIndexInformer).LastActivity()
		return inf.HasSynced() && !last.IsZero()
	})
	if err := c.stalled(time.Minute, last.Add(time.Minute)); err != nil {
		t.Fatalf("quiet for exactly the timeout: %v", err)
	}
	err = c.stalled(time.Minute, last.Add(time.Minute+time.Second))
	want := "configmaps: stalled: ConfigMap.v1 has had no watch event, bookmark or successful (re)watch for 1m1s"
	if err == nil || err.Error() != want {
		t.Fatalf("quiet for longer:\n got %v\nwant %s", err, want)
	}
	if err := c.HealthzCheck(0)(nil); err != nil {
		t.Fatalf("healthz with the default timeout = %v", err)
	}
}

func TestPackageChecksRejectCachesThatAreNotDeltacaches(t *testing.T) {
	var other crcache.Cache
	for _, check := range []func() error{
		func() error { return ReadyzCheck(other)(nil) },
		func() error { return HealthzCheck(other, 0)(nil) },
	} {
		if err := check(); err == nil || !strings.Contains(err.Error(), "not deltacache's") {
			t.Errorf("check of a non-deltacache cache = %v", err)
		}
	}
	c := newTestCache(t, newFakeAPI(t), crcache.Options{})
	if err := ReadyzCheck(c)(nil); err == nil || err.Error() != "the informer cache has not started" {
		t.Errorf("ReadyzCheck(*Cache) = %v", err)
	}
}

func TestInformersAreLabelledWithTheirEntrysGVKAndShape(t *testing.T) {
	c := newTestCache(t, newFakeAPI(t), crcache.Options{DefaultNamespaces: map[string]crcache.Config{"a": {}, "b": {}}})
	for _, tc := range []struct {
		key  entryKey
		want informer.MetricLabels
	}{
		{entryKey{gvkConfigMap, shapeTyped},
			informer.MetricLabels{Version: "v1", Kind: configMapKind, Shape: informer.ShapeTyped}},
		{entryKey{gvkWidget, shapeUnstructured},
			informer.MetricLabels{Group: exampleGroup, Version: "v1", Kind: "Widget", Shape: informer.ShapeUnstructured}},
		{entryKey{gvkConfigMap, shapeMetadata},
			informer.MetricLabels{Version: "v1", Kind: configMapKind, Shape: informer.ShapeMetadata}},
	} {
		e, _, err := c.getEntry(testCtx(t), tc.key, nil, false, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := metricLabels(tc.key); got != tc.want {
			t.Errorf("metricLabels(%s) = %+v, want %+v", tc.key, got, tc.want)
		}
		if len(e.scopes) != 2 {
			t.Fatalf("%s: %d scopes, want one per namespace", tc.key, len(e.scopes))
		}
		for _, s := range e.scopes {
			if got := s.informer.MetricLabels(); got != tc.want {
				t.Errorf("%s in %q: labels %+v, want %+v", tc.key, s.scope.namespace, got, tc.want)
			}
		}
	}
}

func readyz(c *Cache) func() error {
	check := c.ReadyzCheck()
	return func() error { return check(nil) }
}
