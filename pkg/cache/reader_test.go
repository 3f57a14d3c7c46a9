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
package cache

import (
	"errors"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// readerFixture: config maps in namespaces a and b, a node, with labels app and tier.
func readerFixture(t *testing.T, opts crcache.Options, options ...Option) *Cache {
	t.Helper()
	api := newFakeAPI(t,
		configMap("a", "web-1", map[string]string{appLabel: webApp, tierLabel: "front"}),
		configMap("a", "web-2", map[string]string{appLabel: webApp, tierLabel: "back"}),
		configMap("a", "db-1", map[string]string{appLabel: "db", tierLabel: "back"}),
		configMap("b", "web-1", map[string]string{appLabel: webApp, tierLabel: "front"}),
		configMap("b", "plain", nil),
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{appLabel: webApp}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}},
	)
	c := newTestCache(t, api, opts, options...)
	startCache(t, c)
	return c
}

func TestGetReturnsDeepCopyWithGVKSet(t *testing.T) {
	c := readerFixture(t, crcache.Options{})
	ctx := testCtx(t)

	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "web-1"}, &cm); err != nil {
		t.Fatal(err)
	}
	if got := cm.GroupVersionKind(); got != gvkConfigMap {
		t.Errorf("GVK = %v, want %v", got, gvkConfigMap)
	}
	if cm.Data["name"] != "web-1" || cm.Labels[appLabel] != webApp {
		t.Errorf("got data %v labels %v", cm.Data, cm.Labels)
	}
	cm.Data["name"] = "mutated"
	cm.Labels[appLabel] = "mutated"

	var again corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "web-1"}, &again); err != nil {
		t.Fatal(err)
	}
	if again.Data["name"] != "web-1" || again.Labels[appLabel] != webApp {
		t.Errorf("cache was mutated through a Get result: data %v labels %v", again.Data, again.Labels)
	}
}

func TestUnsafeDisableDeepCopyReadsOfCompactStorageCannotCorruptTheCache(t *testing.T) {
	c := readerFixture(t, crcache.Options{}, WithStorage(StorageCompact))
	ctx := testCtx(t)
	key := client.ObjectKey{Namespace: "a", Name: "web-1"}
	var got corev1.ConfigMap
	if err := c.Get(ctx, key, &got, client.UnsafeDisableDeepCopy); err != nil {
		t.Fatal(err)
	}
	if gvk := got.GroupVersionKind(); gvk != gvkConfigMap {
		t.Errorf("GVK = %v, want %v", gvk, gvkConfigMap)
	}
	got.Data["probe"] = "mine"
	var list corev1.ConfigMapList
	if err := c.List(ctx, &list, client.InNamespace("a"), client.UnsafeDisableDeepCopy); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		if gvk := list.Items[i].GroupVersionKind(); gvk != gvkConfigMap {
			t.Errorf("List item GVK = %v, want %v", gvk, gvkConfigMap)
		}
		list.Items[i].Labels[appLabel] = "changed"
	}
	var again corev1.ConfigMap
	if err := c.Get(ctx, key, &again); err != nil {
		t.Fatal(err)
	}
	if _, ok := again.Data["probe"]; ok || again.Labels[appLabel] != webApp {
		t.Errorf("a change to an UnsafeDisableDeepCopy result reached the cache: data %v labels %v", again.Data, again.Labels)
	}
}

func TestGetWithUnsafeDisableDeepCopySharesTheCachedObjectOfDecodedStorage(t *testing.T) {
	c := readerFixture(t, crcache.Options{}, WithoutCompactStorage())
	ctx := testCtx(t)
	key := client.ObjectKey{Namespace: "a", Name: "web-1"}

	var first, second corev1.ConfigMap
	if err := c.Get(ctx, key, &first, client.UnsafeDisableDeepCopy); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, key, &second, client.UnsafeDisableDeepCopy); err != nil {
		t.Fatal(err)
	}
	first.Data["probe"] = "shared"
	if second.Data["probe"] != "shared" {
		t.Errorf("UnsafeDisableDeepCopy Get results do not share the cached map")
	}
	delete(first.Data, "probe")
	// The cached object itself, as controller-runtime's: a typed object with an empty
	// TypeMeta (only copies get the GVK set).
	if got := first.GroupVersionKind(); !got.Empty() {
		t.Errorf("GVK of the cached object = %v, want none", got)
	}
}

