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

// Package soak runs deltacache on a local control plane behind a fault-injecting
// TCP proxy while writers churn objects, then checks that every informer's store
// and every handler's view converged to the server's state. `make soak` runs it for
// SOAK_DURATION (10 minutes) and writes docs/reliability.md; `make test` runs 90
// seconds. SOAK_SEED replays a run's faults and operations.
package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	demov1alpha1 "github.com/deltacache/deltacache/api/v1alpha1"
	"github.com/deltacache/deltacache/internal/faultproxy"
	"github.com/deltacache/deltacache/internal/testenv"
	dcache "github.com/deltacache/deltacache/pkg/cache"
	"github.com/deltacache/deltacache/pkg/informer"
)

// settings of one run, from the environment.
type settings struct {
	seed     uint64
	duration time.Duration
	objects  int // per kind
	rate     int // writes per second, all kinds
	report   string
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func loadSettings(t *testing.T) settings {
	s := settings{duration: 90 * time.Second, objects: envInt("SOAK_OBJECTS", 300), rate: envInt("SOAK_RATE", 40),
		report: os.Getenv("SOAK_REPORT")}
	if d, err := time.ParseDuration(os.Getenv("SOAK_DURATION")); err == nil && d > 0 {
		s.duration = d
	}
	if v, err := strconv.ParseUint(os.Getenv("SOAK_SEED"), 10, 64); err == nil {
		s.seed = v
	} else {
		s.seed = uint64(time.Now().UnixNano())
	}
	t.Logf("SOAK_SEED=%d SOAK_DURATION=%s SOAK_OBJECTS=%d SOAK_RATE=%d", s.seed, s.duration, s.objects, s.rate)
	return s
}

// kinds the writers churn, and the informers that watch them.
var (
	podGVK = corev1.SchemeGroupVersion.WithKind("Pod")
	cmGVK  = corev1.SchemeGroupVersion.WithKind("ConfigMap")
	appGVK = demov1alpha1.GroupVersion.WithKind("App")
)

// watched is one informer of the cache under test with its recorder.
type watched struct {
	name string
	gvk  schema.GroupVersionKind
	inf  *informer.SharedIndexInformer
	rec  *recorder
	// unsynced is set if HasSynced went back to false after it was true.
	unsynced atomic.Bool
}

// event is what a handler saw of one object.
type event struct {
	typ string // add, update, delete
	uid string
	rv  string
}

// recorder is the normal handler: per key the sequence of events.
type recorder struct {
	mu       sync.Mutex
	seq      map[string][]event
	events   atomic.Int64
	kind     string
	writes   *sync.Map // kind/key@rv → time written
	maxDelay atomic.Int64
}

func newRecorder(kind string, writes *sync.Map) *recorder {
	return &recorder{seq: map[string][]event{}, kind: kind, writes: writes}
}

func (r *recorder) note(typ string, obj any) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	key := m.GetNamespace() + "/" + m.GetName()
	if at, ok := r.writes.Load(r.kind + "/" + key + "@" + m.GetResourceVersion()); ok && typ != "delete" {
		d := int64(time.Since(at.(time.Time)))
		for {
			cur := r.maxDelay.Load()
			if d <= cur || r.maxDelay.CompareAndSwap(cur, d) {
				break
			}
		}
	}
	r.events.Add(1)
	r.mu.Lock()
	r.seq[key] = append(r.seq[key], event{typ: typ, uid: string(m.GetUID()), rv: m.GetResourceVersion()})
	r.mu.Unlock()
}

func (r *recorder) OnAdd(obj any, _ bool) { r.note("add", obj) }
func (r *recorder) OnUpdate(_, obj any)   { r.note("update", obj) }
func (r *recorder) OnDelete(obj any)      { r.note("delete", obj) }
func (r *recorder) HandlerName() string   { return "soak-recorder" }

// keys returns a copy of the sequences recorded so far (handlers go on recording).
func (r *recorder) keys() map[string][]event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string][]event, len(r.seq))
	for k, seq := range r.seq {
		out[k] = slices.Clone(seq)
	}
	return out
}
func slowHandler() toolscache.ResourceEventHandler {
	sleep := func() { time.Sleep(2 * time.Millisecond) }
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { sleep() }, UpdateFunc: func(any, any) { sleep() }, DeleteFunc: func(any) { sleep() },
	}
}

