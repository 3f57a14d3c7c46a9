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
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dcache "github.com/deltacache/deltacache/pkg/cache"
	"github.com/deltacache/deltacache/pkg/informer"
)

// NewInformer builds client-go's informer for ConfigMaps and deltacache's for every
// other kind: ConfigMaps are served by the client-go informer (Get, List, events),
// Secrets by deltacache's, in one cache.
func TestEnvtestNewInformerBuildsAClientGoInformerThatServesGetListAndEvents(t *testing.T) {
	requireEnv(t)
	ns := createNamespace(t, "new-informer")
	create(t, newConfigMap(ns, "cm1", map[string]string{appLabel: "x"}, map[string]string{"k": "v1"}))
	create(t, newConfigMap(ns, "other", map[string]string{appLabel: "y"}, nil))
	create(t, &corev1.Secret{ObjectMeta: newConfigMap(ns, "s1", nil, nil).ObjectMeta})
	var mu sync.Mutex
	var built []string
	newInformer := func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration,
		idx toolscache.Indexers) toolscache.SharedIndexInformer {
		mu.Lock()
		built = append(built, fmt.Sprintf("%T", obj))
		mu.Unlock()
		if _, ok := obj.(*corev1.ConfigMap); ok {
			return toolscache.NewSharedIndexInformer(lw, obj, resync, idx)
		}
		return informer.NewInformer(lw, obj, resync, idx)
	}
	c, err := dcache.NewWith(dcache.WithLabelIndexes(appLabel))(cfg, crcache.Options{
		HTTPClient: httpClient, Mapper: mapper, NewInformer: newInformer,
	})
	if err != nil {
		t.Fatal(err)
	}
	runCache(t, c)
	ctx := envCtx(t)

	cmInf, err := c.GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ours := cmInf.(*informer.SharedIndexInformer); ours {
		t.Fatalf("the ConfigMap informer is deltacache's; want the client-go informer NewInformer built")
	}
	if _, ok := cmInf.(toolscache.SharedIndexInformer); !ok {
		t.Fatalf("the ConfigMap informer is a %T, want a toolscache.SharedIndexInformer", cmInf)
	}
	secretInf, err := c.GetInformer(ctx, &corev1.Secret{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ours := secretInf.(*informer.SharedIndexInformer); !ours {
		t.Errorf("the Secret informer is a %T, want deltacache's", secretInf)
	}

	// Events.
	var added []string
	if _, err := cmInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		mu.Lock()
		added = append(added, obj.(*corev1.ConfigMap).Name)
		mu.Unlock()
	}}); err != nil {
		t.Fatal(err)
	}
	create(t, newConfigMap(ns, "cm2", map[string]string{appLabel: "x"}, nil))
	eventually(t, 10*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if !slices.Contains(added, "cm2") {
			return fmt.Errorf("handler saw adds %v, want cm2", added)
		}
		return nil
	})

	// Get: a deep copy.
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cm1"}, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["k"] != "v1" || cm.GroupVersionKind() != gvkConfigMap {
		t.Errorf("Get: data %v, gvk %v", cm.Data, cm.GroupVersionKind())
	}
	cm.Data["k"] = "changed by the caller"
	var again corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cm1"}, &again); err != nil || again.Data["k"] != "v1" {
		t.Errorf("Get after the caller changed its copy: %v, data %v", err, again.Data)
	}
	// List with a label selector.
	var list corev1.ConfigMapList
	if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{appLabel: "x"}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, item := range list.Items {
		names = append(names, item.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"cm1", "cm2"}) {
		t.Errorf("List app=x: %v, want [cm1 cm2]", names)
	}
	// The other kind is deltacache's, with its label index.
	var secrets corev1.SecretList
	if err := c.List(ctx, &secrets, client.InNamespace(ns)); err != nil || len(secrets.Items) != 1 {
		t.Errorf("List of Secrets: %v, %d items, want 1", err, len(secrets.Items))
	}
	if err := dcache.ReadyzCheck(c)(nil); err != nil {
		t.Errorf("readyz = %v", err)
	}
	if !c.WaitForCacheSync(ctx) {
		t.Error("WaitForCacheSync returned false")
	}
	// Once per kind, as controller-runtime calls it (callers may register a metrics
	// name per informer built).
	mu.Lock()
	if slices.Sort(built); !slices.Equal(built, []string{"*v1.ConfigMap", "*v1.Secret"}) {
		t.Errorf("NewInformer was called for %v, want once for ConfigMaps and once for Secrets", built)
	}
	mu.Unlock()

	// RemoveInformer: the next read builds a new one.
	if err := c.RemoveInformer(ctx, &corev1.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cm2"}, &cm); err != nil {
		t.Errorf("Get after RemoveInformer: %v", err)
	}
	mu.Lock()
	if n := len(built); n != 3 || built[2] != "*v1.ConfigMap" {
		t.Errorf("NewInformer calls after RemoveInformer and a Get: %v, want a third for ConfigMaps", built)
	}
	mu.Unlock()
}
