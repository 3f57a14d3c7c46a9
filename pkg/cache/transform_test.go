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

package cache

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var managedFields = []metav1.ManagedFieldsEntry{{
	Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
	FieldsType: fieldsV1Type, FieldsV1: metav1.NewFieldsV1(`{"f:data":{"f:name":{}}}`),
}}

// managedConfigMap is configMap with managedFields and owner references.
func managedConfigMap(ns, name string, lbls map[string]string) *corev1.ConfigMap {
	cm := configMap(ns, name, lbls)
	cm.ManagedFields = managedFields
	return cm
}

func TestManagedFieldsAreStrippedByDefaultAndKeptOnRequest(t *testing.T) {
	for _, tc := range []struct {
		name    string
		options []Option
		want    int
	}{
		{defaultNamespace, nil, 0},
		{"WithKeepManagedFields", []Option{WithKeepManagedFields()}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestCache(t, newFakeAPI(t, managedConfigMap("a", "x", nil)), crcache.Options{}, tc.options...)
			startCache(t, c)
			ctx := testCtx(t)
			var cm corev1.ConfigMap
			if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "x"}, &cm); err != nil {
				t.Fatal(err)
			}
			if len(cm.ManagedFields) != tc.want {
				t.Errorf("typed: %d managedFields, want %d", len(cm.ManagedFields), tc.want)
			}
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvkConfigMap)
			if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "x"}, u); err != nil {
				t.Fatal(err)
			}
			if got := len(u.GetManagedFields()); got != tc.want {
				t.Errorf("unstructured: %d managedFields, want %d", got, tc.want)
			}
		})
	}
}

// countingTransform counts its calls per object name and returns a new object that
// still carries managedFields, so that stripping must happen after it.
type countingTransform struct {
	mu    sync.Mutex
	calls map[string]int
}

func (c *countingTransform) transform(in any) (any, error) {
	cm := in.(*corev1.ConfigMap)
	c.mu.Lock()
	if c.calls == nil {
		c.calls = map[string]int{}
	}
	c.calls[cm.Name]++
	c.mu.Unlock()
	out := cm.DeepCopy()
	out.ManagedFields = managedFields
	out.Annotations = map[string]string{"transformed": cm.Name}
	return out, nil
}

func TestUserTransformRunsOnceAndManagedFieldsAreStrippedFromItsResult(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts func(transform func(any) (any, error)) crcache.Options
	}{
		{"DefaultTransform", func(tr func(any) (any, error)) crcache.Options {
			return crcache.Options{DefaultTransform: tr}
		}},
		{"ByObject.Transform", func(tr func(any) (any, error)) crcache.Options {
			return crcache.Options{
				DefaultTransform: func(any) (any, error) { return nil, fmt.Errorf("DefaultTransform used despite ByObject") },
				ByObject:         map[client.Object]crcache.ByObject{&corev1.ConfigMap{}: {Transform: tr}},
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var counter countingTransform
			api := newFakeAPI(t, managedConfigMap("a", "x", nil), managedConfigMap("a", "y", nil))
			c := newTestCache(t, api, tc.opts(counter.transform))
			startCache(t, c)
			var list corev1.ConfigMapList
			if err := c.List(testCtx(t), &list); err != nil {
				t.Fatal(err)
			}
			for _, cm := range list.Items {
				if len(cm.ManagedFields) != 0 || cm.Annotations["transformed"] != cm.Name {
					t.Errorf("%s: managedFields %d, annotations %v; want stripped and transformed",
						cm.Name, len(cm.ManagedFields), cm.Annotations)
				}
			}
			counter.mu.Lock()
			defer counter.mu.Unlock()
			if counter.calls["x"] != 1 || counter.calls["y"] != 1 || len(counter.calls) != 2 {
				t.Errorf("transform calls = %v, want x:1 y:1", counter.calls)
			}
		})
	}
}

