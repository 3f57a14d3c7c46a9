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

package cache_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/deltacache/deltacache/internal/testenv"
)

// Issue #11's third gap, as a user meets it: two controller-runtime controllers watch
// one kind (what the builder's For does: source.Kind with EnqueueRequestForObject; the
// controllers run unmanaged on a cache of the test's own, so that no Manager's event
// recorder outlives the test). Each is its own deltacache_handler_* series, with the
// calls of its own handler only; before, both registered the same Go type and added up
// in one series.
func TestEnvtestTwoControllersOnOneKindAreTwoHandlerSeries(t *testing.T) {
	requireEnv(t)
	ns := createNamespace(t, "two-controllers")
	const objects = 3
	for i := range objects {
		create(t, newConfigMap(ns, fmt.Sprintf("cm-%d", i), nil, nil))
	}
	c := startEnvCache(t, crcache.Options{DefaultNamespaces: map[string]crcache.Config{ns: {}}})
	ctx, cancel := context.WithCancel(envCtx(t))
	var mu sync.Mutex
	reconciled := map[string]int{} // controller → requests
	var running sync.WaitGroup
	t.Cleanup(func() { cancel(); running.Wait() })
	for _, name := range []string{"first", "second"} {
		ctrl, err := controller.NewUnmanaged(name+"-"+ns, controller.Options{
			SkipNameValidation: new(true),
			Reconciler: reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
				mu.Lock()
				reconciled[name]++
				mu.Unlock()
				return reconcile.Result{}, nil
			}),
		})
		if err != nil {
			t.Fatal(err)
		}
		forObject := &handler.TypedEnqueueRequestForObject[*corev1.ConfigMap]{}
		if err := ctrl.Watch(source.Kind(c, &corev1.ConfigMap{}, forObject)); err != nil {
			t.Fatal(err)
		}
		running.Go(func() {
			if err := ctrl.Start(ctx); err != nil {
				t.Errorf("controller %s: %v", name, err)
			}
		})
	}

	// Each controller's handler is called once per ConfigMap (its initial add): two
	// series of `objects` calls each, not one series of twice as many.
	const calls = "deltacache_handler_processing_latency_seconds_count"
	labels := map[string]string{"group": "", "version": "v1", "kind": "ConfigMap", "shape": "typed"}
	want := map[string]float64{
		calls + "{handler=source.Kind handler.TypedEnqueueRequestForObject}":   objects,
		calls + "{handler=source.Kind handler.TypedEnqueueRequestForObject#2}": objects,
	}
	var series map[string]float64
	eventually(t, 20*time.Second, func() error {
		series = map[string]float64{}
		for k, v := range testenv.Series(t, metrics.Registry, labels) {
			if strings.HasPrefix(k, calls+"{") {
				series[k] = v
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if reconciled["first"] < objects || reconciled["second"] < objects {
			return fmt.Errorf("reconciled %v, want %d each", reconciled, objects)
		}
		if !maps.Equal(series, want) {
			return fmt.Errorf("handler call series %v, want %v", series, want)
		}
		return nil
	})
	t.Logf("handler series: %v", series)
}
