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
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestEnvtestWaitForResourceVersionThenGetReadsYourWrite writes through the direct
// client, waits, and reads the written version from the cache: after a Create, after
// each Update (typed and metadata-only informers), and after a Delete.
func TestEnvtestWaitForResourceVersionThenGetReadsYourWrite(t *testing.T) {
	requireEnv(t)
	ns := createNamespace(t, "ryw-helper")
	c := startEnvCache(t, crcache.Options{})
	ctx := envCtx(t)
	if err := c.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns)); err != nil {
		t.Fatal(err) // starts the informer, so the waits below measure the watch only
	}

	for i := range 5 {
		cm := newConfigMap(ns, fmt.Sprintf("cm-%d", i), nil, map[string]string{"v": "0"})
		if err := k8sClient.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitForResourceVersion(ctx, cm); err != nil {
			t.Fatalf("after Create: %v", err)
		}
		var got corev1.ConfigMap
		if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil || got.ResourceVersion != cm.ResourceVersion {
			t.Fatalf("Get after Create: %v, rv %q, want %q", err, got.ResourceVersion, cm.ResourceVersion)
		}

		cm.Data["v"] = "1"
		if err := k8sClient.Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitForResourceVersion(ctx, cm); err != nil {
			t.Fatalf("after Update: %v", err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil ||
			got.ResourceVersion != cm.ResourceVersion || got.Data["v"] != "1" {
			t.Fatalf("Get after Update: %v, rv %q data %v, want rv %q data v=1", err, got.ResourceVersion, got.Data,
				cm.ResourceVersion)
		}

		meta := &metav1.PartialObjectMetadata{}
		meta.SetGroupVersionKind(gvkConfigMap)
		meta.SetNamespace(ns)
		meta.SetName(cm.Name)
		meta.SetResourceVersion(cm.ResourceVersion)
		if err := c.WaitForResourceVersion(ctx, meta); err != nil {
			t.Fatalf("metadata-only: %v", err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(cm), meta); err != nil || meta.ResourceVersion != cm.ResourceVersion {
			t.Fatalf("metadata-only Get: %v, rv %q, want %q", err, meta.ResourceVersion, cm.ResourceVersion)
		}

		if err := k8sClient.Delete(ctx, cm); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitForDeletion(ctx, cm); err != nil {
			t.Fatalf("after Delete: %v", err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &got); !apierrors.IsNotFound(err) {
			t.Fatalf("Get after WaitForDeletion: %v, want NotFound", err)
		}
	}
}
