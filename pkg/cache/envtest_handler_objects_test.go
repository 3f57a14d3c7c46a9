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
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dcache "github.com/deltacache/deltacache/pkg/cache"
)

// handlerObjects keeps, per key, the object of a handler's last OnAdd and the
// objects of its last OnUpdate.
type handlerObjects struct {
	mu      sync.Mutex
	adds    map[string]client.Object
	updates map[string][2]client.Object
}

func newHandlerObjects() *handlerObjects {
	return &handlerObjects{adds: map[string]client.Object{}, updates: map[string][2]client.Object{}}
}

func (h *handlerObjects) handler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			o := obj.(client.Object)
			h.mu.Lock()
			defer h.mu.Unlock()
			h.adds[client.ObjectKeyFromObject(o).String()] = o
		},
		UpdateFunc: func(oldObj, newObj any) {
			o := newObj.(client.Object)
			h.mu.Lock()
			defer h.mu.Unlock()
			h.updates[client.ObjectKeyFromObject(o).String()] = [2]client.Object{oldObj.(client.Object), o}
		},
	}
}

func (h *handlerObjects) add(key string) client.Object {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.adds[key]
}

// update returns the last update of key whose new object has resourceVersion rv.
func (h *handlerObjects) update(key, rv string) (oldObj, newObj client.Object) {
	h.mu.Lock()
	defer h.mu.Unlock()
	u := h.updates[key]
	if u[1] == nil || u[1].GetResourceVersion() != rv {
		return nil, nil
	}
	return u[0], u[1]
}

// firstDifference returns where a and b first differ by reflect.DeepEqual,
// unexported fields included (such as a Quantity's cached string), as a path
// and the two values there.
func firstDifference(a, b any) string {
	if path, va, vb, found := diffValues(reflect.ValueOf(a), reflect.ValueOf(b), "obj"); found {
		return fmt.Sprintf("%s: %v vs %v", path, va, vb)
	}
	return "no difference found"
}

func diffValues(a, b reflect.Value, path string) (string, any, any, bool) {
	if a.IsValid() != b.IsValid() || a.IsValid() && a.Type() != b.Type() {
		return path, a, b, true
	}
	if !a.IsValid() {
		return "", nil, nil, false
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return path, a, b, true
			}
			return "", nil, nil, false
		}
		return diffValues(a.Elem(), b.Elem(), path)
	case reflect.Struct:
		for i := range a.NumField() {
			if p, va, vb, ok := diffValues(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); ok {
				return p, va, vb, true
			}
		}
		return "", nil, nil, false
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() || a.Kind() == reflect.Slice && a.IsNil() != b.IsNil() {
			return path, fmt.Sprintf("len %d (nil %v)", a.Len(), a.Kind() == reflect.Slice && a.IsNil()),
				fmt.Sprintf("len %d (nil %v)", b.Len(), b.Kind() == reflect.Slice && b.IsNil()), true
		}
		for i := range a.Len() {
			if p, va, vb, ok := diffValues(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); ok {
				return p, va, vb, true
			}
		}
		return "", nil, nil, false
	case reflect.Map:
		if a.Len() != b.Len() || a.IsNil() != b.IsNil() {
			return path, fmt.Sprintf("len %d", a.Len()), fmt.Sprintf("len %d", b.Len()), true
		}
		for it := a.MapRange(); it.Next(); {
			bv := b.MapIndex(it.Key())
			if p, va, vb, ok := diffValues(it.Value(), bv, fmt.Sprintf("%s[%v]", path, it.Key())); ok {
				return p, va, vb, true
			}
		}
		return "", nil, nil, false
	default:
		if fmt.Sprint(a) != fmt.Sprint(b) {
			return path, fmt.Sprintf("%q", fmt.Sprint(a)), fmt.Sprintf("%q", fmt.Sprint(b)), true
		}
		return "", nil, nil, false
	}
}