// distinctPod returns a pod whose strings are freshly allocated, as a decoder's are.
func distinctPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace:    strings.Clone("shop"),
		Name:         name,
		GenerateName: strings.Clone("web-7d4b9c-"),
		Labels:       map[string]string{strings.Clone(appLabel): strings.Clone(webApp)},
		Annotations:  map[string]string{strings.Clone("owner"): "team-" + name},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: strings.Clone("apps/v1"), Kind: strings.Clone("ReplicaSet"),
			Name: strings.Clone("web-7d4b9c"), UID: "rs",
		}},
	}}
}

func dataOf(s string) *byte { return unsafe.StringData(s) }

// labelKey returns the (only) key of m.
func labelKey(m map[string]string) string {
	for k := range m {
		return k
	}
	return ""
}

func TestRepeatedMetadataStringsAreInternedUnlessDisabled(t *testing.T) {
	for _, tc := range []struct {
		name    string
		options []Option
		shared  bool
	}{
		{"decoded storage", []Option{WithoutCompactStorage()}, true},
		{"WithoutStringInterning", []Option{WithoutCompactStorage(), WithoutStringInterning()}, false},
		// Compact storage holds bytes; each read decodes strings of its own.
		{"compact storage", []Option{WithStorage(StorageCompact)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestCache(t, newFakeAPI(t, distinctPod("p1"), distinctPod("p2")), crcache.Options{}, tc.options...)
			startCache(t, c)
			var pods corev1.PodList
			if err := c.List(testCtx(t), &pods, client.UnsafeDisableDeepCopy); err != nil {
				t.Fatal(err)
			}
			if len(pods.Items) != 2 {
				t.Fatalf("%d pods", len(pods.Items))
			}
			a, b := pods.Items[0], pods.Items[1]
			pairs := map[string][2]string{
				"namespace":          {a.Namespace, b.Namespace},
				"generateName":       {a.GenerateName, b.GenerateName},
				"label key":          {labelKey(a.Labels), labelKey(b.Labels)},
				"label value":        {a.Labels[appLabel], b.Labels[appLabel]},
				"annotation key":     {labelKey(a.Annotations), labelKey(b.Annotations)},
				"owner apiVersion":   {a.OwnerReferences[0].APIVersion, b.OwnerReferences[0].APIVersion},
				"owner kind":         {a.OwnerReferences[0].Kind, b.OwnerReferences[0].Kind},
				"owner name":         {a.OwnerReferences[0].Name, b.OwnerReferences[0].Name},
				"pod name (unique)":  {a.Name, b.Name},
				"annotation (value)": {a.Annotations["owner"], b.Annotations["owner"]},
			}
			for field, pair := range pairs {
				if pair[0] != pair[1] {
					continue // unique values: nothing to share
				}
				if got := dataOf(pair[0]) == dataOf(pair[1]); got != tc.shared {
					t.Errorf("%s %q: shared = %t, want %t", field, pair[0], got, tc.shared)
				}
			}
		})
	}
}

func TestInternTableIsBoundedAndKeepsHotStringsShared(t *testing.T) {
	table := newInterner()
	hot := table.internLocked(strings.Clone(appLabel))
	for i := range 5 * internGenerationSize {
		table.internLocked(fmt.Sprintf("unique-%d", i))
		if got := table.internLocked(strings.Clone(appLabel)); dataOf(got) != dataOf(hot) {
			t.Fatalf("after %d unique strings the hot string lost its shared copy", i)
		}
	}
	if got := table.size(); got > 2*internGenerationSize {
		t.Errorf("table holds %d strings, want at most %d", got, 2*internGenerationSize)
	}
	long := strings.Repeat("x", internMaxLen+1)
	table.internLocked(long)
	again := strings.Clone(long)
	if got := table.internLocked(again); dataOf(got) != dataOf(again) {
		t.Error("a string longer than internMaxLen was interned")
	}
}

