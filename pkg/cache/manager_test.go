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

//nolint:goconst // Test fixtures read better as literals.
package cache_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dcache "github.com/deltacache/deltacache/pkg/cache"
)

// TestEnvtestManagerReconcilesThroughDeltacache wires the cache into a Manager the way
// the demo operator does (manager.Options.NewCache) and checks that a controller built
// with the builder gets its events from deltacache informers and that the manager's
// client reads — including a MatchingLabels List served by the label index — come from
// the cache.
func TestEnvtestManagerReconcilesThroughDeltacache(t *testing.T) {
	requireEnv(t)
	ns := createNamespace(t, "manager")
	app := "app-" + ns
	create(t, newConfigMap(ns, "existing", map[string]string{appLabel: app}, nil))

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme.Scheme,
		NewCache:               dcache.NewWith(dcache.WithLabelIndexes(appLabel)),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: new(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	dc, ok := mgr.GetCache().(*dcache.Cache)
	if !ok {
		t.Fatalf("manager cache is %T, want *cache.Cache", mgr.GetCache())
	}

	var mu sync.Mutex
	seen := map[string][]string{} // reconciled name → app members listed at that time
	err = builder.ControllerManagedBy(mgr).
		Named("configmaps-"+ns).
		For(&corev1.ConfigMap{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetNamespace() == ns
		}))).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			var members corev1.ConfigMapList
			err := mgr.GetClient().List(ctx, &members, client.InNamespace(req.Namespace), client.MatchingLabels{appLabel: app})
			if err != nil {
				return reconcile.Result{}, err
			}
			names := make([]string, 0, len(members.Items))
			for _, m := range members.Items {
				names = append(names, m.Name)
			}
			slices.Sort(names)
			mu.Lock()
			seen[req.Name] = names
			mu.Unlock()
			return reconcile.Result{}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}

	ctx := runManager(t, mgr)

	create(t, newConfigMap(ns, "added", map[string]string{appLabel: app}, nil))
	eventually(t, 20*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		existing := seen["existing"]
		if !slices.Equal(existing, []string{"existing"}) && !slices.Equal(existing, []string{"added", "existing"}) {
			return fmt.Errorf("existing reconciled with %v", seen["existing"])
		}
		if !slices.Equal(seen["added"], []string{"added", "existing"}) {
			return fmt.Errorf("added reconciled with %v", seen["added"])
		}
		return nil
	})

	var got corev1.ConfigMap
	if err := mgr.GetClient().Get(ctx, types.NamespacedName{Namespace: ns, Name: "added"}, &got); err != nil {
		t.Fatal(err)
	}
	stats := dc.ListStats(gvkConfigMap)
	if stats.LabelIndex < 2 || stats.Scan != 0 || stats.NamespaceIndex != 0 {
		t.Errorf("reconciler Lists: stats = %+v, want only label-index Lists (at least 2)", stats)
	}
}

// TestEnvtestReadYourWritesConsistencyWorksOnDeltacache builds controller-runtime's
// consistent client on the cache (it needs cacheapi.Informers, handlers on the informer
// and resourceVersions in events): a Get right after a Create or Update through that
// client sees the write.
func TestEnvtestReadYourWritesConsistencyWorksOnDeltacache(t *testing.T) {
	requireEnv(t)
	ns := createNamespace(t, "ryw")
	c := startEnvCache(t, crcache.Options{})
	cl, err := client.New(cfg, client.Options{
		Scheme: scheme.Scheme,
		Mapper: mapper,
		Cache:  &client.CacheOptions{Reader: c, EnableReadYourWritesConsistency: new(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := envCtx(t)
	for i := range 5 {
		cm := newConfigMap(ns, fmt.Sprintf("cm-%d", i), nil, map[string]string{"v": "0"})
		if err := cl.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		var got corev1.ConfigMap
		if err := cl.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil {
			t.Fatalf("Get right after Create: %v", err)
		}
		cm.Data["v"] = "1"
		if err := cl.Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
		if err := cl.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil || got.Data["v"] != "1" {
			t.Fatalf("Get right after Update: %v, data %v", err, got.Data)
		}
	}
	var list corev1.ConfigMapList
	if err := cl.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 5 {
		t.Errorf("List after 5 Creates returned %d items", len(list.Items))
	}
}
