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
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/deltacache/deltacache/internal/testenv"
	"github.com/deltacache/deltacache/pkg/informer"
	"github.com/deltacache/deltacache/pkg/informer/codec"
)

// The unit tests run the real informers against fakeAPI, an in-memory stand-in for the
// API server's list and watch that honours ListWatchOptions (namespace, label and field
// selectors), so the reader, the indexes and the lifecycle are tested without a server.

// Names and values many unit tests share.
const (
	appLabel           = "app"  // label key of the "label:app" index
	tierLabel          = "tier" // another label key the tests index or select on
	webApp             = "web"  // a value of the app label
	configMapsResource = "configmaps"
	configMapKind      = "ConfigMap"
	exampleGroup       = "example.com" // API group of the Widget custom resource
	fieldsV1Type       = "FieldsV1"    // ManagedFieldsEntry.FieldsType
	defaultNamespace   = "default"
	unreachableHost    = "http://127.0.0.1:1" // a rest.Config host nothing listens on
)

var (
	gvkPod       = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	gvkConfigMap = schema.GroupVersionKind{Version: "v1", Kind: configMapKind}
	gvkNode      = schema.GroupVersionKind{Version: "v1", Kind: "Node"}
	gvkWidget    = schema.GroupVersionKind{Group: exampleGroup, Version: "v1", Kind: "Widget"}
)

// listCall records one List request the fake answered.
type listCall struct {
	gvk   schema.GroupVersionKind
	shape shape
	opts  informer.ListWatchOptions
}

type fakeAPI struct {
	t testing.TB

	mu      sync.Mutex
	objects []runtime.Object
	listErr error
	// kindErrs are list errors of one GVK; they take precedence over listErr.
	kindErrs map[schema.GroupVersionKind]error
	calls    []listCall
}

func newFakeAPI(t testing.TB, objects ...runtime.Object) *fakeAPI {
	return &fakeAPI{t: t, objects: objects}
}

func (f *fakeAPI) setListError(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listErr = err
}

// setListErrorFor makes every LIST of gvk fail with err (nil: succeed again).
func (f *fakeAPI) setListErrorFor(gvk schema.GroupVersionKind, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.kindErrs == nil {
		f.kindErrs = make(map[schema.GroupVersionKind]error)
	}
	f.kindErrs[gvk] = err
}

// listCallsOf counts the LIST requests of gvk.
func (f *fakeAPI) listCallsOf(gvk schema.GroupVersionKind) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, call := range f.calls {
		if call.gvk == gvk {
			n++
		}
	}
	return n
}

func (f *fakeAPI) listCalls() []listCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeAPI) listWatcher(
	key entryKey, _ *apimeta.RESTMapping, namespaced bool, opts informer.ListWatchOptions, _ *codec.WireCapture,
) (toolscache.ListerWatcher, error) {
	return &toolscache.ListWatch{
		ListWithContextFunc: func(_ context.Context, _ metav1.ListOptions) (runtime.Object, error) {
			return f.list(key, namespaced, opts)
		},
		WatchFuncWithContext: func(_ context.Context, lo metav1.ListOptions) (watch.Interface, error) {
			if lo.SendInitialEvents == nil || !*lo.SendInitialEvents {
				return watch.NewRaceFreeFake(), nil
			}
			// A WatchList request: the initial objects as Added events, then the
			// bookmark that ends them, streamed (any number of them) until Stop.
			list, err := f.list(key, namespaced, opts)
			if err != nil {
				return nil, err
			}
			// Each item its own allocation, as a watch stream decodes them (items of one
			// Items array would each get a weak reference inside that one allocation,
			// which the runtime keeps in a list per span: quadratic in the items).
			items, _ := apimeta.ExtractListWithAlloc(list)
			bookmark := toShape(f.t, newObjectOf(key), key)
			m, _ := apimeta.Accessor(bookmark)
			m.SetResourceVersion("10")
			m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
			events := make(chan watch.Event)
			w := watch.NewProxyWatcher(events)
			go func() {
				send := func(e watch.Event) bool {
					select {
					case events <- e:
						return true
					case <-w.StopChan():
						return false
					}
				}
				for _, item := range items {
					if !send(watch.Event{Type: watch.Added, Object: item}) {
						return
					}
				}
				send(watch.Event{Type: watch.Bookmark, Object: bookmark})
			}()
			return w, nil
		},
	}, nil
}