// kindsSeen records, per stage, the GroupVersionKind of the objects named "x" that stage
// was handed.
type kindsSeen struct {
	mu    sync.Mutex
	kinds map[string]schema.GroupVersionKind
}

func (k *kindsSeen) record(stage string, obj any) {
	o, ok := obj.(client.Object)
	if !ok || o.GetName() != "x" {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.kinds == nil {
		k.kinds = map[string]schema.GroupVersionKind{}
	}
	k.kinds[stage] = o.GetObjectKind().GroupVersionKind()
}

func (k *kindsSeen) get(stage string) (schema.GroupVersionKind, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	gvk, ok := k.kinds[stage]
	return gvk, ok
}

// Typed objects reach the transform, index functions, event handlers and the informer's
// store with an empty TypeMeta, as controller-runtime's do, unless
// WithTypeMetaOnHandlerObjects; Get and List copies always carry apiVersion and kind, and
// so do unstructured and metadata-only objects everywhere. (TestConformance's "handler
// and store objects" case compares the default with controller-runtime's cache.)
func TestTypedObjectsHaveAnEmptyTypeMetaUnlessTypeMetaOnHandlerObjects(t *testing.T) {
	for _, tc := range []struct {
		name      string
		options   []Option
		typedKind schema.GroupVersionKind
	}{
		{"default", nil, schema.GroupVersionKind{}},
		{"WithTypeMetaOnHandlerObjects", []Option{WithTypeMetaOnHandlerObjects()}, gvkConfigMap},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen kindsSeen
			c := newTestCache(t, newFakeAPI(t, configMap("a", "x", nil)), crcache.Options{
				DefaultTransform: func(in any) (any, error) {
					if _, typed := in.(*corev1.ConfigMap); typed {
						seen.record("transform", in)
					}
					return in, nil
				},
			}, tc.options...)
			ctx := testCtx(t)
			if err := c.IndexField(ctx, &corev1.ConfigMap{}, "byName", func(obj client.Object) []string {
				seen.record("index", obj)
				return []string{obj.GetName()}
			}); err != nil {
				t.Fatal(err)
			}
			startCache(t, c)

			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvkConfigMap)
			m := &metav1.PartialObjectMetadata{}
			m.SetGroupVersionKind(gvkConfigMap)
			for stage, example := range map[string]client.Object{"typed": &corev1.ConfigMap{}, "unstructured": u,
				"metadata": m} {
				inf, err := c.GetInformer(ctx, example)
				if err != nil {
					t.Fatal(err)
				}
				reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
					AddFunc: func(obj any) { seen.record(stage+" handler", obj) },
				})
				if err != nil {
					t.Fatal(err)
				}
				waitUntil(t, stage+" handler's initial add", reg.HasSynced)
				sii, ok := inf.(toolscache.SharedIndexInformer)
				if !ok {
					t.Fatalf("%s informer is a %T, not a SharedIndexInformer", stage, inf)
				}
				item, exists, err := sii.GetStore().GetByKey("a/x")
				if err != nil || !exists {
					t.Fatalf("%s GetStore: exists %t, %v", stage, exists, err)
				}
				seen.record(stage+" store", item)
			}
			var got corev1.ConfigMap
			if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "x"}, &got); err != nil {
				t.Fatal(err)
			}
			seen.record("Get", &got)

			for stage, want := range map[string]schema.GroupVersionKind{
				"transform": tc.typedKind, "index": tc.typedKind,
				"typed handler": tc.typedKind, "typed store": tc.typedKind, "Get": gvkConfigMap,
				"unstructured handler": gvkConfigMap, "unstructured store": gvkConfigMap,
				"metadata handler": gvkConfigMap, "metadata store": gvkConfigMap,
			} {
				if gvk, ok := seen.get(stage); !ok || gvk != want {
					t.Errorf("%s: saw x %t with GVK %v, want %v", stage, ok, gvk, want)
				}
			}
		})
	}
}
