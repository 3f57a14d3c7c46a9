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
	"strconv"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/deltacache/deltacache/internal/testenv"
	"github.com/deltacache/deltacache/pkg/informer"
)

// sprocketGVK is a CRD only the observability tests use, so that the process-wide
// series of its informers are theirs alone.
var sprocketGVK = schema.GroupVersionKind{Group: "obs.deltacache.io", Version: "v1", Kind: "Sprocket"}

var sprocketLabels = map[string]string{"group": sprocketGVK.Group, "version": sprocketGVK.Version,
	"kind": sprocketGVK.Kind, "shape": informer.ShapeUnstructured}

var sprocketsOnce sync.Once

// installSprockets installs the Sprocket CRD once per test binary and waits until it is
// served.
func installSprockets(t *testing.T) {
	t.Helper()
	requireEnv(t)
	var err error
	sprocketsOnce.Do(func() {
		preserve := true
		_, err = envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{{
			ObjectMeta: metav1.ObjectMeta{Name: "sprockets.obs.deltacache.io"},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: sprocketGVK.Group,
				Names: apiextensionsv1.CustomResourceDefinitionNames{
					Plural: "sprockets", Singular: "sprocket", Kind: "Sprocket", ListKind: "SprocketList",
				},
				Scope: apiextensionsv1.NamespaceScoped,
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
					Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object", XPreserveUnknownFields: &preserve,
					}},
				}},
			},
		}}})
	})
	if err != nil {
		t.Fatalf("installing the Sprocket CRD: %v", err)
	}
}

func newSprocket(ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(sprocketGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	u.Object["spec"] = map[string]any{sizeField: int64(1)}
	return u
}

// crSeries returns every series of controller-runtime's registry that carries labels,
// keyed as testenv.Series keys them ("name{k=v,...}").
func crSeries(t *testing.T, labels map[string]string) map[string]float64 {
	t.Helper()
	return testenv.Series(t, metrics.Registry, labels)
}

func eventCounts(t *testing.T) [3]float64 {
	s := crSeries(t, sprocketLabels)
	return [3]float64{s["deltacache_informer_watch_events_total{type=ADDED}"],
		s["deltacache_informer_watch_events_total{type=MODIFIED}"], s["deltacache_informer_watch_events_total{type=DELETED}"]}
}

func TestEnvtestInformerMetricsCountObjectsAndEventsExactly(t *testing.T) {
	installSprockets(t)
	ns := createNamespace(t, "metrics")
	for i := range 4 {
		create(t, newSprocket(ns, fmt.Sprintf("g%d", i)))
	}
	c := startEnvCache(t, crcache.Options{})
	ctx := envCtx(t)
	example := &unstructured.Unstructured{}
	example.SetGroupVersionKind(sprocketGVK)
	if _, err := c.GetInformer(ctx, example); err != nil {
		t.Fatal(err)
	}
	all := &unstructured.UnstructuredList{}
	all.SetGroupVersionKind(sprocketGVK.GroupVersion().WithKind("SprocketList"))
	if err := k8sClient.List(ctx, all); err != nil {
		t.Fatal(err)
	}
	series := crSeries(t, sprocketLabels)
	if got, want := series["deltacache_informer_objects"], float64(len(all.Items)); got != want || want < 4 {
		t.Fatalf("objects gauge after sync = %v, want %v (the sprockets on the server)", got, want)
	}
	if series["deltacache_informer_synced"] != 1 ||
		series["deltacache_informer_list_objects_total"] != float64(len(all.Items)) {
		t.Fatalf("synced %v, list objects %v; want 1 and %d", series["deltacache_informer_synced"],
			series["deltacache_informer_list_objects_total"], len(all.Items))
	}

	before := eventCounts(t)
	for i := range 3 {
		create(t, newSprocket(ns, fmt.Sprintf("new%d", i)))
	}
	var lastRV string
	for _, name := range []string{"g0", "g1"} {
		g := newSprocket(ns, name)
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(g), g); err != nil {
			t.Fatal(err)
		}
		g.Object["spec"] = map[string]any{sizeField: int64(2)}
		if err := k8sClient.Update(ctx, g); err != nil {
			t.Fatal(err)
		}
		lastRV = g.GetResourceVersion()
	}
	if err := k8sClient.Delete(ctx, newSprocket(ns, "g2")); err != nil {
		t.Fatal(err)
	}
	// Six writes: three ADDED, two MODIFIED, one DELETED, and nothing else.
	want := [3]float64{before[0] + 3, before[1] + 2, before[2] + 1}
	eventually(t, 30*time.Second, func() error {
		if got := eventCounts(t); got != want {
			return fmt.Errorf("events (ADDED, MODIFIED, DELETED) = %v, want %v", got, want)
		}
		return nil
	})
	eventually(t, 30*time.Second, func() error {
		if got, want := crSeries(t, sprocketLabels)["deltacache_informer_objects"], float64(len(all.Items)+2); got != want {
			return fmt.Errorf("objects gauge = %v, want %v", got, want)
		}
		return nil
	})
	rv, _ := strconv.ParseFloat(lastRV, 64)
	if got := crSeries(t, sprocketLabels)["deltacache_informer_last_sync_resource_version"]; got < rv {
		t.Errorf("last sync resourceVersion gauge = %v, want at least %v (the last update's)", got, rv)
	}
	if got := eventCounts(t); got != want {
		t.Errorf("events (ADDED, MODIFIED, DELETED) moved on to %v, want %v", got, want)
	}

	if err := c.RemoveInformer(ctx, example); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		if left := crSeries(t, sprocketLabels); len(left) > 0 {
			return fmt.Errorf("%d series left after RemoveInformer, e.g. %v", len(left), firstKey(left))
		}
		return nil
	})
}

func firstKey(m map[string]float64) string {
	for k := range m {
		return k
	}
	return ""
}