func TestDefaultUnsafeDisableDeepCopyCanBeOverriddenPerCall(t *testing.T) {
	c := readerFixture(t, crcache.Options{DefaultUnsafeDisableDeepCopy: new(true)})
	ctx := testCtx(t)
	key := client.ObjectKey{Namespace: "a", Name: "web-2"}

	var shared, copied, check corev1.ConfigMap
	if err := c.Get(ctx, key, &shared); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, key, &copied, client.UnsafeDisableDeepCopyOption(false)); err != nil {
		t.Fatal(err)
	}
	copied.Data["probe"] = "copy"
	if _, found := shared.Data["probe"]; found {
		t.Errorf("per-call UnsafeDisableDeepCopy(false) still returned the cached object")
	}
	shared.Data["probe"] = "shared"
	if err := c.Get(ctx, key, &check); err != nil {
		t.Fatal(err)
	}
	if check.Data["probe"] != "shared" {
		t.Errorf("DefaultUnsafeDisableDeepCopy=true Get returned a copy")
	}
	delete(shared.Data, "probe")
}

func TestGetMissingObjectReturnsNotFoundWithKindAsResource(t *testing.T) {
	c := readerFixture(t, crcache.Options{})
	err := c.Get(testCtx(t), client.ObjectKey{Namespace: "a", Name: "nope"}, &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("err = %v, want NotFound", err)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatal("not an APIStatus")
	}
	details := status.Status().Details
	if details.Kind != configMapKind || details.Name != "nope" || details.Group != "" {
		t.Errorf("details = %+v, want kind ConfigMap name nope", details)
	}
}

func TestGetClusterScopedObjectIgnoresKeyNamespace(t *testing.T) {
	c := readerFixture(t, crcache.Options{})
	var node corev1.Node
	if err := c.Get(testCtx(t), client.ObjectKey{Namespace: "ignored", Name: "n1"}, &node); err != nil {
		t.Fatal(err)
	}
	if node.Name != "n1" || node.GroupVersionKind() != gvkNode {
		t.Errorf("got %s %v", node.Name, node.GroupVersionKind())
	}
}

func TestListAcrossNamespacesInNamespaceAndClusterScoped(t *testing.T) {
	c := readerFixture(t, crcache.Options{})
	ctx := testCtx(t)

	var all corev1.ConfigMapList
	if err := c.List(ctx, &all); err != nil {
		t.Fatal(err)
	}
	want := []string{"a/db-1", "a/web-1", "a/web-2", "b/plain", "b/web-1"}
	if got := sortedKeysOf(t, &all); !slices.Equal(got, want) {
		t.Errorf("all namespaces: got %v, want %v", got, want)
	}
	if all.Continue != "continue-not-supported" {
		t.Errorf("continue = %q", all.Continue)
	}
	for _, item := range all.Items {
		if item.GroupVersionKind() != gvkConfigMap {
			t.Errorf("item %s has GVK %v", item.Name, item.GroupVersionKind())
		}
	}

	var inB corev1.ConfigMapList
	if err := c.List(ctx, &inB, client.InNamespace("b")); err != nil {
		t.Fatal(err)
	}
	if got, want := sortedKeysOf(t, &inB), []string{"b/plain", "b/web-1"}; !slices.Equal(got, want) {
		t.Errorf("namespace b: got %v, want %v", got, want)
	}

	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	if got, want := sortedKeysOf(t, &nodes), []string{"n1", "n2"}; !slices.Equal(got, want) {
		t.Errorf("nodes: got %v, want %v", got, want)
	}

	stats := c.ListStats(gvkConfigMap)
	if stats != (ListStats{Scan: 1, NamespaceIndex: 1}) {
		t.Errorf("ConfigMap stats = %+v, want Scan 1 NamespaceIndex 1", stats)
	}
}

