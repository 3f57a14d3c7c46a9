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

package bench

import (
	"context"
	"math"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

func TestLayoutOf20kPodsHas100PodsPerAppAndNode(t *testing.T) {
	l := NewLayout(20_000)
	if l.Namespaces != 20 || l.Apps != 200 || l.Nodes != 200 {
		t.Fatalf("layout %+v, want 20 namespaces, 200 apps, 200 nodes", l)
	}
	perNode := map[string]int{}
	perApp := map[string]int{}
	perNamespace := map[string]int{}
	keys := map[string]bool{}
	for i := range l.Pods {
		p := l.NewPod(i)
		perNode[p.Spec.NodeName]++
		perApp[p.Namespace+"/"+p.Labels["app"]]++
		perNamespace[p.Namespace]++
		keys[p.Namespace+"/"+p.Name] = true
	}
	if len(keys) != l.Pods {
		t.Fatalf("%d distinct keys, want %d", len(keys), l.Pods)
	}
	if len(perNode) != 200 || perNode[l.NodeName(7)] != 100 || podsOfNode(l, 7) != 100 {
		t.Errorf("nodes: %d, node 7 has %d (podsOfNode %d); want 200 nodes of 100", len(perNode),
			perNode[l.NodeName(7)], podsOfNode(l, 7))
	}
	// An app lives in one namespace: 200 (namespace, app) pairs of 100 pods.
	if len(perApp) != 200 || perApp[l.AppNamespace(7)+"/"+l.AppName(7)] != 100 || l.PodsOfApp(7) != 100 {
		t.Errorf("apps: %d pairs, app 7 has %d; want 200 pairs of 100", len(perApp),
			perApp[l.AppNamespace(7)+"/"+l.AppName(7)])
	}
	if len(perNamespace) != 20 || perNamespace[l.NamespaceName(3)] != 1000 || l.PodsPerNamespace(3) != 1000 {
		t.Errorf("namespaces: %d, namespace 3 has %d (PodsPerNamespace %d); want 20 of 1000",
			len(perNamespace), perNamespace[l.NamespaceName(3)], l.PodsPerNamespace(3))
	}
}

func TestServerPodCarriesManagedFieldsAndDefaults(t *testing.T) {
	p := NewLayout(100).ServerPod(5, "42")
	if p.ResourceVersion != "42" || p.UID == "" || len(p.ManagedFields) != 1 ||
		p.ManagedFields[0].Manager != FieldManager || len(p.ManagedFields[0].FieldsV1.GetRawBytes()) < 500 {
		t.Fatalf("server pod metadata %+v lacks rv, uid or managedFields", p.ObjectMeta)
	}
	c := p.Spec.Containers[0]
	if len(c.Args) != 3 || len(c.Env) != 3 || len(c.Ports) != 1 || len(c.Resources.Requests) != 2 ||
		c.ImagePullPolicy != corev1.PullIfNotPresent || p.Spec.SchedulerName != corev1.DefaultSchedulerName ||
		len(p.Annotations) != 2 || len(p.Labels) != 3 || p.Spec.NodeName == "" {
		t.Fatalf("server pod lacks the realistic body: %+v", p)
	}
}

func TestMemoryListerWatcherPaginatesWithFreshPages(t *testing.T) {
	pods := ServerPods(NewLayout(5))
	lw := NewMemoryListerWatcher(pods, "9")
	var names []string
	opts := metav1.ListOptions{Limit: 2}
	for pages := 1; ; pages++ {
		obj, err := lw.List(opts)
		if err != nil {
			t.Fatal(err)
		}
		list := obj.(*corev1.PodList)
		if list.ResourceVersion != "9" {
			t.Fatalf("page rv %q, want 9", list.ResourceVersion)
		}
		for i := range list.Items {
			if &list.Items[i] == &pods[len(names)] {
				t.Fatal("page shares the served array")
			}
			names = append(names, list.Items[i].Name)
		}
		if list.Continue == "" {
			if pages != 3 {
				t.Fatalf("%d pages, want 3", pages)
			}
			break
		}
		opts.Continue = list.Continue
	}
	if len(names) != 5 || names[4] != pods[4].Name {
		t.Fatalf("listed %v, want the 5 pods in order", names)
	}
}

func TestMemoryListerWatcherWatchDeliversSentEventsUntilStopped(t *testing.T) {
	lw := NewMemoryListerWatcher(nil, "1")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w, err := lw.Watch(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opened, err := lw.NextWatch(ctx, 0)
	if err != nil || opened != w {
		t.Fatalf("NextWatch = %v, %v; want the opened watch", opened, err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	go func() { opened.Send(watch.Event{Type: watch.Added, Object: pod}) }()
	if e := <-w.ResultChan(); e.Type != watch.Added || e.Object != pod {
		t.Fatalf("received %v, want the sent ADDED", e)
	}
	w.Stop()
	if opened.Send(watch.Event{Type: watch.Added, Object: pod}) {
		t.Fatal("Send on a stopped watch reported delivery")
	}
}

func TestMemoryAPIServesPagedListsAndWatchList(t *testing.T) {
	l := NewLayout(7)
	api, err := NewMemoryAPI(ServerPods(l), "8")
	if err != nil {
		t.Fatal(err)
	}
	cfg := api.Config()
	cfg.ContentType = runtime.ContentTypeProtobuf
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 4 || list.Continue != "4" || list.ResourceVersion != "8" ||
		len(list.Items[0].ManagedFields) != 1 {
		t.Fatalf("first page: %d items, continue %q, rv %q", len(list.Items), list.Continue, list.ResourceVersion)
	}
	w, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{SendInitialEvents: new(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var added []string
	for e := range w.ResultChan() {
		if e.Type == watch.Bookmark {
			p := e.Object.(*corev1.Pod)
			if p.ResourceVersion != "8" || p.Annotations[metav1.InitialEventsAnnotationKey] != "true" {
				t.Fatalf("bookmark %+v, want rv 8 and the initial-events-end annotation", p.ObjectMeta)
			}
			break
		}
		added = append(added, e.Object.(*corev1.Pod).Name)
	}
	if len(added) != 7 {
		t.Fatalf("%d initial events before the bookmark, want 7", len(added))
	}
}

// The workloads run end to end at tiny sizes with each contender; the figures are not
// checked (tests never time anything), only that every one is produced.
func TestPipelineWorkloadsProduceEveryFigure(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, c := range []Contender{Deltacache, DeltacacheCompact, ClientGo} {
		for _, run := range []struct {
			name string
			figs []string
			fn   func() (Values, error)
		}{
			{"sync", []string{FigPipeSync, FigPipeAllocs, FigPipeAllocBytes, FigPipeHeap},
				func() (Values, error) { return MeasureSync(ctx, c, 300) }},
			{"sync of small objects", []string{FigPipeSync, FigPipeAllocs, FigPipeAllocBytes, FigPipeHeap},
				func() (Values, error) { return MeasureSyncSmallObjects(ctx, c, 600) }},
			{"throughput", []string{FigThroughput},
				func() (Values, error) { return MeasureThroughput(ctx, c, 50, 500) }},
			{"stuck", []string{FigStuckFew, FigStuckMany},
				func() (Values, error) { return MeasureStuckHandler(ctx, c, 50, 100, 500) }},
			{"store", []string{FigWrites0, FigWrites10, FigReadLists},
				func() (Values, error) { return MeasureStoreWrites(c, 100, 2, 20*time.Millisecond) }},
		} {
			if c == DeltacacheCompact && run.name == "store" {
				continue // a store workload of deltacache's Indexer alone
			}
			v, err := run.fn()
			if err != nil {
				t.Fatalf("%s %s: %v", run.name, c, err)
			}
			for _, f := range run.figs {
				if len(v[f]) != 1 {
					t.Errorf("%s %s: figure %s has %d values, want 1", run.name, c, f, len(v[f]))
					continue
				}
				// Every figure is a finite non-negative number; the time, rate and
				// allocation figures cannot be zero for work that was done.
				x := v[f][0]
				positive := f == FigPipeSync || f == FigPipeAllocs || f == FigPipeAllocBytes ||
					f == FigThroughput || f == FigWrites0 || f == FigWrites10
				if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 || (positive && x == 0) {
					t.Errorf("%s %s: figure %s = %v, want a finite number, not negative "+
						"(above zero for a time, rate or allocation figure)", run.name, c, f, x)
				}
			}
		}
	}
	if _, err := NewPipelineInformer(ControllerRuntime, nil); err == nil {
		t.Error("NewPipelineInformer accepted controller-runtime, which has no pipeline of its own")
	}
}

// B3's compact contenders run the throughput workload too, the one writing snapshots
// into a directory of its own that is gone once the workload's context ends.
func TestThroughputRunsWithCompactStorageAndSnapshots(t *testing.T) {
	for _, c := range []Contender{DeltacacheCompact, DeltacacheSnapshots} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		v, err := MeasureThroughput(ctx, c, 50, 2000)
		cancel()
		if err != nil || len(v[FigThroughput]) != 1 || v[FigThroughput][0] <= 0 {
			t.Errorf("%s: %v, %v", c, v, err)
		}
	}
	if _, err := NewPipelineInformer(DeltacacheSnapshots, nil); err == nil {
		t.Error("NewPipelineInformer gave DeltacacheSnapshots an informer without a snapshot directory")
	}
}

func TestCacheWorkloadReadsEveryContenderOverTheMemoryAPI(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l := NewLayout(400)
	api, err := NewMemoryAPI(ServerPods(l), strconv.Itoa(l.Pods+1))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []Contender{Deltacache, DeltacacheDefaults, ControllerRuntime, ControllerRuntimeStrip, ClientGo} {
		v, err := CacheWorkload{Contender: c, Config: api.Config(), Mapper: api.Mapper(), Layout: l,
			Reps: 2, OpTime: time.Millisecond, Seed: 1}.Run(ctx)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		for _, f := range []string{FigGet, FigListLabelNS, FigListLabel, FigListLabelAlloc,
			FigListLabelShared, FigListNode, FigListNS} {
			if len(v[f]) != 2 {
				t.Errorf("%s: figure %s has %d values, want 2", c, f, len(v[f]))
			}
		}
		// The collector's share is reported only for repetitions in which one completed.
		if n := len(v[FigListLabelGC]); n > 2 {
			t.Errorf("%s: figure %s has %d values, want at most 2", c, FigListLabelGC, n)
		}
		for _, x := range v[FigListLabelGC] {
			if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
				t.Errorf("%s: figure %s = %v, want a finite non-negative number", c, FigListLabelGC, x)
			}
		}
		if alloc := v[FigListLabelAlloc]; len(alloc) > 0 && alloc[0] <= 0 {
			t.Errorf("%s: a List by label allocated %v KiB, want a positive figure", c, alloc[0])
		}
		if got := v[FigListRequests][0] + v[FigWatchListRequests][0]; got < 1 {
			t.Errorf("%s: no list or WatchList request counted", c)
		}
	}
}

func TestFootprintLayersAreMeasuredAndPositive(t *testing.T) {
	v, err := MeasureFootprint(2000)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range footFigures() {
		if len(v[f.ID]) != 1 {
			t.Fatalf("%s: %v", f.ID, v[f.ID])
		}
		t.Logf("%-40s %8.0f B", f.ID, v[f.ID][0])
		if v[f.ID][0] <= 0 {
			t.Errorf("%s = %v B per pod, want a positive figure", f.ID, v[f.ID][0])
		}
	}
	// The payload is the protobuf size of a stripped pod, within its allocation's
	// rounding; the decoded pod is several times larger.
	if p, d := v[FigFootPayload][0], v[FigFootDecoded][0]; p < 500 || p > 1200 || d < 3*p {
		t.Errorf("payload %v B and decoded pod %v B per pod, want 500–1200 and at least 3× more", p, d)
	}
	// Compressed, the payload is smaller; the realistic pods are larger than the
	// bench's in every form, and compress too.
	if c, p := v[FigFootCompressed][0], v[FigFootPayload][0]; c >= p/2 {
		t.Errorf("compressed payload %v B per pod, want under half the protobuf's %v B", c, p)
	}
	if rp, p, rc := v[FigFootRealPayload][0], v[FigFootPayload][0], v[FigFootRealCompressed][0]; rp <= p || rc >= rp {
		t.Errorf("realistic payload %v B (bench pods' %v B), compressed %v B: want larger than the bench's, and smaller compressed", rp, p, rc)
	}
}

// TestMemoryListerWatcherListsInKeyOrder checks the list order is kube-apiserver's
// (sorted by namespace/name), not the order pods were built in, where consecutive pods
// belong to different apps.
func TestMemoryListerWatcherListsInKeyOrder(t *testing.T) {
	pods := ServerPods(NewLayout(1000))
	if pods[0].Labels[appLabel] == pods[1].Labels[appLabel] {
		t.Fatal("the layout puts consecutive pods in one app: the test shows nothing")
	}
	obj, err := NewMemoryListerWatcher(pods, "1001").List(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	items := obj.(*corev1.PodList).Items
	if len(items) != len(pods) {
		t.Fatalf("listed %d pods, want %d", len(items), len(pods))
	}
	seen := map[string]bool{}
	for i := range items {
		if i > 0 {
			prev, cur := items[i-1].Namespace+"/"+items[i-1].Name, items[i].Namespace+"/"+items[i].Name
			if prev >= cur {
				t.Fatalf("item %d: %s listed after %s", i, cur, prev)
			}
		}
		seen[items[i].Name] = true
	}
	if len(seen) != len(pods) {
		t.Fatalf("listed %d distinct pods, want %d", len(seen), len(pods))
	}
	if items[0].Labels[appLabel] != items[1].Labels[appLabel] {
		t.Fatalf("the first two listed pods are of apps %q and %q: one app's pods are not together",
			items[0].Labels[appLabel], items[1].Labels[appLabel])
	}
}
