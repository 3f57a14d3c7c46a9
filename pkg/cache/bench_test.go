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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Benchmarks of the cache (speed and memory targets live here, never in tests):
//
//	go test ./pkg/cache -run '^$' -bench 'ListByLabel|Get20kPods|StoredPodHeap' -benchtime 2s
//
// BenchmarkListByLabel20kPods compares a label-selected List answered from a
// "label:app" index with controller-runtime's cache, which scans; both caches run
// in-process on the same 20k pods. Its "interleaved" sub-benchmarks alternate the two
// and report the ratio as speedup-x. BenchmarkStoredPodHeap10k measures the heap that
// cached pods hold, as decoded from protobuf, with managedFields stripped, and with
// strings interned as well.

const (
	benchPods       = 20000
	benchNamespaces = 20
	benchApps       = 200 // 100 pods per app label value
)

// benchPod is a pod of app app-<i%benchApps> in namespace ns-<i/benchApps%benchNamespaces>:
// each app has 100 pods, 5 in each namespace.
func benchPod(i int) *corev1.Pod {
	app := fmt.Sprintf("app-%d", i%benchApps)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: fmt.Sprintf("ns-%d", i/benchApps%benchNamespaces), Name: fmt.Sprintf("%s-%d", app, i),
			ResourceVersion: "5",
			Labels:          map[string]string{appLabel: app, tierLabel: "backend", "pod-template-hash": "7d4b9c"},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.example/" + app + ":1.0"}}},
	}
}