func TestListWithIndexedLabelEqualityUsesLabelIndex(t *testing.T) {
	c := readerFixture(t, crcache.Options{}, WithLabelIndexes(appLabel))
	ctx := testCtx(t)

	var list corev1.ConfigMapList
	if err := c.List(ctx, &list, client.MatchingLabels{appLabel: webApp}); err != nil {
		t.Fatal(err)
	}
	if got, want := sortedKeysOf(t, &list), []string{"a/web-1", "a/web-2", "b/web-1"}; !slices.Equal(got, want) {
		t.Errorf("all namespaces: got %v, want %v", got, want)
	}
	if err := c.List(ctx, &list, client.InNamespace("a"), client.MatchingLabels{appLabel: webApp}); err != nil {
		t.Fatal(err)
	}
	if got, want := sortedKeysOf(t, &list), []string{"a/web-1", "a/web-2"}; !slices.Equal(got, want) {
		t.Errorf("namespace a: got %v, want %v", got, want)
	}
	if got := c.ListStats(gvkConfigMap); got != (ListStats{LabelIndex: 2}) {
		t.Errorf("stats = %+v, want LabelIndex 2 and nothing else", got)
	}
}

func TestListWithSeveralIndexedLabelsReturnsTheIntersection(t *testing.T) {
	c := readerFixture(t, crcache.Options{}, WithLabelIndexes(appLabel, tierLabel))
	ctx := testCtx(t)

	var list corev1.ConfigMapList
	if err := c.List(ctx, &list, client.MatchingLabels{appLabel: webApp, tierLabel: "back"}); err != nil {
		t.Fatal(err)
	}
	if got, want := sortedKeysOf(t, &list), []string{"a/web-2"}; !slices.Equal(got, want) {
		t.Errorf("app=web,tier=back: got %v, want %v", got, want)
	}

	sel, err := labels.Parse("app in (web,db),tier=back,app!=nothing")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, &list, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		t.Fatal(err)
	}
	if got, want := sortedKeysOf(t, &list), []string{"a/db-1", "a/web-2"}; !slices.Equal(got, want) {
		t.Errorf("%s: got %v, want %v", sel, got, want)
	}

	if err := c.List(ctx, &list, client.MatchingLabels{appLabel: webApp, tierLabel: "nowhere"}); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Errorf("disjoint labels: got %v, want nothing", keysOf(t, &list))
	}
	if got := c.ListStats(gvkConfigMap); got != (ListStats{LabelIndex: 3}) {
		t.Errorf("stats = %+v, want LabelIndex 3", got)
	}
}

func TestListWithNonIndexableLabelSelectorFallsBackAndFilters(t *testing.T) {
	c := readerFixture(t, crcache.Options{}, WithLabelIndexes(appLabel))
	ctx := testCtx(t)

	var list corev1.ConfigMapList
	// "tier" has no index, "app!=" cannot use one.
	if err := c.List(ctx, &list, client.MatchingLabels{tierLabel: "front"}); err != nil {
		t.Fatal(err)
	}
	if got, want := sortedKeysOf(t, &list), []string{"a/web-1", "b/web-1"}; !slices.Equal(got, want) {
		t.Errorf("tier=front: got %v, want %v", got, want)
	}
	sel, _ := labels.Parse("app!=web")
	if err := c.List(ctx, &list, client.InNamespace("a"), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		t.Fatal(err)
	}
	if got, want := sortedKeysOf(t, &list), []string{"a/db-1"}; !slices.Equal(got, want) {
		t.Errorf("app!=web in a: got %v, want %v", got, want)
	}
	if got := c.ListStats(gvkConfigMap); got != (ListStats{Scan: 1, NamespaceIndex: 1}) {
		t.Errorf("stats = %+v, want Scan 1 NamespaceIndex 1", got)
	}
}

