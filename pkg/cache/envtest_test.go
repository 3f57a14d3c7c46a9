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
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	dcache "github.com/deltacache/deltacache/pkg/cache"
)

var (
	gvkConfigMap = corev1.SchemeGroupVersion.WithKind("ConfigMap")
	gvkPod       = corev1.SchemeGroupVersion.WithKind("Pod")
)

// keysIn returns the sorted "ns/name" of the items of list that are in one of
// namespaces (other tests' objects share the control plane).
func keysIn(t *testing.T, list client.ObjectList, namespaces ...string) []string {
	t.Helper()
	items, err := apimeta.ExtractList(list)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, item := range items {
		m, err := apimeta.Accessor(item)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(namespaces, m.GetNamespace()) {
			keys = append(keys, m.GetNamespace()+"/"+m.GetName())
		}
	}
	slices.Sort(keys)
	return keys
}

func sorted(keys ...string) []string {
	slices.Sort(keys)
	return keys
}

func TestEnvtestTypedGetAndListAcrossNamespaces(t *testing.T) {
	requireEnv(t)
	ns1, ns2 := createNamespace(t, "typed"), createNamespace(t, "typed")
	create(t, newPod(ns1, "p1", nil))
	create(t, newPod(ns2, "p2", nil))
	create(t, newConfigMap(ns1, "c1", nil, map[string]string{"k": "v1"}))
	create(t, newConfigMap(ns2, "c2", nil, map[string]string{"k": "v2"}))
	c := startEnvCache(t, crcache.Options{})
	ctx := envCtx(t)

	var pod corev1.Pod
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns1, Name: "p1"}, &pod); err != nil {
		t.Fatal(err)
	}
	if pod.Name != "p1" || pod.Namespace != ns1 || pod.Spec.Containers[0].Image != "busybox" ||
		pod.GroupVersionKind() != gvkPod {
		t.Errorf("pod = %s/%s image %q gvk %v", pod.Namespace, pod.Name, pod.Spec.Containers[0].Image, pod.GroupVersionKind())
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns2, Name: "c2"}, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["k"] != "v2" || cm.GroupVersionKind() != gvkConfigMap {
		t.Errorf("config map data %v gvk %v", cm.Data, cm.GroupVersionKind())
	}
	err := c.Get(ctx, client.ObjectKey{Namespace: ns1, Name: "c2"}, &cm)
	if !apierrors.IsNotFound(err) {
		t.Errorf("Get of c2 in %s: err = %v, want NotFound", ns1, err)
	}

	var pods corev1.PodList
	if err := c.List(ctx, &pods); err != nil {
		t.Fatal(err)
	}
	if got, want := keysIn(t, &pods, ns1, ns2), sorted(ns1+"/p1", ns2+"/p2"); !slices.Equal(got, want) {
		t.Errorf("pods: got %v, want %v", got, want)
	}
	var cms corev1.ConfigMapList
	if err := c.List(ctx, &cms, client.InNamespace(ns2)); err != nil {
		t.Fatal(err)
	}
	if got, want := keysIn(t, &cms, ns1, ns2), []string{ns2 + "/c2"}; !slices.Equal(got, want) || len(cms.Items) != 1 {
		t.Errorf("config maps in %s: got %v (%d items), want %v", ns2, got, len(cms.Items), want)
	}

	// Objects created after the initial list arrive through the watch.
	create(t, newConfigMap(ns1, "later", nil, nil))
	eventually(t, 10*time.Second, func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: ns1, Name: "later"}, &corev1.ConfigMap{})
	})
}

