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
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dcache "github.com/deltacache/deltacache/pkg/cache"
)

// acceptRecorder is an http.RoundTripper that records the Accept headers of the GET
// requests (lists and watches) of every path before passing them on.
type acceptRecorder struct {
	next http.RoundTripper

	mu     sync.Mutex
	accept map[string][]string
}

func (r *acceptRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet {
		r.mu.Lock()
		r.accept[req.URL.Path] = append(r.accept[req.URL.Path], req.Header.Get("Accept"))
		r.mu.Unlock()
	}
	return r.next.RoundTrip(req)
}

func (r *acceptRecorder) get(path string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.accept[path])
}

// TestEnvtestBuiltInTypesTravelAsProtobufCRDsAsJSON records the Accept header of the
// informers' list and watch requests: typed built-in kinds ask for protobuf, a CRD
// (unstructured) for JSON, metadata-only informers for PartialObjectMetadata.
func TestEnvtestBuiltInTypesTravelAsProtobufCRDsAsJSON(t *testing.T) {
	requireEnv(t)
	ns := createNamespace(t, "proto")
	create(t, newConfigMap(ns, "cm", nil, map[string]string{"k": "v"}))
	base, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	recorder := &acceptRecorder{next: base.Transport, accept: map[string][]string{}}
	c := startEnvCache(t, crcache.Options{HTTPClient: &http.Client{Transport: recorder, Timeout: base.Timeout}})
	ctx := envCtx(t)

	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cm"}, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["k"] != "v" {
		t.Errorf("config map decoded from protobuf: data %v", cm.Data)
	}
	widgets := &unstructured.UnstructuredList{}
	widgets.SetGroupVersionKind(widgetGVK.GroupVersion().WithKind("WidgetList"))
	if err := c.List(ctx, widgets); err != nil {
		t.Fatal(err)
	}
	pods := &metav1.PartialObjectMetadataList{}
	pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := c.List(ctx, pods); err != nil {
		t.Fatal(err)
	}

	// Each informer lists (a paginated LIST or a WatchList stream) and watches with
	// the same content type.
	for path, want := range map[string]string{
		"/api/v1/configmaps":                  "application/vnd.kubernetes.protobuf",
		"/apis/test.deltacache.io/v1/widgets": "application/json",
		"/api/v1/pods":                        "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata",
	} {
		accepts := recorder.get(path)
		if len(accepts) == 0 {
			t.Errorf("no request for %s", path)
		}
		for _, got := range accepts {
			if !strings.HasPrefix(got, want) {
				t.Errorf("%s: Accept %q, want it to start with %q", path, got, want)
			}
		}
	}
}

// TestEnvtestManagedFieldsAreStrippedUnlessKept reads an object the API server gave
// managedFields: the default cache holds none, WithKeepManagedFields keeps them.
func TestEnvtestManagedFieldsAreStrippedUnlessKept(t *testing.T) {
	requireEnv(t)
	ns := createNamespace(t, "managed")
	create(t, newConfigMap(ns, "cm", map[string]string{appLabel: "x"}, nil))
	ctx := envCtx(t)
	key := client.ObjectKey{Namespace: ns, Name: "cm"}
	var direct corev1.ConfigMap
	if err := k8sClient.Get(ctx, key, &direct); err != nil || len(direct.ManagedFields) == 0 {
		t.Fatalf("the API server returned no managedFields (%v): nothing to strip", err)
	}

	for _, tc := range []struct {
		name    string
		options []dcache.Option
		want    int
	}{
		{"default", nil, 0},
		{"WithKeepManagedFields", []dcache.Option{dcache.WithKeepManagedFields()}, len(direct.ManagedFields)},
	} {
		c := startEnvCache(t, crcache.Options{}, tc.options...)
		var cm corev1.ConfigMap
		if err := c.Get(ctx, key, &cm); err != nil {
			t.Fatal(err)
		}
		if len(cm.ManagedFields) != tc.want {
			t.Errorf("%s: %d managedFields, want %d", tc.name, len(cm.ManagedFields), tc.want)
		}
		meta := &metav1.PartialObjectMetadata{}
		meta.SetGroupVersionKind(gvkConfigMap)
		if err := c.Get(ctx, key, meta); err != nil {
			t.Fatal(err)
		}
		if len(meta.ManagedFields) != tc.want {
			t.Errorf("%s, metadata-only: %d managedFields, want %d", tc.name, len(meta.ManagedFields), tc.want)
		}
	}
}