func TestListClusterScopedByLabelIndex(t *testing.T) {
	c := readerFixture(t, crcache.Options{}, WithLabelIndexes(appLabel))
	var nodes corev1.NodeList
	if err := c.List(testCtx(t), &nodes, client.MatchingLabels{appLabel: webApp}); err != nil {
		t.Fatal(err)
	}
	if got, want := keysOf(t, &nodes), []string{"n1"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := c.ListStats(gvkNode); got != (ListStats{LabelIndex: 1}) {
		t.Errorf("stats = %+v", got)
	}
}

func TestListMatchingFieldsUsesFieldIndexAndFiltersFurtherRequirements(t *testing.T) {
	c := readerFixture(t, crcache.Options{})
	ctx := testCtx(t)
	byTier := func(obj client.Object) []string { return []string{obj.GetLabels()[tierLabel]} }
	byApp := func(obj client.Object) []string { return []string{obj.GetLabels()[appLabel]} }
	if err := c.IndexField(ctx, &corev1.ConfigMap{}, tierLabel, byTier); err != nil {
		t.Fatal(err)
	}
	if err := c.IndexField(ctx, &corev1.ConfigMap{}, appLabel, byApp); err != nil {
		t.Fatal(err)
	}

	var list corev1.ConfigMapList
	if err := c.List(ctx, &list, client.MatchingFields{tierLabel: "front"}); err != nil {
		t.Fatal(err)
	}
	if got, want := sortedKeysOf(t, &list), []string{"a/web-1", "b/web-1"}; !slices.Equal(got, want) {
		t.Errorf("tier=front: got %v, want %v", got, want)
	}
	err := c.List(ctx, &list, client.InNamespace("a"), client.MatchingFields{tierLabel: "back", appLabel: webApp})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sortedKeysOf(t, &list), []string{"a/web-2"}; !slices.Equal(got, want) {
		t.Errorf("tier=back,app=web in a: got %v, want %v", got, want)
	}
	if got := c.ListStats(gvkConfigMap); got != (ListStats{FieldIndex: 2}) {
		t.Errorf("stats = %+v, want FieldIndex 2", got)
	}
}

func TestListFieldSelectorErrors(t *testing.T) {
	c := readerFixture(t, crcache.Options{})
	ctx := testCtx(t)
	var list corev1.ConfigMapList

	err := c.List(ctx, &list, client.MatchingFieldsSelector{Selector: fields.OneTermNotEqualSelector(tierLabel, "x")})
	if err == nil || err.Error() != "non-exact field matches are not supported by the cache" {
		t.Errorf("!= selector: err = %v", err)
	}
	err = c.List(ctx, &list, client.MatchingFields{"spec.missing": "x"})
	if err == nil || !strings.Contains(err.Error(), "index with name field:spec.missing does not exist") ||
		!strings.Contains(err.Error(), "IndexField") {
		t.Errorf("missing index: err = %v", err)
	}
	err = c.List(ctx, &list, client.Continue("token"))
	if err == nil || err.Error() != "continue list option is not supported by the cache" {
		t.Errorf("continue: err = %v", err)
	}
	if got := c.ListStats(gvkConfigMap); got != (ListStats{}) {
		t.Errorf("failed Lists were counted: %+v", got)
	}
}

func TestListLimitStopsAfterThatManyMatches(t *testing.T) {
	c := readerFixture(t, crcache.Options{})
	var list corev1.ConfigMapList
	if err := c.List(testCtx(t), &list, client.MatchingLabels{appLabel: webApp}, client.Limit(2)); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 {
		t.Fatalf("got %d items, want 2", len(list.Items))
	}
	for _, item := range list.Items {
		if item.Labels[appLabel] != webApp {
			t.Errorf("item %s/%s does not match app=web", item.Namespace, item.Name)
		}
	}
}

func TestListIntoReusedListReplacesItems(t *testing.T) {
	c := readerFixture(t, crcache.Options{}, WithLabelIndexes(appLabel))
	ctx := testCtx(t)
	list := &corev1.ConfigMapList{}
	for range 3 {
		if err := c.List(ctx, list, client.InNamespace("a")); err != nil {
			t.Fatal(err)
		}
	}
	if len(list.Items) != 3 {
		t.Errorf("got %d items after three Lists of 3, want 3", len(list.Items))
	}
	if err := c.List(ctx, list, client.MatchingLabels{appLabel: "none"}); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Errorf("got %v, want no items", keysOf(t, list))
	}
}