func TestEnvtestListMatchingLabelsIsAnsweredFromTheLabelIndex(t *testing.T) {
	requireEnv(t)
	ns1, ns2 := createNamespace(t, "labels"), createNamespace(t, "labels")
	app := "web-" + ns1 // unique across tests sharing the control plane
	create(t, newConfigMap(ns1, "a", map[string]string{appLabel: app, "tier": "front"}, nil))
	create(t, newConfigMap(ns1, "b", map[string]string{appLabel: app, "tier": "back"}, nil))
	create(t, newConfigMap(ns1, "c", map[string]string{appLabel: "other"}, nil))
	create(t, newConfigMap(ns2, "d", map[string]string{appLabel: app, "tier": "back"}, nil))
	c := startEnvCache(t, crcache.Options{}, dcache.WithLabelIndexes(appLabel))
	ctx := envCtx(t)

	var list corev1.ConfigMapList
	if err := c.List(ctx, &list, client.MatchingLabels{appLabel: app}); err != nil {
		t.Fatal(err)
	}
	got, want := keysIn(t, &list, ns1, ns2), sorted(ns1+"/a", ns1+"/b", ns2+"/d")
	if !slices.Equal(got, want) || len(list.Items) != 3 {
		t.Errorf("app=%s: got %v (%d items), want %v", app, got, len(list.Items), want)
	}
	err := c.List(ctx, &list, client.InNamespace(ns1), client.MatchingLabels{appLabel: app, "tier": "back"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := keysIn(t, &list, ns1, ns2), []string{ns1 + "/b"}; !slices.Equal(got, want) || len(list.Items) != 1 {
		t.Errorf("app=%s,tier=back in %s: got %v, want %v", app, ns1, got, want)
	}
	stats := c.ListStats(gvkConfigMap)
	if stats.LabelIndex != 2 || stats.Scan != 0 || stats.NamespaceIndex != 0 || stats.FieldIndex != 0 {
		t.Errorf("stats = %+v, want LabelIndex 2 and nothing else", stats)
	}

	// A new labelled object is found through the index once the watch delivers it.
	create(t, newConfigMap(ns2, "e", map[string]string{appLabel: app}, nil))
	eventually(t, 10*time.Second, func() error {
		if err := c.List(ctx, &list, client.InNamespace(ns2), client.MatchingLabels{appLabel: app}); err != nil {
			return err
		}
		if got, want := keysIn(t, &list, ns2), sorted(ns2+"/d", ns2+"/e"); !slices.Equal(got, want) {
			return fmt.Errorf("got %v, want %v", got, want)
		}
		return nil
	})
	if got := c.ListStats(gvkConfigMap); got.Scan != 0 {
		t.Errorf("a label-indexed List scanned: %+v", got)
	}
}

func TestEnvtestIndexFieldAndMatchingFieldsAcrossNamespaces(t *testing.T) {
	requireEnv(t)
	ns1, ns2 := createNamespace(t, "fields"), createNamespace(t, "fields")
	owner := "owner-" + ns1
	create(t, newConfigMap(ns1, "a", nil, map[string]string{"owner": owner}))
	create(t, newConfigMap(ns1, "b", nil, map[string]string{"owner": "someone-else"}))
	create(t, newConfigMap(ns2, "c", nil, map[string]string{"owner": owner}))
	c := newEnvCache(t, crcache.Options{})
	ctx := envCtx(t)

	byOwner := func(obj client.Object) []string { return []string{obj.(*corev1.ConfigMap).Data["owner"]} }
	if err := c.IndexField(ctx, &corev1.ConfigMap{}, "data.owner", byOwner); err != nil {
		t.Fatal(err)
	}
	if err := c.IndexField(ctx, &corev1.ConfigMap{}, "data.owner", byOwner); err == nil {
		t.Error("registering the same index twice succeeded")
	}
	runCache(t, c)

	var list corev1.ConfigMapList
	if err := c.List(ctx, &list, client.MatchingFields{"data.owner": owner}); err != nil {
		t.Fatal(err)
	}
	got, want := keysIn(t, &list, ns1, ns2), sorted(ns1+"/a", ns2+"/c")
	if !slices.Equal(got, want) || len(list.Items) != 2 {
		t.Errorf("all namespaces (__all_namespaces/%s): got %v, want %v", owner, got, want)
	}
	if err := c.List(ctx, &list, client.InNamespace(ns2), client.MatchingFields{"data.owner": owner}); err != nil {
		t.Fatal(err)
	}
	if got, want := keysIn(t, &list, ns1, ns2), []string{ns2 + "/c"}; !slices.Equal(got, want) || len(list.Items) != 1 {
		t.Errorf("in %s: got %v, want %v", ns2, got, want)
	}

	// An index added after Start is back-filled.
	byName := func(obj client.Object) []string { return []string{obj.GetName()} }
	if err := c.IndexField(ctx, &corev1.ConfigMap{}, "metadata.name", byName); err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, &list, client.InNamespace(ns1), client.MatchingFields{"metadata.name": "b"}); err != nil {
		t.Fatal(err)
	}
	if got, want := keysIn(t, &list, ns1), []string{ns1 + "/b"}; !slices.Equal(got, want) {
		t.Errorf("index added after Start: got %v, want %v", got, want)
	}
	if got := c.ListStats(gvkConfigMap); got != (dcache.ListStats{FieldIndex: 3}) {
		t.Errorf("stats = %+v, want FieldIndex 3", got)
	}
}

func TestEnvtestUnstructuredAndMetadataOnlyInformers(t *testing.T) {
	requireEnv(t)
	ns := createNamespace(t, "shapes")
	create(t, newConfigMap(ns, "cm", map[string]string{appLabel: "x"}, map[string]string{"k": "v"}))
	create(t, newPod(ns, "pod", map[string]string{appLabel: "x"}))
	widget := &unstructured.Unstructured{}
	widget.SetGroupVersionKind(widgetGVK)
	widget.SetNamespace(ns)
	widget.SetName("w")
	widget.Object["spec"] = map[string]any{sizeField: int64(3)}
	create(t, widget)
	c := startEnvCache(t, crcache.Options{})
	ctx := envCtx(t)

	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvkConfigMap)
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cm"}, u); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedString(u.Object, "data", "k"); v != "v" || u.GroupVersionKind() != gvkConfigMap {
		t.Errorf("unstructured config map: data.k %q gvk %v", v, u.GroupVersionKind())
	}

	pods := &metav1.PartialObjectMetadataList{}
	pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := c.List(ctx, pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 || pods.Items[0].Name != "pod" || pods.Items[0].Labels[appLabel] != "x" ||
		pods.Items[0].GroupVersionKind() != gvkPod {
		t.Errorf("metadata pods = %+v", pods.Items)
	}

	// A kind missing from the Scheme works as unstructured, also by kind.
	inf, err := c.GetInformerForKind(ctx, widgetGVK)
	if err != nil {
		t.Fatal(err)
	}
	if !inf.HasSynced() {
		t.Error("GetInformerForKind returned before the informer synced")
	}
	widgets := &unstructured.UnstructuredList{}
	widgets.SetGroupVersionKind(widgetGVK.GroupVersion().WithKind("WidgetList"))
	if err := c.List(ctx, widgets, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(widgets.Items) != 1 || widgets.Items[0].GetName() != "w" || widgets.Items[0].GroupVersionKind() != widgetGVK {
		t.Fatalf("widgets = %+v", widgets.Items)
	}
	if size, _, _ := unstructured.NestedInt64(widgets.Items[0].Object, "spec", sizeField); size != 3 {
		t.Errorf("widget spec.size = %d, want 3", size)
	}
}

// recorder is a ResourceEventHandler that records events as strings, with the Go type
// of each object.
type recorder struct {
	events chan string
}

func newRecorder() *recorder { return &recorder{events: make(chan string, 1000)} }

func describe(obj any) string {
	switch o := obj.(type) {
	case client.Object:
		return fmt.Sprintf("%T %s kind=%q", o, o.GetName(), o.GetObjectKind().GroupVersionKind().Kind)
	default:
		return fmt.Sprintf("%T", obj)
	}
}

func (r *recorder) OnAdd(obj any, initial bool) {
	r.events <- fmt.Sprintf("add %s initial=%t", describe(obj), initial)
}
func (r *recorder) OnUpdate(_, obj any) { r.events <- "update " + describe(obj) }
func (r *recorder) OnDelete(obj any)    { r.events <- "delete " + describe(obj) }

// next returns the next recorded event whose object is named name.
func (r *recorder) next(t *testing.T, name string) string {
	t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case e := <-r.events:
			if slices.Contains(strings.Fields(e), name) {
				return e
			}
		case <-timeout:
			t.Fatalf("no event for %s", name)
			return ""
		}
	}
}