func panickyHandler() toolscache.ResourceEventHandler {
	var n atomic.Int64
	maybe := func() {
		if n.Add(1)%97 == 0 {
			panic("soak: a handler that panics now and then")
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { maybe() }, UpdateFunc: func(any, any) { maybe() }, DeleteFunc: func(any) { maybe() },
	}
}

// faultCounts are the faults injected, by kind.
type faultCounts struct{ cuts, blackholes, slow, crdRecreated int }

// compactionInterval is the kube-apiserver's etcd compaction interval in the soak.
const compactionInterval = 20 * time.Second

// controlPlane is the envtest control plane with the proxy in front of it.
type controlPlane struct {
	scheme  *k8sruntime.Scheme
	cfg     *rest.Config // direct
	proxied *rest.Config // through the proxy
	direct  client.Client
	proxy   *faultproxy.TCPProxy
	crdDir  string
}

func startControlPlane(t *testing.T) *controlPlane {
	t.Helper()
	assets := testenv.AssetsDir(filepath.Join("..", ".."))
	if assets == "" {
		t.Skip("envtest binaries not found: set KUBEBUILDER_ASSETS=$(bash hack/envtest-binaries.sh)")
	}
	cp := &controlPlane{scheme: clientgoscheme.Scheme, crdDir: filepath.Join("..", "..", "config", "crd", "bases")}
	if err := demov1alpha1.AddToScheme(cp.scheme); err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(cp.scheme); err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets, CRDDirectoryPaths: []string{cp.crdDir}}
	// etcd compaction by the kube-apiserver, often: watches resumed after a fault
	// from an RV older than the compaction get 410 and must relist.
	env.ControlPlane.GetAPIServer().Configure().Set("etcd-compaction-interval", compactionInterval.String())
	var err error
	if cp.cfg, err = env.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	if cp.direct, err = client.New(cp.cfg, client.Options{Scheme: cp.scheme}); err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(cp.cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	if cp.proxy, err = faultproxy.NewTCPProxy(target.Host); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.proxy.Close() })
	cp.proxied = rest.CopyConfig(cp.cfg)
	cp.proxied.Host = "https://" + cp.proxy.Addr()
	cp.proxied.QPS, cp.proxied.Burst = 200, 400
	return cp
}

// watchAll starts the informers under test, each with a recording, a slow and a
// panicking handler.
func watchAll(ctx context.Context, t *testing.T, c crcache.Cache, writes *sync.Map) []*watched {
	t.Helper()
	metaCM := &metav1.PartialObjectMetadata{}
	metaCM.SetGroupVersionKind(cmGVK)
	uApp := &unstructured.Unstructured{}
	uApp.SetGroupVersionKind(appGVK)
	specs := []struct {
		name string
		obj  client.Object
		gvk  schema.GroupVersionKind
	}{
		{"pods", &corev1.Pod{}, podGVK},
		{"configmaps", &corev1.ConfigMap{}, cmGVK},
		{"apps", &demov1alpha1.App{}, appGVK},
		{"configmaps (metadata)", metaCM, cmGVK},
		{"apps (unstructured)", uApp, appGVK},
	}
	informers := make([]*watched, 0, len(specs))
	for _, w := range specs {
		i, err := c.GetInformer(ctx, w.obj)
		if err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		wi := &watched{name: w.name, gvk: w.gvk, inf: i.(*informer.SharedIndexInformer),
			rec: newRecorder(w.gvk.Kind, writes)}
		for _, h := range []toolscache.ResourceEventHandler{wi.rec, slowHandler(), panickyHandler()} {
			if _, err := wi.inf.AddEventHandler(h); err != nil {
				t.Fatal(err)
			}
		}
		informers = append(informers, wi)
	}
	return informers
}