// A Pod with an emptyDir sizeLimit and resource requests and limits, and an
// autoscaling/v2 HPA with a memory averageValue: Quantities in place (pointer
// fields), which a protobuf Marshal fills the cached string of, and in
// ResourceLists. For the same server objects, listed and watched, a handler of
// deltacache's cache (compact storage, the default) and one of
// controller-runtime's receive objects equal by reflect.DeepEqual, for the add
// and for a label-only update (old and new); so an UpdateFunc comparing
// old.Spec and new.Spec with reflect.DeepEqual sees no spec change on either.
func TestHandlerObjectsEqualControllerRuntimesForTheSameServerObject(t *testing.T) {
	requireEnv(t)
	ctx := envCtx(t)
	ns := createNamespace(t, "handler-objects")
	newPodObj := func(name string) client.Object {
		p := newPod(ns, name, map[string]string{"app": "web"})
		p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("64Mi"))}}}}
		p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"),
				corev1.ResourceMemory: resource.MustParse("512Mi")},
			Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
		}
		return p
	}
	newHPAObj := func(name string) client.Object {
		return &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "web"}},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
				MinReplicas:    ptr.To[int32](1), MaxReplicas: 5,
				Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType,
					Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceMemory, Target: autoscalingv2.MetricTarget{
						Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("512Mi"))}}}},
			},
		}
	}
	kinds := []struct {
		name    string
		example client.Object
		newObj  func(name string) client.Object
	}{{"Pod", &corev1.Pod{}, newPodObj}, {"HorizontalPodAutoscaler", &autoscalingv2.HorizontalPodAutoscaler{}, newHPAObj}}

	for _, k := range kinds {
		create(t, k.newObj("listed")) // before the caches start: delivered from their list
	}
	opts := crcache.Options{HTTPClient: httpClient, Mapper: mapper, Scheme: scheme.Scheme,
		DefaultNamespaces: map[string]crcache.Config{ns: {}}}
	// managedFields are stripped by default (README difference 3): keep them here.
	ours := newEnvCache(t, opts, dcache.WithKeepManagedFields())
	theirs, err := crcache.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	runCache(t, ours)
	runCache(t, theirs)
	type side struct {
		name string
		objs map[string]*handlerObjects // by kind
	}
	sides := []side{{"deltacache", map[string]*handlerObjects{}}, {"controller-runtime", map[string]*handlerObjects{}}}
	for i, c := range []crcache.Cache{ours, theirs} {
		for _, k := range kinds {
			inf, err := c.GetInformer(ctx, k.example)
			if err != nil {
				t.Fatal(err)
			}
			h := newHandlerObjects()
			reg, err := inf.AddEventHandler(h.handler())
			if err != nil {
				t.Fatal(err)
			}
			if !toolscache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
				t.Fatal("handler did not sync")
			}
			sides[i].objs[k.name] = h
		}
	}

	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			watched := k.newObj("watched")
			create(t, watched) // after: delivered from the watch
			keys := []string{ns + "/listed", ns + "/watched"}
			for _, key := range keys {
				eventually(t, 30*time.Second, func() error {
					for _, s := range sides {
						if s.objs[k.name].add(key) == nil {
							return fmt.Errorf("%s: no add of %s yet", s.name, key)
						}
					}
					return nil
				})
				a, b := sides[0].objs[k.name].add(key), sides[1].objs[k.name].add(key)
				if !reflect.DeepEqual(a, b) {
					t.Errorf("add of %s: the objects differ by reflect.DeepEqual; %s", key, firstDifference(a, b))
				}
			}
			// A label-only change of each.
			for _, key := range keys {
				obj := k.example.DeepCopyObject().(client.Object)
				name := strings.TrimPrefix(key, ns+"/")
				patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"rev":"2"}}}`))
				obj.SetNamespace(ns)
				obj.SetName(name)
				if err := k8sClient.Patch(ctx, obj, patch); err != nil {
					t.Fatal(err)
				}
				rv := obj.GetResourceVersion()
				eventually(t, 30*time.Second, func() error {
					for _, s := range sides {
						if _, n := s.objs[k.name].update(key, rv); n == nil {
							return fmt.Errorf("%s: no update of %s to %s yet", s.name, key, rv)
						}
					}
					return nil
				})
				for _, s := range sides {
					o, n := s.objs[k.name].update(key, rv)
					if !reflect.DeepEqual(specOf(o), specOf(n)) {
						t.Errorf("%s: label-only update of %s, but old.Spec and new.Spec differ by reflect.DeepEqual; %s",
							s.name, key, firstDifference(specOf(o), specOf(n)))
					}
				}
				o1, n1 := sides[0].objs[k.name].update(key, rv)
				o2, n2 := sides[1].objs[k.name].update(key, rv)
				if !reflect.DeepEqual(o1, o2) {
					t.Errorf("update of %s: old objects differ by reflect.DeepEqual; %s", key, firstDifference(o1, o2))
				}
				if !reflect.DeepEqual(n1, n2) {
					t.Errorf("update of %s: new objects differ by reflect.DeepEqual; %s", key, firstDifference(n1, n2))
				}
			}
		})
	}
}

// specOf returns the Spec of a Pod or an HPA.
func specOf(obj client.Object) any {
	switch o := obj.(type) {
	case *corev1.Pod:
		return o.Spec
	case *autoscalingv2.HorizontalPodAutoscaler:
		return o.Spec
	}
	return nil
}