func TestEnvtestGetInformerHandlersReceiveTheExactTypeAndInitialListFlag(t *testing.T) {
	requireEnv(t)
	ns := createNamespace(t, "handlers")
	first := "first-" + ns
	create(t, newConfigMap(ns, first, nil, nil))
	c := startEnvCache(t, crcache.Options{})
	ctx := envCtx(t)

	inf, err := c.GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	typed := newRecorder()
	if _, err := inf.AddEventHandlerWithOptions(typed, toolscache.HandlerOptions{}); err != nil {
		t.Fatal(err)
	}
	pom := &metav1.PartialObjectMetadata{}
	pom.SetGroupVersionKind(gvkConfigMap)
	metaInf, err := c.GetInformer(ctx, pom)
	if err != nil {
		t.Fatal(err)
	}
	meta := newRecorder()
	if _, err := metaInf.AddEventHandler(meta); err != nil {
		t.Fatal(err)
	}

	if got, want := typed.next(t, first), "add *v1.ConfigMap "+first+` kind="" initial=true`; got != want {
		t.Errorf("typed initial: got %q, want %q", got, want)
	}
	if got, want := meta.next(t, first),
		"add *v1.PartialObjectMetadata "+first+` kind="ConfigMap" initial=true`; got != want {
		t.Errorf("metadata initial: got %q, want %q", got, want)
	}

	second := "second-" + ns
	cm := newConfigMap(ns, second, nil, nil)
	create(t, cm)
	if got, want := typed.next(t, second), "add *v1.ConfigMap "+second+` kind="" initial=false`; got != want {
		t.Errorf("typed add: got %q, want %q", got, want)
	}
	cm.Data = map[string]string{"changed": "yes"}
	if err := k8sClient.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if got, want := typed.next(t, second), "update *v1.ConfigMap "+second+` kind=""`; got != want {
		t.Errorf("typed update: got %q, want %q", got, want)
	}
	if err := k8sClient.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if got, want := typed.next(t, second), "delete *v1.ConfigMap "+second+` kind=""`; got != want {
		t.Errorf("typed delete: got %q, want %q", got, want)
	}
	if got, want := meta.next(t, second),
		"add *v1.PartialObjectMetadata "+second+` kind="ConfigMap" initial=false`; got != want {
		t.Errorf("metadata add: got %q, want %q", got, want)
	}
}

