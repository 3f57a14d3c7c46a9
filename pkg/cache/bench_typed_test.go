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
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	demov1alpha1 "github.com/deltacache/deltacache/api/v1alpha1"
	"github.com/deltacache/deltacache/pkg/informer"
	"github.com/deltacache/deltacache/pkg/informer/codec"
)

// Benchmarks of a typed CRD kind (the demo App) held by deltacache with nothing
// configured (the Plan codec) against controller-runtime's cache (decoded, deep
// copied on every read), both in-process on the same 2,000 Apps (100 in each of
// 20 namespaces), each App as a client decodes it from the server: its labels,
// annotations, finalizer, status conditions and the managedFields of its two
// writers.
//
//	go test ./pkg/cache -run '^$' -bench 'TypedApps' -benchtime 2s

const (
	benchAppsTotal = 2000
	benchAppsPerNS = 100
)

var gvkApp = demov1alpha1.GroupVersion.WithKind("App")

func benchApp(i int) *demov1alpha1.App {
	created := metav1.NewTime(time.Unix(1782907200+int64(i), 0)) // Local, as JSON decodes
	name := fmt.Sprintf("app-%d", i)
	fields := func(s string) *metav1.FieldsV1 { return &metav1.FieldsV1{Raw: []byte(s)} }
	return &demov1alpha1.App{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: fmt.Sprintf("ns-%d", i/benchAppsPerNS), Name: name,
			UID:             types.UID(fmt.Sprintf("8e4c1d2a-6f7b-4c3e-9a1d-%012d", i)),
			ResourceVersion: fmt.Sprintf("%d", 100000+i), Generation: 3, CreationTimestamp: created,
			Labels:      map[string]string{appLabel: name, tierLabel: "frontend", "team": "payments"},
			Annotations: map[string]string{"deltacache.io/owner": "platform"},
			Finalizers:  []string{"demo.deltacache.io/cleanup"},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "demo.deltacache.io/v1alpha1",
					Time: &created, FieldsType: "FieldsV1", FieldsV1: fields(`{"f:metadata":{"f:labels":{".":{},"f:app":{},` +
						`"f:team":{},"f:tier":{}}},"f:spec":{".":{},"f:minReady":{},"f:selector":{}}}`)},
				{Manager: "demo-operator", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "demo.deltacache.io/v1alpha1",
					Time: &created, FieldsType: "FieldsV1", Subresource: "status", FieldsV1: fields(`{"f:status":{".":{},` +
						`"f:conditions":{".":{},"k:{\"type\":\"Available\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},` +
						`"f:observedGeneration":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:nodes":{},"f:observedGeneration":{},` +
						`"f:phases":{".":{},"f:Pending":{},"f:Running":{}},"f:pods":{},"f:ready":{}}}`)},
			},
		},
		Spec: demov1alpha1.AppSpec{Selector: name, MinReady: 2},
		Status: demov1alpha1.AppStatus{ObservedGeneration: 3, Pods: 5, Ready: 4, Nodes: 3,
			Phases: map[string]int32{"Running": 4, "Pending": 1},
			Conditions: []metav1.Condition{{Type: "Available", Status: metav1.ConditionTrue, ObservedGeneration: 3,
				LastTransitionTime: created, Reason: "MinReady", Message: "4 of 5 pods ready"}}},
	}
}

// appListWatch serves *apps as a LIST (deep copies, no TypeMeta, as a typed
// client decodes them) and a watch that sends nothing.
func appListWatch(apps *[]*demov1alpha1.App) listOnly {
	return listOnly{&toolscache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (kruntime.Object, error) {
			items := make([]demov1alpha1.App, len(*apps))
			for i, a := range *apps {
				items[i] = *a.DeepCopy()
			}
			return &demov1alpha1.AppList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}, Items: items}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return watch.NewRaceFreeFake(), nil
		},
	}}
}

func appBenchOptions() crcache.Options {
	scheme := kruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := demov1alpha1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	mapper := apimeta.NewDefaultRESTMapper(nil)
	mapper.Add(gvkApp, apimeta.RESTScopeNamespace)
	return crcache.Options{Scheme: scheme, Mapper: mapper}
}

