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
	"k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/deltacache/deltacache/internal/testenv"
	dcache "github.com/deltacache/deltacache/pkg/cache"
)

// Issue #11's third gap, as a user meets it: two controller-runtime controllers of one
// Manager watch one kind. Each is its own deltacache_handler_* series, with the calls of
// its own handler only; before, both registered the same Go type and added up in one
// series.
func TestEnvtestTwoControllersOnOneKindAreTwoHandlerSeries(t *testing.T) {
	requireEnv(t)
	ns := createNamespace(t, "two-controllers")
	const objects = 3
	for i := range objects {
		create(t, newConfigMap(ns, fmt.Sprintf("cm-%d", i), nil, nil))
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme.Scheme,
		NewCache:               dcache.New,
		Cache:                  crcache.Options{DefaultNamespaces: map[string]crcache.Config{ns: {}}},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: new(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	reconciled := map[string]int{} // controller → requests
	for _, name := range []string{"first", "second"} {
		err := builder.ControllerManagedBy(mgr).Named(name + "-" + ns).For(&corev1.ConfigMap{}).
			Complete(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
				mu.Lock()
				reconciled[name]++
				mu.Unlock()
				return reconcile.Result{}, nil
			}))
		if err != nil {
			t.Fatal(err)
		}
	}
	runManager(t, mgr)

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