// blockingHandler blocks in OnAdd until release is closed.
type blockingHandler struct {
	release chan struct{}
}

func (h *blockingHandler) OnAdd(any, bool)   { <-h.release }
func (h *blockingHandler) OnUpdate(any, any) {}
func (h *blockingHandler) OnDelete(any)      {}

func TestEnvtestRegistrationHasSyncedOnlyAfterItsHandlerProcessedTheInitialList(t *testing.T) {
	requireEnv(t)
	ns := createNamespace(t, "hassynced")
	create(t, newConfigMap(ns, "one", nil, nil))
	c := startEnvCache(t, crcache.Options{})
	ctx := envCtx(t)

	inf, err := c.GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	if !inf.HasSynced() {
		t.Fatal("informer not synced after a blocking GetInformer")
	}
	fast, err := inf.AddEventHandler(newRecorder())
	if err != nil {
		t.Fatal(err)
	}
	slow := &blockingHandler{release: make(chan struct{})}
	slowReg, err := inf.AddEventHandler(slow)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-fast.HasSyncedChecker().Done():
	case <-time.After(15 * time.Second):
		t.Fatal("fast registration did not sync")
	}
	time.Sleep(100 * time.Millisecond)
	if slowReg.HasSynced() {
		t.Fatal("registration of a handler blocked in OnAdd reports HasSynced")
	}
	select {
	case <-slowReg.HasSyncedChecker().Done():
		t.Fatal("blocked registration's checker is done")
	default:
	}
	close(slow.release)
	select {
	case <-slowReg.HasSyncedChecker().Done():
	case <-time.After(15 * time.Second):
		t.Fatal("registration did not sync after its handler was released")
	}
	if !slowReg.HasSynced() {
		t.Error("HasSynced false after the checker is done")
	}
	if err := inf.RemoveEventHandler(slowReg); err != nil {
		t.Errorf("RemoveEventHandler: %v", err)
	}
}

func TestEnvtestReadsBeforeStartReturnErrCacheNotStarted(t *testing.T) {
	requireEnv(t)
	ns := createNamespace(t, "notstarted")
	create(t, newConfigMap(ns, "x", nil, nil))
	c := newEnvCache(t, crcache.Options{})
	ctx := envCtx(t)

	var notStarted *crcache.ErrCacheNotStarted
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "x"}, &corev1.ConfigMap{}); !errors.As(err, &notStarted) {
		t.Fatalf("Get before Start: err = %v, want ErrCacheNotStarted", err)
	}
	if err := c.List(ctx, &corev1.ConfigMapList{}); !errors.As(err, &notStarted) {
		t.Fatalf("List before Start: err = %v, want ErrCacheNotStarted", err)
	}
	runCache(t, c)
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "x"}, &cm); err != nil || cm.Name != "x" {
		t.Errorf("Get after Start: %v %q", err, cm.Name)
	}
}