// crCacheOn returns controller-runtime's cache whose informers (client-go's) list
// *objects and then watch with watchFn (nil: a watch that delivers nothing): its reader
// on the same store as ours.
func crCacheOn(b *testing.B, objects *[]kruntime.Object,
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) crcache.Cache {
	b.Helper()
	if watchFn == nil {
		watchFn = func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return watch.NewRaceFreeFake(), nil
		}
	}
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (kruntime.Object, error) {
			items := make([]corev1.Pod, len(*objects))
			for i, obj := range *objects {
				items[i] = *obj.(*corev1.Pod).DeepCopy()
			}
			return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}, Items: items}, nil
		},
		WatchFuncWithContext: watchFn,
	}
	c, err := crcache.New(&rest.Config{Host: unreachableHost}, crcache.Options{
		Mapper: testMapper(),
		NewInformer: func(_ toolscache.ListerWatcher, obj kruntime.Object, resync time.Duration,
			indexers toolscache.Indexers) toolscache.SharedIndexInformer {
			return toolscache.NewSharedIndexInformer(listOnly{lw}, obj, resync, indexers)
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = c.Start(ctx); close(done) }()
	b.Cleanup(func() { cancel(); <-done })
	if !c.WaitForCacheSync(ctx) { // waits for Start
		b.Fatal("controller-runtime's cache did not start")
	}
	return c
}

// listOnly tells client-go's Reflector to LIST rather than stream the initial list
// (the fake watch cannot stream).
type listOnly struct{ *toolscache.ListWatch }

func (listOnly) IsWatchListSemanticsUnSupported() bool { return true }

const (
	benchDeltacache        = "deltacache"
	benchControllerRuntime = "controller-runtime"
	// benchDeltacacheNoIndex is deltacache as dcache.New builds it (compact storage,
	// no label index) with its adaptive indexes off: every List scans, as the first
	// scans of a key do before an adaptive index is built
	// (BenchmarkListByLabelAdaptive20kPods measures the default once it is).
	benchDeltacacheNoIndex = "deltacache-no-index"
)

// benchReader returns a started cache of impl holding benchPods pods, synced, whose
// store is the only holder of the pods left (so the heap, and the garbage collector's
// work, is that of one cache, as in an operator).
func benchReader(b *testing.B, impl string) client.Reader {
	b.Helper()
	objects := latencyObjects(false)
	var reader client.Reader
	release := func() {}
	switch impl {
	case benchDeltacache, benchDeltacacheNoIndex:
		api := newFakeAPI(b, objects...)
		var options []Option
		if impl == benchDeltacache {
			options = append(options, WithLabelIndexes(appLabel))
		} else {
			options = append(options, WithoutAdaptiveIndexes())
		}
		c := newTestCache(b, api, crcache.Options{}, options...)
		startCache(b, c)
		reader = c
		release = func() {
			api.mu.Lock()
			api.objects = nil
			api.mu.Unlock()
		}
	default:
		reader = crCacheOn(b, &objects, nil)
	}
	if err := reader.List(context.Background(), &corev1.PodList{}, client.Limit(1)); err != nil {
		b.Fatal(err) // creates the informer and waits for its initial list
	}
	release()
	clear(objects)
	runtime.GC()
	return reader
}

// interleaved calls ours and theirs alternately, once each per b.Loop iteration, in one
// process, so that a ratio holds on a busy machine (each side then also pays for the
// other's garbage). It times each call and counts the bytes each allocates
// (runtime.ReadMemStats, which stops the world, outside the timed spans), and reports
// per call: deltacache-ns/<unit>, controller-runtime-ns/<unit>, speedup-x
// (controller-runtime's time ÷ deltacache's: above 1, deltacache is faster),
// deltacache-B/<unit>, controller-runtime-B/<unit> and alloc-ratio-x (deltacache's
// bytes ÷ controller-runtime's). It returns the number of calls of each.
func interleaved(b *testing.B, unit string, ours, theirs func() error) int {
	var ourTime, theirTime time.Duration
	var ourBytes, theirBytes uint64
	var m runtime.MemStats
	calls := 0
	for b.Loop() {
		runtime.ReadMemStats(&m)
		startBytes := m.TotalAlloc
		start := time.Now()
		if err := ours(); err != nil {
			b.Fatal(err)
		}
		ourTime += time.Since(start)
		runtime.ReadMemStats(&m)
		midBytes := m.TotalAlloc
		mid := time.Now()
		if err := theirs(); err != nil {
			b.Fatal(err)
		}
		theirTime += time.Since(mid)
		runtime.ReadMemStats(&m)
		ourBytes += midBytes - startBytes
		theirBytes += m.TotalAlloc - midBytes
		calls++
	}
	n := float64(calls)
	b.ReportMetric(float64(ourTime.Nanoseconds())/n, "deltacache-ns/"+unit)
	b.ReportMetric(float64(theirTime.Nanoseconds())/n, "controller-runtime-ns/"+unit)
	b.ReportMetric(float64(theirTime)/float64(ourTime), "speedup-x")
	b.ReportMetric(float64(ourBytes)/n, "deltacache-B/"+unit)
	b.ReportMetric(float64(theirBytes)/n, "controller-runtime-B/"+unit)
	b.ReportMetric(float64(ourBytes)/float64(theirBytes), "alloc-ratio-x")
	return calls
}

func BenchmarkListByLabel20kPods(b *testing.B) {
	const benchApp = "app-7" // the app every case lists
	for _, bc := range []struct {
		name string
		opts []client.ListOption
		want int
	}{
		{"all-namespaces", []client.ListOption{client.MatchingLabels{appLabel: benchApp}}, benchPods / benchApps},
		{"one-namespace", []client.ListOption{client.InNamespace("ns-7"), client.MatchingLabels{appLabel: benchApp}},
			benchPods / benchApps / benchNamespaces},
		{"all-namespaces-no-deep-copy",
			[]client.ListOption{client.MatchingLabels{appLabel: benchApp}, client.UnsafeDisableDeepCopy},
			benchPods / benchApps},
	} {
		for _, impl := range []string{benchDeltacache, benchControllerRuntime} {
			b.Run(bc.name+"/"+impl, func(b *testing.B) {
				reader := benchReader(b, impl)
				ctx := context.Background()
				var list corev1.PodList
				if err := reader.List(ctx, &list, bc.opts...); err != nil || len(list.Items) != bc.want {
					b.Fatalf("List: %v, %d items, want %d", err, len(list.Items), bc.want)
				}
				b.ReportAllocs()
				for b.Loop() {
					if err := reader.List(ctx, &list, bc.opts...); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		// Both caches in one process, alternating Lists (see interleaved).
		b.Run(bc.name+"/interleaved", func(b *testing.B) {
			ours, theirs := benchReader(b, benchDeltacache), benchReader(b, benchControllerRuntime)
			ctx := context.Background()
			var list corev1.PodList
			interleaved(b, "list",
				func() error { return ours.List(ctx, &list, bc.opts...) },
				func() error { return theirs.List(ctx, &list, bc.opts...) })
		})
	}
}

// BenchmarkListByLabel20kPodsNoIndex compares label-selected Lists of deltacache with
// nothing configured (dcache.New's defaults: compact storage, no label index, so every
// candidate of the namespace or of the kind is checked against the selector) with
// controller-runtime's cache, alternating the two in one process (see
// BenchmarkListByLabel20kPods's "interleaved"). Besides the time ratio (speedup-x,
// above 1: deltacache faster) it reports the bytes each side allocates per List
// (deltacache-B/list, controller-runtime-B/list) and their ratio (alloc-ratio-x,
// deltacache ÷ controller-runtime: below 1, deltacache allocates less).
func BenchmarkListByLabel20kPodsNoIndex(b *testing.B) {
	appIn := mustSelector(b, "app in (app-7,app-8)")
	appNot := mustSelector(b, "app!=app-7")
	appNotIn := mustSelector(b, "app notin (app-7,app-8),tier")
	for _, bc := range []struct {
		name string
		opts []client.ListOption
		want int
	}{
		{"all-namespaces", []client.ListOption{client.MatchingLabels{appLabel: "app-7"}}, benchPods / benchApps},
		{"one-namespace", []client.ListOption{client.InNamespace("ns-7"), client.MatchingLabels{appLabel: "app-7"}},
			benchPods / benchApps / benchNamespaces},
		{"in-all-namespaces", []client.ListOption{client.MatchingLabelsSelector{Selector: appIn}},
			2 * benchPods / benchApps},
		{"not-equal-one-namespace", []client.ListOption{client.InNamespace("ns-7"),
			client.MatchingLabelsSelector{Selector: appNot}}, benchPods/benchNamespaces - benchPods/benchApps/benchNamespaces},
		{"notin-limit-all-namespaces", []client.ListOption{client.MatchingLabelsSelector{Selector: appNotIn},
			client.Limit(100)}, 100},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ours, theirs := benchReader(b, benchDeltacacheNoIndex), benchReader(b, benchControllerRuntime)
			ctx := context.Background()
			var list corev1.PodList
			for _, r := range []client.Reader{ours, theirs} {
				if err := r.List(ctx, &list, bc.opts...); err != nil || len(list.Items) != bc.want {
					b.Fatalf("List: %v, %d items, want %d", err, len(list.Items), bc.want)
				}
			}
			interleaved(b, "list",
				func() error { return ours.List(ctx, &list, bc.opts...) },
				func() error { return theirs.List(ctx, &list, bc.opts...) })
		})
	}
}

// mustSelector parses a label selector.
func mustSelector(b *testing.B, s string) labels.Selector {
	b.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		b.Fatal(err)
	}
	return sel
}

// BenchmarkGet20kPods measures a Get of one pod from a synced informer of 20k pods
// (compact storage: the stored bytes decoded into the caller's object), with and
// without UnsafeDisableDeepCopy: the read path's lookup, wait check and
// decode, without the informer's creation. (Only the typed informer holds the pods:
// benchReader's fake API forgets them once it has synced.)
func BenchmarkGet20kPods(b *testing.B) {
	key := client.ObjectKey{Namespace: "ns-0", Name: "app-7-7"}
	reader := benchReader(b, benchDeltacache)
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		out  func() client.Object
		opts []client.GetOption
	}{
		{"typed", func() client.Object { return &corev1.Pod{} }, nil},
		{"typed-no-deep-copy", func() client.Object { return &corev1.Pod{} },
			[]client.GetOption{client.UnsafeDisableDeepCopy}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			out := bc.out()
			if err := reader.Get(ctx, key, out, bc.opts...); err != nil || out.GetName() != key.Name {
				b.Fatalf("Get: %v, name %q", err, out.GetName())
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := reader.Get(ctx, key, out, bc.opts...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// decodedPods returns n pods decoded from protobuf, as an informer receives them:
// every string of every pod is its own allocation.
func decodedPods(b *testing.B, encoded [][]byte, decoder kruntime.Decoder) []*corev1.Pod {
	pods := make([]*corev1.Pod, len(encoded))
	for i, data := range encoded {
		obj, _, err := decoder.Decode(data, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		pods[i] = obj.(*corev1.Pod)
	}
	return pods
}

// realisticPod is pod i of a Deployment: labels, an owner, managedFields of the
// controller manager and the kubelet, one container with resources, a status.
func realisticPod(i int) *corev1.Pod {
	const hash = "7d4b9c6f5"
	name := fmt.Sprintf("web-%s-%05d", hash, i)
	created := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, GenerateName: "web-" + hash + "-", Namespace: "shop",
			UID: types.UID(fmt.Sprintf("0f6c2a1e-4b7d-4c3e-9a55-%012d", i)), ResourceVersion: fmt.Sprint(1000 + i),
			CreationTimestamp: created,
			Labels: map[string]string{
				appLabel: webApp, "pod-template-hash": hash, "app.kubernetes.io/part-of": "shop", tierLabel: "frontend",
			},
			Annotations: map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-01-02T03:00:00Z"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-" + hash,
				UID: "5e1f7c1d-0d3b-4f7e-8a1c-2b9d6e4f3a21", Controller: new(true), BlockOwnerDeletion: new(true),
			}},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
					Time: &created, FieldsType: fieldsV1Type, FieldsV1: metav1.NewFieldsV1(
						`{"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/restartedAt":{}},"f:generateName":{},` +
							`"f:labels":{".":{},"f:app":{},"f:app.kubernetes.io/part-of":{},"f:pod-template-hash":{},"f:tier":{}},` +
							`"f:ownerReferences":{".":{},"k:{\"uid\":\"5e1f7c1d-0d3b-4f7e-8a1c-2b9d6e4f3a21\"}":{}}},` +
							`"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},` +
							`"f:ports":{".":{},"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":` +
							`{".":{},"f:containerPort":{},"f:protocol":{}}},` +
							`"f:resources":{".":{},"f:limits":{".":{},"f:memory":{}},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}},` +
							`"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},` +
							`"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}`)},
				{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Subresource: "status",
					Time: &created, FieldsType: fieldsV1Type, FieldsV1: metav1.NewFieldsV1(
						`{"f:status":{"f:conditions":{"k:{\"type\":\"ContainersReady\"}":{".":{},"f:lastProbeTime":{},` +
							`"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Initialized\"}":{".":{},` +
							`"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Ready\"}":` +
							`{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},` +
							`"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},` +
							`"k:{\"ip\":\"10.244.1.7\"}":{".":{},"f:ip":{}}},"f:startTime":{}}}`)},
			},
		},
		Spec: corev1.PodSpec{
			NodeName: fmt.Sprintf("node-%d", i%50),
			Containers: []corev1.Container{{
				Name: webApp, Image: "registry.example/shop/web:1.4.2",
				Ports: []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"),
						corev1.ResourceMemory: resource.MustParse("128Mi")},
					Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
				},
			}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: fmt.Sprintf("10.244.%d.%d", i/250, i%250)},
	}
}