// benchAppReader returns a synced cache of impl holding benchAppsTotal Apps,
// the Apps it was given released.
func benchAppReader(b *testing.B, impl string) client.Reader {
	b.Helper()
	apps := make([]*demov1alpha1.App, benchAppsTotal)
	for i := range apps {
		apps[i] = benchApp(i)
	}
	opts := appBenchOptions()
	var reader client.Reader
	switch impl {
	case benchDeltacache:
		c, err := newCache(&rest.Config{Host: unreachableHost}, opts, Config{})
		if err != nil {
			b.Fatal(err)
		}
		c.listWatcher = func(entryKey, *apimeta.RESTMapping, bool, informer.ListWatchOptions, *codec.WireCapture) (toolscache.ListerWatcher, error) {
			return appListWatch(&apps), nil
		}
		startCache(b, c)
		reader = c
	default:
		opts.NewInformer = func(_ toolscache.ListerWatcher, obj kruntime.Object, resync time.Duration,
			indexers toolscache.Indexers) toolscache.SharedIndexInformer {
			return toolscache.NewSharedIndexInformer(appListWatch(&apps), obj, resync, indexers)
		}
		c, err := crcache.New(&rest.Config{Host: unreachableHost}, opts)
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = c.Start(ctx); close(done) }()
		b.Cleanup(func() { cancel(); <-done })
		if !c.WaitForCacheSync(ctx) {
			b.Fatal("controller-runtime's cache did not start")
		}
		reader = c
	}
	var list demov1alpha1.AppList
	if err := reader.List(context.Background(), &list); err != nil || len(list.Items) != benchAppsTotal {
		b.Fatalf("List: %v, %d items", err, len(list.Items)) // creates the informer and waits for its list
	}
	apps = nil
	runtime.GC()
	return reader
}

// BenchmarkTypedApps alternates deltacache's and controller-runtime's reads in
// one process: a Get, and a List of one namespace (100 Apps). speedup-x is
// controller-runtime's time ÷ deltacache's (above 1: deltacache faster);
// alloc-ratio-x is deltacache's bytes allocated ÷ controller-runtime's.
func BenchmarkTypedApps(b *testing.B) {
	ours, theirs := benchAppReader(b, benchDeltacache), benchAppReader(b, benchControllerRuntime)
	key := client.ObjectKey{Namespace: "ns-7", Name: "app-777"}
	for _, bc := range []struct {
		name string
		read func(r client.Reader) error
	}{
		{"get", func(r client.Reader) error {
			var app demov1alpha1.App
			if err := r.Get(context.Background(), key, &app); err != nil || app.Name != key.Name {
				return fmt.Errorf("Get: %v, name %q", err, app.Name)
			}
			return nil
		}},
		{"list-one-namespace", func(r client.Reader) error {
			var list demov1alpha1.AppList
			if err := r.List(context.Background(), &list, client.InNamespace("ns-7")); err != nil || len(list.Items) != benchAppsPerNS {
				return fmt.Errorf("List: %v, %d items", err, len(list.Items))
			}
			return nil
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			interleaved(b, "read", func() error { return bc.read(ours) }, func() error { return bc.read(theirs) })
		})
	}
}

// BenchmarkTypedAppsHeap measures the heap each cache holds for its 2,000
// Apps once synced (the Apps it listed released): the whole cache, store,
// keys and indexes included. heap-ratio-x is deltacache's ÷
// controller-runtime's.
func BenchmarkTypedAppsHeap(b *testing.B) {
	var ours, theirs float64
	for b.Loop() {
		for _, impl := range []string{benchDeltacache, benchControllerRuntime} {
			before := heapInUse()
			r := benchAppReader(b, impl)
			perApp := float64(heapInUse()-before) / benchAppsTotal
			runtime.KeepAlive(r)
			if impl == benchDeltacache {
				ours = perApp
			} else {
				theirs = perApp
			}
		}
	}
	b.ReportMetric(ours, "deltacache-heap-B/app")
	b.ReportMetric(theirs, "controller-runtime-heap-B/app")
	b.ReportMetric(ours/theirs, "heap-ratio-x")
}