// newObjectOf returns an empty object of key's GVK (typed if the Scheme knows it).
func newObjectOf(key entryKey) runtime.Object {
	if obj, err := clientgoscheme.Scheme.New(key.gvk); err == nil {
		return obj
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(key.gvk)
	return u
}

func (f *fakeAPI) list(key entryKey, namespaced bool, opts informer.ListWatchOptions) (runtime.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, listCall{gvk: key.gvk, shape: key.shape, opts: opts})
	if err := f.kindErrs[key.gvk]; err != nil {
		return nil, err
	}
	if f.listErr != nil {
		return nil, f.listErr
	}
	labelSel, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return nil, err
	}
	fieldSel, err := fields.ParseSelector(opts.FieldSelector)
	if err != nil {
		return nil, err
	}
	var items []runtime.Object
	for _, obj := range f.objects {
		gvk, err := apiutil.GVKForObject(obj, clientgoscheme.Scheme)
		if err != nil {
			f.t.Fatalf("fake object %T: %v", obj, err)
		}
		if gvk != key.gvk {
			continue
		}
		m, _ := apimeta.Accessor(obj)
		if namespaced && opts.Namespace != "" && m.GetNamespace() != opts.Namespace {
			continue
		}
		if !labelSel.Matches(labels.Set(m.GetLabels())) ||
			!fieldSel.Matches(fields.Set{"metadata.name": m.GetName(), "metadata.namespace": m.GetNamespace()}) {
			continue
		}
		items = append(items, toShape(f.t, obj.DeepCopyObject(), key))
	}
	return newListOf(f.t, key, items), nil
}

// toShape converts a typed or unstructured fake object to the shape of key.
func toShape(t testing.TB, obj runtime.Object, key entryKey) runtime.Object {
	t.Helper()
	switch key.shape {
	case shapeUnstructured:
		if u, ok := obj.(*unstructured.Unstructured); ok {
			return u
		}
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: content}
		u.SetGroupVersionKind(key.gvk)
		return u
	case shapeMetadata:
		m, _ := apimeta.Accessor(obj)
		pom := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Name: m.GetName(), Namespace: m.GetNamespace(), Labels: m.GetLabels(),
			ResourceVersion: m.GetResourceVersion(), UID: m.GetUID(),
		}}
		pom.SetGroupVersionKind(key.gvk)
		return pom
	default:
		// As decoded by a typed client: no TypeMeta.
		obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		return obj
	}
}

func newListOf(t testing.TB, key entryKey, items []runtime.Object) runtime.Object {
	t.Helper()
	var list runtime.Object
	switch key.shape {
	case shapeUnstructured:
		list = &unstructured.UnstructuredList{}
	case shapeMetadata:
		list = &metav1.PartialObjectMetadataList{}
	default:
		var err error
		if list, err = clientgoscheme.Scheme.New(key.gvk.GroupVersion().WithKind(key.gvk.Kind + "List")); err != nil {
			t.Fatal(err)
		}
	}
	if err := apimeta.SetList(list, items); err != nil {
		t.Fatal(err)
	}
	m, err := apimeta.ListAccessor(list)
	if err != nil {
		t.Fatal(err)
	}
	m.SetResourceVersion("10")
	return list
}

// testMapper knows the kinds of the unit tests: Pod, ConfigMap and Widget
// (example.com/v1, absent from the Scheme) are namespaced, Node is cluster-scoped.
func testMapper() apimeta.RESTMapper {
	m := apimeta.NewDefaultRESTMapper(nil)
	m.Add(gvkPod, apimeta.RESTScopeNamespace)
	m.Add(gvkConfigMap, apimeta.RESTScopeNamespace)
	m.Add(gvkWidget, apimeta.RESTScopeNamespace)
	m.Add(gvkNode, apimeta.RESTScopeRoot)
	return m
}

// newTestCache builds a Cache on fakeAPI (not started).
func newTestCache(t testing.TB, api *fakeAPI, opts crcache.Options, options ...Option) *Cache {
	t.Helper()
	if opts.Mapper == nil {
		opts.Mapper = testMapper()
	}
	var settings Config
	for _, option := range options {
		option(&settings)
	}
	c, err := newCache(&rest.Config{Host: unreachableHost}, opts, settings)
	if err != nil {
		t.Fatalf("newCache: %v", err)
	}
	c.listWatcher = api.listWatcher
	return c
}

// startCache starts c until the test ends and waits until its informers have synced.
func startCache(t testing.TB, c *Cache) {
	t.Helper()
	testenv.StartCache(t, c, 10*time.Second)
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func configMap(ns, name string, lbls map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls, ResourceVersion: "5"},
		Data: map[string]string{"name": name}}
}

// keysOf returns "ns/name" (or "name") of every item of list, in list order.
func keysOf(t *testing.T, list client.ObjectList) []string {
	t.Helper()
	items, err := apimeta.ExtractList(list)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(items))
	for _, item := range items {
		m, err := apimeta.Accessor(item)
		if err != nil {
			t.Fatal(err)
		}
		if m.GetNamespace() == "" {
			keys = append(keys, m.GetName())
		} else {
			keys = append(keys, m.GetNamespace()+"/"+m.GetName())
		}
	}
	return keys
}

// sortedKeysOf is keysOf, sorted.
func sortedKeysOf(t *testing.T, list client.ObjectList) []string {
	keys := keysOf(t, list)
	slices.Sort(keys)
	return keys
}