func TestEnvtestStartBlocksUntilItsContextEnds(t *testing.T) {
	c := newEnvCache(t, crcache.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	if _, err := c.GetInformer(envCtx(t), &corev1.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("Start returned %v while its context was live", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := c.Start(ctx); err == nil {
		t.Error("second Start succeeded")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Start returned %v, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Start did not return after cancel")
	}
}

func TestEnvtestRemoveInformerStopsItAndTheNextReadStartsAFreshOne(t *testing.T) {
	requireEnv(t)
	ns := createNamespace(t, "remove")
	create(t, newConfigMap(ns, "before", nil, nil))
	c := startEnvCache(t, crcache.Options{})
	ctx := envCtx(t)

	inf, err := c.GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveInformer(ctx, &corev1.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if !inf.IsStopped() {
			return errors.New("removed informer still running")
		}
		return nil
	})
	create(t, newConfigMap(ns, "after", nil, nil))
	var list corev1.ConfigMapList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if got, want := keysIn(t, &list, ns), sorted(ns+"/after", ns+"/before"); !slices.Equal(got, want) {
		t.Errorf("fresh informer lists %v, want %v", got, want)
	}
	again, err := c.GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	if again == inf || again.IsStopped() {
		t.Error("GetInformer after RemoveInformer returned the old or a stopped informer")
	}
}

func TestEnvtestDefaultNamespacesRestrictTheCache(t *testing.T) {
	requireEnv(t)
	ns1, ns2, ns3 := createNamespace(t, "restrict"), createNamespace(t, "restrict"), createNamespace(t, "restrict")
	create(t, newConfigMap(ns1, "a", nil, nil))
	create(t, newConfigMap(ns2, "b", nil, nil))
	create(t, newConfigMap(ns3, "c", nil, nil))
	c := startEnvCache(t, crcache.Options{DefaultNamespaces: map[string]crcache.Config{ns1: {}, ns2: {}}})
	ctx := envCtx(t)

	var list corev1.ConfigMapList
	if err := c.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	got, want := keysIn(t, &list, ns1, ns2, ns3), sorted(ns1+"/a", ns2+"/b")
	if !slices.Equal(got, want) || len(list.Items) != 2 {
		t.Errorf("List: got %v (%d items), want %v", got, len(list.Items), want)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns3, Name: "c"}, &corev1.ConfigMap{}); err == nil {
		t.Error("Get in a namespace outside DefaultNamespaces succeeded")
	}
	if err := c.List(ctx, &list, client.InNamespace(ns3)); err == nil {
		t.Error("List in a namespace outside DefaultNamespaces succeeded")
	}
	// Cluster-scoped kinds stay cluster-wide.
	var namespace corev1.Namespace
	if err := c.Get(ctx, client.ObjectKey{Name: ns3}, &namespace); err != nil {
		t.Errorf("Get of cluster-scoped Namespace %s: %v", ns3, err)
	}
}

func TestEnvtestDefaultLabelSelectorFiltersOnTheServer(t *testing.T) {
	requireEnv(t)
	ns := createNamespace(t, "serverside")
	tag := "tag-" + ns
	create(t, newConfigMap(ns, "in", map[string]string{"cached": tag}, nil))
	create(t, newConfigMap(ns, "out", nil, nil))
	c := startEnvCache(t, crcache.Options{DefaultLabelSelector: labels.SelectorFromSet(labels.Set{"cached": tag})})
	ctx := envCtx(t)

	var list corev1.ConfigMapList
	if err := c.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	if got, want := keysIn(t, &list, ns), []string{ns + "/in"}; !slices.Equal(got, want) || len(list.Items) != 1 {
		t.Errorf("got %v (%d items), want %v", got, len(list.Items), want)
	}
}

func TestEnvtestForbiddenListIsReturnedPromptly(t *testing.T) {
	requireEnv(t)
	user, err := testEnv.AddUser(envtest.User{Name: "nobody"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := dcache.New(user.Config(), crcache.Options{Mapper: mapper})
	if err != nil {
		t.Fatal(err)
	}
	runCache(t, c)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	err = c.List(ctx, &corev1.SecretList{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("err = %v, want Forbidden", err)
	}
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("Forbidden took %v to surface", elapsed)
	}
}
