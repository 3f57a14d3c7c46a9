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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dcache "github.com/deltacache/deltacache/pkg/cache"
)

// serverPodOf fetches a pod from the API server as the cache should hold it: through
// a protobuf client (what the cache's REST client decodes), without managedFields,
// with the GVK a cache read sets.
func serverPodOf(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	if err := k8sClient.Get(envCtx(t), client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
		t.Fatal(err)
	}
	pod.ManagedFields = nil
	pod.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
	return pod
}

// With compact storage (the default for built-in kinds; set here because make test runs
// the suite again with DELTACACHE_STORAGE=Decoded), the pods of the initial WatchList and
// of watch events are stored as the bytes the API server sent (no Marshal), and a Get
// returns an object equal, by reflect.DeepEqual, to the server's without its
// managedFields. With a user transform the cache marshals: the transformed object is
// not the wire's.
func TestEnvtestPodsAreStoredAsTheServerSentThem(t *testing.T) {
	requireEnv(t)
	ns := createNamespace(t, "wire")
	ctx := envCtx(t)
	for i := range 5 {
		pod := newPod(ns, fmt.Sprintf("p-%d", i), map[string]string{appLabel: "web"})
		pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
		create(t, pod)
	}
	compact := dcache.WithStorage(dcache.StorageCompact)
	c := startEnvCache(t, crcache.Options{DefaultNamespaces: map[string]crcache.Config{ns: {}}}, compact)
	if err := c.List(ctx, &corev1.PodList{}); err != nil { // the informer, synced
		t.Fatal(err)
	}
	gvk := corev1.SchemeGroupVersion.WithKind("Pod")
	stored, ok := dcache.WireStored(c, gvk)
	if !ok || stored != 5 {
		t.Fatalf("stored %d pods of the initial list from the wire (capture %v), want 5", stored, ok)
	}

	pod := serverPodOf(t, ns, "p-1")
	pod.Labels["step"] = "updated"
	if err := k8sClient.Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	want := serverPodOf(t, ns, "p-1")
	eventually(t, 30*time.Second, func() error {
		got := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
			return err
		}
		if !reflect.DeepEqual(got, want) {
			return fmt.Errorf("cache holds\n%#v\nserver has\n%#v", got, want)
		}
		return nil
	})
	if stored, _ := dcache.WireStored(c, gvk); stored != 6 {
		t.Fatalf("stored %d pods from the wire after one update, want 6", stored)
	}
	for i := range 5 {
		name := fmt.Sprintf("p-%d", i)
		got := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got); err != nil {
			t.Fatal(err)
		}
		if want := serverPodOf(t, ns, name); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: cache holds\n%#v\nserver has\n%#v", name, got, want)
		}
	}

	transformed := startEnvCache(t, crcache.Options{
		DefaultNamespaces: map[string]crcache.Config{ns: {}},
		DefaultTransform:  func(o any) (any, error) { return o, nil },
	}, compact)
	if err := transformed.List(ctx, &corev1.PodList{}); err != nil {
		t.Fatal(err)
	}
	if stored, ok := dcache.WireStored(transformed, gvk); ok {
		t.Fatalf("a cache with a user transform has a wire capture (%d stored)", stored)
	}
}