func BenchmarkStoredPodHeap10k(b *testing.B) {
	const n = 10000
	codec := protobuf.NewSerializer(clientgoscheme.Scheme, clientgoscheme.Scheme)
	encoded := make([][]byte, n)
	for i := range encoded {
		pod := realisticPod(i)
		pod.SetGroupVersionKind(gvkPod)
		data, err := kruntime.Encode(codec, pod)
		if err != nil {
			b.Fatal(err)
		}
		encoded[i] = data
	}
	for _, bc := range []struct {
		name    string
		options []Option
		raw     bool
	}{
		{"as-decoded", nil, true},
		{"managedFields-stripped", []Option{WithoutStringInterning()}, false},
		{"stripped-and-interned", nil, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := newTestCache(b, newFakeAPI(b), crcache.Options{}, bc.options...)
			transform := c.storeTransform(gvkPod, nil, nil, false)
			var bytesPerPod float64
			for b.Loop() {
				before := heapInUse()
				pods := decodedPods(b, encoded, codec)
				if !bc.raw {
					for _, pod := range pods {
						if _, err := transform(pod); err != nil {
							b.Fatal(err)
						}
					}
				}
				bytesPerPod = float64(heapInUse()-before) / n
				runtime.KeepAlive(pods)
			}
			b.ReportMetric(bytesPerPod, "heap-B/pod")
		})
	}
}