func TestListUnstructuredAndMetadataShapesUseTheirOwnInformers(t *testing.T) {
	api := newFakeAPI(t, configMap("a", "x", map[string]string{appLabel: webApp}))
	c := newTestCache(t, api, crcache.Options{}, WithLabelIndexes(appLabel))
	startCache(t, c)
	ctx := testCtx(t)

	ul := &unstructured.UnstructuredList{}
	ul.SetGroupVersionKind(gvkConfigMap.GroupVersion().WithKind("ConfigMapList"))
	if err := c.List(ctx, ul, client.MatchingLabels{appLabel: webApp}); err != nil {
		t.Fatal(err)
	}
	if len(ul.Items) != 1 || ul.Items[0].GetName() != "x" || ul.Items[0].GroupVersionKind() != gvkConfigMap {
		t.Errorf("unstructured: got %+v", ul.Items)
	}

	ml := &metav1.PartialObjectMetadataList{}
	ml.SetGroupVersionKind(gvkConfigMap.GroupVersion().WithKind("ConfigMapList"))
	if err := c.List(ctx, ml, client.InNamespace("a")); err != nil {
		t.Fatal(err)
	}
	if len(ml.Items) != 1 || ml.Items[0].Name != "x" || ml.Items[0].GroupVersionKind() != gvkConfigMap {
		t.Errorf("metadata: got %+v", ml.Items)
	}

	pom := &metav1.PartialObjectMetadata{}
	pom.SetGroupVersionKind(gvkConfigMap)
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "x"}, pom); err != nil {
		t.Fatal(err)
	}
	if pom.Labels[appLabel] != webApp || pom.GroupVersionKind() != gvkConfigMap {
		t.Errorf("metadata Get: got %+v", pom)
	}

	calls := api.listCalls()
	shapes := make([]shape, 0, len(calls))
	for _, call := range calls {
		shapes = append(shapes, call.shape)
	}
	slices.Sort(shapes)
	if want := []shape{shapeUnstructured, shapeMetadata}; !slices.Equal(shapes, want) {
		t.Errorf("list calls by shape = %v, want %v", shapes, want)
	}
	if got := c.ListStats(gvkConfigMap); got != (ListStats{LabelIndex: 1, NamespaceIndex: 1}) {
		t.Errorf("stats = %+v", got)
	}
}

func TestKindMissingFromSchemeIsCachedAsUnstructured(t *testing.T) {
	widget := &unstructured.Unstructured{}
	widget.SetGroupVersionKind(gvkWidget)
	widget.SetNamespace("a")
	widget.SetName("w1")
	widget.Object["spec"] = map[string]any{"size": int64(3)}
	api := newFakeAPI(t, widget)
	c := newTestCache(t, api, crcache.Options{})
	startCache(t, c)
	ctx := testCtx(t)

	inf, err := c.GetInformerForKind(ctx, gvkWidget)
	if err != nil {
		t.Fatal(err)
	}
	if !inf.HasSynced() {
		t.Error("GetInformerForKind returned an informer that has not synced")
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(gvkWidget)
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "w1"}, got); err != nil {
		t.Fatal(err)
	}
	if size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size"); size != 3 {
		t.Errorf("spec.size = %d, want 3", size)
	}
	if calls := api.listCalls(); len(calls) != 1 {
		t.Errorf("GetInformerForKind and Get of an unstructured kind made %d informers, want 1", len(calls))
	}
}

func TestListPathsAreExportedAsPrometheusCounters(t *testing.T) {
	c := readerFixture(t, crcache.Options{}, WithLabelIndexes(appLabel))
	counter := func(path string) float64 {
		var m dto.Metric
		if err := listsTotal.WithLabelValues("", "v1", "Node", path).Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetCounter().GetValue()
	}
	before := counter("label-index")
	var nodes corev1.NodeList
	if err := c.List(testCtx(t), &nodes, client.MatchingLabels{appLabel: webApp}); err != nil {
		t.Fatal(err)
	}
	if got := counter("label-index") - before; got != 1 {
		t.Errorf("deltacache_cache_lists_total{kind=Node,path=label-index} grew by %v, want 1", got)
	}
}
