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
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	demov1alpha1 "github.com/deltacache/deltacache/api/v1alpha1"
	dcache "github.com/deltacache/deltacache/pkg/cache"
)

// Lists that select (label selectors of every operator, two field requirements,
// Limit) return what controller-runtime's cache returns, from deltacache's compact
// storage (protobuf, CBOR for unstructured, the Plan codec for the typed CRD App)
// and decoded storage, for typed, unstructured and metadata-only lists: the
// selection made before decoding (Indexer.Select) changes nothing a caller sees.
func TestEnvtestSelectingListsMatchControllerRuntime(t *testing.T) {
	requireEnv(t)
	installAppCRD(t)
	ctx := envCtx(t)
	server, err := client.New(cfg, client.Options{Scheme: compactScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ns1, ns2 := createNamespace(t, "select"), createNamespace(t, "select")
	run := ns1 // a label value of this run's objects only
	labelSets := []map[string]string{
		{"app": "web", "tier": "front"}, {"app": "web", "tier": "back"}, {"app": "db"},
		{"app": "cache", "tier": ""}, {"tier": "back"}, {}, {"app": "web", "example.com/part-of": "shop"},
	}
	for i, ls := range labelSets {
		for j, ns := range []string{ns1, ns2} {
			lbls := map[string]string{"run": run}
			for k, v := range ls {
				lbls[k] = v
			}
			meta := metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("o-%d", i), Labels: lbls,
				Annotations: map[string]string{"owner": fmt.Sprintf("owner-%d", (i+j)%3)}}
			for _, obj := range []client.Object{
				&corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"k": "v"}},
				&demov1alpha1.App{ObjectMeta: meta, Spec: demov1alpha1.AppSpec{Selector: "x", MinReady: 1}},
			} {
				if err := server.Create(ctx, obj); err != nil {
					t.Fatal(err)
				}
			}
		}
	}

	impls := []struct {
		name string
		new  crcache.NewCacheFunc
	}{
		{implControllerRuntime, crcache.New},
		{"deltacache-defaults", dcache.New},
		{implDeltacache + "-compact", dcache.NewWith(dcache.WithStorage(dcache.StorageCompact))},
		{implDeltacacheDecoded, dcache.NewWith(dcache.WithoutCompactStorage())},
	}
	kinds := []schema.GroupVersionKind{gvkConfigMap, appGVK("App")}
	listOf := func(gvk schema.GroupVersionKind, shape string) client.ObjectList {
		listGVK := gvk.GroupVersion().WithKind(gvk.Kind + "List")
		switch shape {
		case "unstructured":
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(listGVK)
			return l
		case "metadata":
			l := &metav1.PartialObjectMetadataList{}
			l.SetGroupVersionKind(listGVK)
			return l
		}
		obj, err := compactScheme().New(listGVK)
		if err != nil {
			t.Fatal(err)
		}
		return obj.(client.ObjectList)
	}
	exampleOf := func(gvk schema.GroupVersionKind, shape string) client.Object {
		switch shape {
		case "unstructured":
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			return u
		case "metadata":
			m := &metav1.PartialObjectMetadata{}
			m.SetGroupVersionKind(gvk)
			return m
		}
		obj, err := compactScheme().New(gvk)
		if err != nil {
			t.Fatal(err)
		}
		return obj.(client.Object)
	}
	shapes := []string{"typed", "unstructured", "metadata"}
	byLabel := func(key string) client.IndexerFunc {
		return func(o client.Object) []string { return []string{o.GetLabels()[key]} }
	}
	byOwner := func(o client.Object) []string { return []string{o.GetAnnotations()["owner"]} }

	caches := make([]crcache.Cache, len(impls))
	for i, impl := range impls {
		c, err := impl.new(cfg, crcache.Options{HTTPClient: httpClient, Mapper: mapper, Scheme: compactScheme()})
		if err != nil {
			t.Fatal(err)
		}
		for _, gvk := range kinds {
			for _, shape := range shapes {
				if err := c.IndexField(ctx, exampleOf(gvk, shape), "tier", byLabel("tier")); err != nil {
					t.Fatal(err)
				}
				if err := c.IndexField(ctx, exampleOf(gvk, shape), "owner", byOwner); err != nil {
					t.Fatal(err)
				}
			}
		}
		runCache(t, c)
		caches[i] = c
	}

	sel := func(s string) client.ListOption {
		return client.MatchingLabelsSelector{Selector: selector(t, "run="+run+","+s)}
	}
	runOnly := client.MatchingLabels{"run": run}
	cases := []struct {
		name  string
		opts  []client.ListOption
		limit int64
	}{
		{"equality", []client.ListOption{sel("app=web")}, 0},
		{"double equality in ns1", []client.ListOption{client.InNamespace(ns1), sel("app==web")}, 0},
		{"in", []client.ListOption{sel("app in (web,db)")}, 0},
		{"notin", []client.ListOption{sel("app notin (web)")}, 0},
		{"exists", []client.ListOption{sel("tier")}, 0},
		{"does not exist", []client.ListOption{sel("!tier")}, 0},
		{"not equal in ns2", []client.ListOption{client.InNamespace(ns2), sel("app!=web")}, 0},
		{"empty value", []client.ListOption{sel("tier=")}, 0},
		{"prefixed key", []client.ListOption{sel("example.com/part-of=shop")}, 0},
		{"combined", []client.ListOption{sel("app in (web,cache),tier!=front")}, 0},
		{"only the run", []client.ListOption{runOnly}, 0},
		{"two field requirements", []client.ListOption{client.MatchingFields{"tier": "back", "owner": "owner-1"}}, 0},
		{"two field requirements in ns1, labels",
			[]client.ListOption{client.InNamespace(ns1), client.MatchingFields{"tier": "back", "owner": "owner-1"}, sel("app")}, 0},
		{"limit", []client.ListOption{sel("app")}, 3},
		{"limit in ns1", []client.ListOption{client.InNamespace(ns1), runOnly}, 2},
		{"limit beyond", []client.ListOption{sel("app=web")}, 50},
	}
	for _, gvk := range kinds {
		for _, shape := range shapes {
			for _, tc := range cases {
				t.Run(gvk.Kind+"/"+shape+"/"+tc.name, func(t *testing.T) {
					opts := tc.opts
					full := func(c crcache.Cache) []string {
						list := listOf(gvk, shape)
						if err := c.List(ctx, list, opts...); err != nil {
							t.Fatal(err)
						}
						return keysIn(t, list, ns1, ns2)
					}
					want := full(caches[0])
					if len(want) == 0 {
						t.Fatal("controller-runtime's cache returned nothing: the case tests nothing")
					}
					for i, impl := range impls[1:] {
						c := caches[i+1]
						if got := full(c); !slices.Equal(got, want) {
							t.Errorf("%s: %v, controller-runtime %v", impl.name, got, want)
						}
						if tc.limit == 0 {
							continue
						}
						list := listOf(gvk, shape)
						if err := c.List(ctx, list, append(slices.Clone(opts), client.Limit(tc.limit))...); err != nil {
							t.Fatal(err)
						}
						got := keysIn(t, list, ns1, ns2)
						if n := min(int(tc.limit), len(want)); len(got) != n {
							t.Errorf("%s: Limit %d: %d items %v, want %d", impl.name, tc.limit, len(got), got, n)
						}
						for _, k := range got {
							if !slices.Contains(want, k) {
								t.Errorf("%s: Limit %d returned %s, which does not match", impl.name, tc.limit, k)
							}
						}
					}
				})
			}
		}
	}
}