// heapInUse returns the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// benchAdaptiveReader is benchReader's deltacache with no option at all, whose
// adaptive "label:app" index has been triggered (one List across 20k pods is a large
// scan) and built.
func benchAdaptiveReader(b *testing.B) client.Reader {
	b.Helper()
	objects := make([]kruntime.Object, benchPods)
	for i := range objects {
		objects[i] = benchPod(i)
	}
	api := newFakeAPI(b, objects...)
	c := newTestCache(b, api, crcache.Options{})
	startCache(b, c)
	ctx := context.Background()
	if err := c.List(ctx, &corev1.PodList{}, client.MatchingLabels{appLabel: "app-0"}); err != nil {
		b.Fatal(err) // creates the informer, waits for its initial list, triggers the build
	}
	e, _, _ := c.informers.peek(entryKey{gvk: gvkPod, shape: shapeTyped})
	deadline := time.Now().Add(time.Minute)
	for len(c.adaptive.readyKeys(e)) == 0 {
		if time.Now().After(deadline) {
			b.Fatal("the adaptive index of app was not built")
		}
		time.Sleep(10 * time.Millisecond)
	}
	api.mu.Lock()
	api.objects = nil
	api.mu.Unlock()
	clear(objects)
	runtime.GC()
	return c
}

// BenchmarkListByLabelAdaptive20kPods is BenchmarkListByLabel20kPods's interleaved
// comparison for a deltacache configured with nothing (dcache.New), once its adaptive
// "label:app" index is built: issue #19's target is ≤ 0.2× controller-runtime's time
// (the inverse of speedup-x, see interleaved: speedup-x ≥ 5).
func BenchmarkListByLabelAdaptive20kPods(b *testing.B) {
	const benchApp = "app-7"
	for _, bc := range []struct {
		name string
		opts []client.ListOption
	}{
		{"all-namespaces", []client.ListOption{client.MatchingLabels{appLabel: benchApp}}},
		{"one-namespace", []client.ListOption{client.InNamespace("ns-7"), client.MatchingLabels{appLabel: benchApp}}},
	} {
		b.Run(bc.name+"/interleaved", func(b *testing.B) {
			ours, theirs := benchAdaptiveReader(b), benchReader(b, benchControllerRuntime)
			ctx := context.Background()
			var list corev1.PodList
			lists := interleaved(b, "list",
				func() error { return ours.List(ctx, &list, bc.opts...) },
				func() error { return theirs.List(ctx, &list, bc.opts...) })
			if got := ours.(*Cache).ListStats(gvkPod); got.AdaptiveLabelIndex < uint64(lists) {
				b.Fatalf("%d of %d Lists used the adaptive index", got.AdaptiveLabelIndex, lists)
			}
		})
	}
}
