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
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/deltacache/deltacache/pkg/informer"
	"github.com/deltacache/deltacache/pkg/informer/codec"
)

func namespacesFixture(t *testing.T, opts crcache.Options, options ...Option) (*Cache, *fakeAPI) {
	t.Helper()
	api := newFakeAPI(t,
		configMap("a", "one", map[string]string{appLabel: webApp}),
		configMap("b", "two", map[string]string{appLabel: webApp}),
		configMap("c", "three", map[string]string{appLabel: webApp}),
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}},
	)
	c := newTestCache(t, api, opts, options...)
	startCache(t, c)
	return c, api
}

func TestDefaultNamespacesRestrictWhatIsCachedAndRead(t *testing.T) {
	opts := crcache.Options{DefaultNamespaces: map[string]crcache.Config{"a": {}, "b": {}}}
	c, api := namespacesFixture(t, opts, WithLabelIndexes(appLabel))
	ctx := testCtx(t)

	var list corev1.ConfigMapList
	if err := c.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	if got, want := keysOf(t, &list), []string{"a/one", "b/two"}; !slices.Equal(got, want) {
		t.Errorf("List: got %v, want %v", got, want)
	}
	if err := c.List(ctx, &list, client.MatchingLabels{appLabel: webApp}, client.Limit(1)); err != nil {
		t.Fatal(err)
	}
	if got, want := keysOf(t, &list), []string{"a/one"}; !slices.Equal(got, want) {
		t.Errorf("List with Limit 1: got %v, want %v", got, want)
	}
	if err := c.List(ctx, &list, client.InNamespace("b")); err != nil {
		t.Fatal(err)
	}
	if got, want := keysOf(t, &list), []string{"b/two"}; !slices.Equal(got, want) {
		t.Errorf("List in b: got %v, want %v", got, want)
	}

	err := c.List(ctx, &list, client.InNamespace("c"))
	if err == nil || !strings.Contains(err.Error(), "unknown namespace for the cache") {
		t.Errorf("List in c: err = %v", err)
	}
	err = c.Get(ctx, client.ObjectKey{Namespace: "c", Name: "three"}, &corev1.ConfigMap{})
	if err == nil || !strings.Contains(err.Error(), "unknown namespace for the cache") {
		t.Errorf("Get in c: err = %v", err)
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: "b", Name: "two"}, &cm); err != nil || cm.Name != "two" {
		t.Errorf("Get in b: %v %q", err, cm.Name)
	}

	// Cluster-scoped kinds are cached cluster-wide.
	var node corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: "n1"}, &node); err != nil {
		t.Errorf("Get node: %v", err)
	}

	var namespaces []string
	for _, call := range api.listCalls() {
		if call.gvk == gvkConfigMap {
			namespaces = append(namespaces, call.opts.Namespace)
		}
	}
	slices.Sort(namespaces)
	if want := []string{"a", "b"}; !slices.Equal(namespaces, want) {
		t.Errorf("config map list/watches in namespaces %q, want %q", namespaces, want)
	}
}

func TestAllNamespacesEntryCachesEveryOtherNamespaceOnce(t *testing.T) {
	c, _ := namespacesFixture(t, crcache.Options{DefaultNamespaces: map[string]crcache.Config{
		"a":                   {},
		crcache.AllNamespaces: {},
	}})
	ctx := testCtx(t)

	var list corev1.ConfigMapList
	if err := c.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	if got, want := sortedKeysOf(t, &list), []string{"a/one", "b/two", "c/three"}; !slices.Equal(got, want) {
		t.Errorf("List: got %v, want %v", got, want)
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: "c", Name: "three"}, &cm); err != nil {
		t.Errorf("Get in c through AllNamespaces: %v", err)
	}
}

// recordingHandler records the "ns/name" of every add and whether it was initial.
type recordingHandler struct {
	mu   sync.Mutex
	adds map[string]bool
}

func (h *recordingHandler) OnAdd(obj any, initial bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cm := obj.(*corev1.ConfigMap)
	h.adds[cm.Namespace+"/"+cm.Name] = initial
}
func (h *recordingHandler) OnUpdate(any, any) {}
func (h *recordingHandler) OnDelete(any)      {}

func TestMultiNamespaceInformerFansHandlersOutToEveryNamespace(t *testing.T) {
	c, _ := namespacesFixture(t, crcache.Options{DefaultNamespaces: map[string]crcache.Config{"a": {}, "b": {}}})
	ctx := testCtx(t)

	inf, err := c.GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	if !inf.HasSynced() {
		t.Fatal("informer not synced after blocking GetInformer")
	}
	select {
	case <-inf.HasSyncedChecker().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("HasSyncedChecker not done")
	}
	h := &recordingHandler{adds: map[string]bool{}}
	reg, err := inf.AddEventHandlerWithOptions(h, toolscache.HandlerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-reg.HasSyncedChecker().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("registration did not sync")
	}
	if !reg.HasSynced() {
		t.Error("registration HasSynced false after its checker is done")
	}
	h.mu.Lock()
	got := h.adds
	h.mu.Unlock()
	if len(got) != 2 || !got["a/one"] || !got["b/two"] {
		t.Errorf("initial adds = %v, want a/one and b/two with isInInitialList", got)
	}
	if err := inf.RemoveEventHandler(reg); err != nil {
		t.Errorf("RemoveEventHandler: %v", err)
	}
	if err := inf.RemoveEventHandler(reg); err != nil {
		t.Errorf("second RemoveEventHandler: %v", err)
	}
	if !strings.Contains(inf.HasSyncedChecker().Name(), `"a"`) {
		t.Errorf("checker name %q does not name the namespaces", inf.HasSyncedChecker().Name())
	}
}

// With several namespaces, a read waits only for the informers of the namespaces it
// reads (controller-runtime keeps one cache per namespace): a namespace the operator
// cannot list does not fail reads of the others, and a List across namespaces reports it.
func TestReadsOfOneNamespaceDoNotWaitForAnotherThatCannotSync(t *testing.T) {
	api := newFakeAPI(t, configMap("ns1", "a", nil), configMap("ns2", "b", nil))
	c := newTestCache(t, api, crcache.Options{DefaultNamespaces: map[string]crcache.Config{"ns1": {}, "ns2": {}}})
	inner := c.listWatcher
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "",
		errors.New("no RoleBinding in ns2"))
	c.listWatcher = func(key entryKey, m *apimeta.RESTMapping, namespaced bool,
		opts informer.ListWatchOptions, wire *codec.WireCapture) (toolscache.ListerWatcher, error) {
		if opts.Namespace != "ns2" {
			return inner(key, m, namespaced, opts, wire)
		}
		return &toolscache.ListWatch{
			ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
				return nil, forbidden
			},
			WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
				return nil, forbidden
			},
		}, nil
	}
	startCache(t, c)
	ctx := testCtx(t)

	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns1", Name: "a"}, &cm); err != nil || cm.Name != "a" {
		t.Errorf("Get ns1/a = %q, %v; want it from the readable namespace", cm.Name, err)
	}
	var list corev1.ConfigMapList
	if err := c.List(ctx, &list, client.InNamespace("ns1")); err != nil || len(list.Items) != 1 {
		t.Errorf("List in ns1 = %d items, %v; want 1 from the readable namespace", len(list.Items), err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns2", Name: "b"}, &cm); !apierrors.IsForbidden(err) {
		t.Errorf("Get ns2/b: %v, want the Forbidden list error", err)
	}
	if err := c.List(ctx, &list); !apierrors.IsForbidden(err) {
		t.Errorf("List across namespaces: %v, want the Forbidden list error of ns2", err)
	}
}