// injectFaults injects faults drawn from the seed until end.
func injectFaults(ctx context.Context, t *testing.T, cp *controlPlane, st settings, end time.Time) faultCounts {
	var faults faultCounts
	rng := rand.New(rand.NewPCG(st.seed, 1))
	scale := min(1.0, st.duration.Seconds()/600) // blackholes 10–60 s in 10 minutes, shorter in shorter runs
	for {
		wait := time.Duration(3+rng.IntN(6)) * time.Second
		if time.Now().Add(wait).After(end) {
			return faults
		}
		time.Sleep(wait)
		switch rng.IntN(4) {
		case 3:
			if faults.crdRecreated >= 2 || time.Until(end) < 30*time.Second {
				cp.proxy.Cut()
				faults.cuts++
				break
			}
			if err := recreateCRD(ctx, cp.direct, cp.cfg, cp.crdDir); err != nil {
				t.Errorf("re-creating the App CRD: %v", err)
			}
			faults.crdRecreated++
		case 0:
			cp.proxy.Cut()
			faults.cuts++
		case 1:
			d := time.Duration(float64(10+rng.IntN(51))*scale*float64(time.Second)) + time.Second
			faults.blackholes++
			cp.proxy.Blackhole(true)
			time.Sleep(min(d, time.Until(end)))
			cp.proxy.Blackhole(false)
		case 2:
			faults.slow++
			cp.proxy.SetDelay(time.Duration(20+rng.IntN(80)) * time.Millisecond)
			time.Sleep(min(10*time.Second, time.Until(end)))
			cp.proxy.SetDelay(0)
		}
	}
}

// converge compares until there is no difference or 60 s passed.
func converge(ctx context.Context, t *testing.T, c client.Client, informers []*watched) map[string][]string {
	deadline := time.Now().Add(60 * time.Second)
	for {
		diffs := compareAll(ctx, t, c, informers)
		if total(diffs) == 0 || time.Now().After(deadline) {
			return diffs
		}
		time.Sleep(time.Second)
	}
}

// sampleHeap records the largest heap in use until ctx ends.
func sampleHeap(ctx context.Context, maxHeap *atomic.Uint64) {
	for ctx.Err() == nil {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapInuse > maxHeap.Load() {
			maxHeap.Store(ms.HeapInuse)
		}
		time.Sleep(2 * time.Second)
	}
}

func TestSoak(t *testing.T) {
	st := loadSettings(t)
	cp := startControlPlane(t)
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "soak"}}
	if err := cp.direct.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}

	goroutinesBefore := runtime.NumGoroutine()
	c, err := dcache.NewWith(dcache.WithLabelIndexes("app"))(cp.proxied, crcache.Options{Scheme: cp.scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.IndexField(ctx, &corev1.Pod{}, "spec.nodeName", func(o client.Object) []string {
		return []string{o.(*corev1.Pod).Spec.NodeName}
	}); err != nil {
		t.Fatal(err)
	}
	cacheCtx, stopCache := context.WithCancel(ctx)
	cacheDone := make(chan error, 1)
	go func() { cacheDone <- c.Start(cacheCtx) }()
	writes := &sync.Map{}
	informers := watchAll(ctx, t, c, writes)
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	monitorDone := make(chan struct{})
	go func() { // HasSynced never goes back to false
		defer close(monitorDone)
		for cacheCtx.Err() == nil {
			for _, w := range informers {
				if !w.inf.HasSynced() {
					w.unsynced.Store(true)
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	var maxHeap atomic.Uint64
	go sampleHeap(cacheCtx, &maxHeap)

	// Faults and writers, both drawn from the seed.
	end := time.Now().Add(st.duration)
	faultsDone := make(chan faultCounts, 1)
	go func() { faultsDone <- injectFaults(ctx, t, cp, st, end) }()
	written := writeLoop(ctx, t, cp.direct, writes, st, end)
	faults := <-faultsDone
	cp.proxy.Blackhole(false)
	cp.proxy.SetDelay(0)
	t.Logf("writes: %d; faults: %d cuts, %d blackholes, %d slow links, %d CRD re-creations",
		written, faults.cuts, faults.blackholes, faults.slow, faults.crdRecreated)

	// Within 60 s every store equals the server, and every handler's last view too.
	diffs := converge(ctx, t, cp.direct, informers)
	converged := time.Since(end)
	for name, d := range diffs {
		if len(d) > 0 {
			t.Errorf("%s: %d differences from the server, e.g. %v", name, len(d), d[:min(5, len(d))])
		}
	}
	var delivered int64
	var maxDelay time.Duration
	for _, w := range informers {
		delivered += w.rec.events.Load()
		maxDelay = max(maxDelay, time.Duration(w.rec.maxDelay.Load()))
		if w.unsynced.Load() {
			t.Errorf("%s: HasSynced went back to false", w.name)
		}
	}
	relists, watchStarts := pipelineCounts(t)

	stopCache()
	if err := <-cacheDone; err != nil {
		t.Errorf("cache Start: %v", err)
	}
	<-monitorDone
	cp.proxy.Cut() // the cache's idle connections end with it
	leftover := goroutinesLeft(goroutinesBefore)
	if leftover > 0 {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines left after the cache stopped:\n%s", leftover, buf[:runtime.Stack(buf, true)])
	}

	r := report{settings: st, faults: faults, compactions: int(st.duration / compactionInterval),
		written: written, delivered: delivered, relists: relists, watchStarts: watchStarts,
		maxDelay: maxDelay, converged: converged, diffs: total(diffs),
		maxHeap: maxHeap.Load(), leftover: leftover, passed: !t.Failed()}
	t.Log(r.markdown())
	if st.report != "" {
		if err := os.WriteFile(st.report, []byte(r.markdown()), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// writeLoop creates, updates and deletes objects of the three kinds at st.rate
// until end, with deletes followed by re-creates under the same name; it returns
// the number of writes.
func writeLoop(ctx context.Context, t *testing.T, c client.Client, writes *sync.Map, st settings, end time.Time) int {
	rng := rand.New(rand.NewPCG(st.seed, 2))
	exists := map[string]bool{}
	n, failed := 0, 0
	tick := time.NewTicker(time.Second / time.Duration(st.rate))
	defer tick.Stop()
	for time.Now().Before(end) {
		<-tick.C
		kind := []string{"Pod", "ConfigMap", "App"}[rng.IntN(3)]
		prefix := map[string]string{"Pod": "p", "ConfigMap": "cm", "App": "app"}[kind]
		name := fmt.Sprintf("%s-%d", prefix, rng.IntN(st.objects))
		id := kind + "/" + name
		obj := newObject(kind, name, rng.IntN(10))
		var err error
		op := rng.IntN(10)
		switch {
		case !exists[id]:
			err = c.Create(ctx, obj)
			if apierrors.IsAlreadyExists(err) {
				err = nil
			}
			exists[id] = err == nil
		case op < 6:
			err = c.Patch(ctx, obj, client.Merge)
		default:
			err = c.Delete(ctx, obj)
			exists[id] = false
			if op == 9 && err == nil { // re-created at once, under the same name
				obj = newObject(kind, name, rng.IntN(10))
				err = c.Create(ctx, obj)
				exists[id] = err == nil
				n++
			}
		}
		crdGoing := apierrors.IsForbidden(err) && strings.Contains(err.Error(), "terminating")
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) || crdGoing {
			exists[id] = false // deleted with its CRD, or the CRD is being re-created
		} else if err != nil && !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			if failed++; failed <= 5 {
				t.Logf("write %s: %v", id, err)
			}
		}
		if err == nil {
			writes.Store(kind+"/soak/"+name+"@"+obj.GetResourceVersion(), time.Now())
		}
		n++
	}
	return n
}

// recreateCRD deletes the App CRD (the server deletes every App with it), waits
// until it is gone, and installs it again.
func recreateCRD(ctx context.Context, c client.Client, cfg *rest.Config, dir string) error {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	key := client.ObjectKey{Name: "apps." + demov1alpha1.GroupVersion.Group}
	if err := c.Get(ctx, key, crd); err != nil {
		return err
	}
	if err := c.Delete(ctx, crd); err != nil {
		return err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !apierrors.IsNotFound(c.Get(ctx, key, &apiextensionsv1.CustomResourceDefinition{})) {
		if time.Now().After(deadline) {
			return fmt.Errorf("CRD %s still there after 2 minutes", key.Name)
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	_, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{dir}})
	return err
}

func newObject(kind, name string, v int) client.Object {
	labels := map[string]string{"app": "a" + strconv.Itoa(v%3), "v": strconv.Itoa(v)}
	om := metav1.ObjectMeta{Namespace: "soak", Name: name, Labels: labels}
	switch kind {
	case "Pod":
		containers := []corev1.Container{{Name: "c", Image: "busybox"}}
		return &corev1.Pod{ObjectMeta: om, Spec: corev1.PodSpec{Containers: containers}}
	case "ConfigMap":
		return &corev1.ConfigMap{ObjectMeta: om, Data: map[string]string{"v": strconv.Itoa(v)}}
	default:
		return &demov1alpha1.App{ObjectMeta: om, Spec: demov1alpha1.AppSpec{MinReady: int32(v)}}
	}
}

// compareAll compares every informer's store and recorder with a consistent LIST of
// the server: a difference is a key whose uid or resourceVersion differs, or whose
// handler's last event does not show the server's state, or a handler that saw an
// event after the Delete of the same object.
func compareAll(ctx context.Context, t *testing.T, c client.Client, informers []*watched) map[string][]string {
	server := map[schema.GroupVersionKind]map[string]string{}
	out := map[string][]string{}
	for _, w := range informers {
		if _, ok := server[w.gvk]; !ok {
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(w.gvk.GroupVersion().WithKind(w.gvk.Kind + "List"))
			if err := c.List(ctx, list); err != nil {
				t.Fatalf("consistent LIST of %s: %v", w.gvk.Kind, err)
			}
			m := map[string]string{}
			for _, o := range list.Items {
				m[o.Namespace+"/"+o.Name] = string(o.UID) + "@" + o.ResourceVersion
			}
			server[w.gvk] = m
		}
		want := server[w.gvk]
		var diffs []string
		store := map[string]string{}
		for _, o := range w.inf.GetStore().List() {
			m, _ := meta.Accessor(o)
			store[m.GetNamespace()+"/"+m.GetName()] = string(m.GetUID()) + "@" + m.GetResourceVersion()
		}
		for k, v := range want {
			if store[k] != v {
				diffs = append(diffs, fmt.Sprintf("store %s: %q, server %q", k, store[k], v))
			}
		}
		for k, v := range store {
			if _, ok := want[k]; !ok {
				diffs = append(diffs, fmt.Sprintf("store %s: %q, not on the server", k, v))
			}
		}
		seen := w.rec.keys()
		for k, seq := range seen {
			last := seq[len(seq)-1]
			v, onServer := want[k]
			switch {
			case onServer && (last.typ == "delete" || last.uid+"@"+last.rv != v):
				diffs = append(diffs, fmt.Sprintf("handler %s: last %v, server %q", k, last, v))
			case !onServer && last.typ != "delete":
				diffs = append(diffs, fmt.Sprintf("handler %s: last %v, not on the server", k, last))
			}
			deleted := map[string]bool{}
			for _, e := range seq {
				if deleted[e.uid] && e.typ != "delete" {
					diffs = append(diffs, fmt.Sprintf("handler %s: %v after the delete of uid %s", k, e, e.uid))
					break
				}
				if e.typ == "delete" {
					deleted[e.uid] = true
				}
			}
		}
		for k := range want {
			if _, ok := seen[k]; !ok {
				diffs = append(diffs, fmt.Sprintf("handler %s: never seen", k))
			}
		}
		slices.Sort(diffs)
		out[w.name] = diffs
	}
	return out
}

func total(diffs map[string][]string) int {
	n := 0
	for _, d := range diffs {
		n += len(d)
	}
	return n
}

// pipelineCounts sums relists and watch starts over the informers' series.
func pipelineCounts(t *testing.T) (relists, watchStarts float64) {
	reg := prometheus.NewRegistry()
	if err := informer.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			switch f.GetName() {
			case "deltacache_informer_relists_total":
				relists += m.GetCounter().GetValue()
			case "deltacache_informer_watch_starts_total":
				watchStarts += m.GetCounter().GetValue()
			}
		}
	}
	return relists, watchStarts
}

// goroutinesLeft waits up to 10 s for the goroutines to fall back to before and
// returns how many more there are (the proxy and envtest's own are not counted:
// both were started before).
func goroutinesLeft(before int) int {
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := runtime.NumGoroutine() - before
		if n <= 0 || time.Now().After(deadline) {
			return max(n, 0)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
