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
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	demov1alpha1 "github.com/deltacache/deltacache/api/v1alpha1"
	"github.com/deltacache/deltacache/pkg/informer"
)

// settings of one run, from the environment.
type settings struct {
	seed     uint64
	duration time.Duration
	objects  int // per kind
	rate     int // writes per second, all kinds
	writers  int // writers, each with its own client
	replicas int // sharded caches
	// checkInterval of the replicas' consistency check: the run's ninth, within
	// 10 s to 1 min (several checks per run).
	checkInterval time.Duration
	report        string
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func loadSettings(t *testing.T) settings {
	s := settings{duration: 90 * time.Second, objects: envInt("SOAK_OBJECTS", 300), rate: envInt("SOAK_RATE", 40),
		writers: envInt("SOAK_WRITERS", 10), replicas: envInt("SOAK_REPLICAS", 3), report: os.Getenv("SOAK_REPORT")}
	if d, err := time.ParseDuration(os.Getenv("SOAK_DURATION")); err == nil && d > 0 {
		s.duration = d
	}
	if v, err := strconv.ParseUint(os.Getenv("SOAK_SEED"), 10, 64); err == nil {
		s.seed = v
	} else {
		s.seed = uint64(time.Now().UnixNano())
	}
	s.checkInterval = min(max(s.duration/9, 10*time.Second), time.Minute)
	t.Logf("SOAK_SEED=%d SOAK_DURATION=%s SOAK_OBJECTS=%d SOAK_RATE=%d SOAK_WRITERS=%d SOAK_REPLICAS=%d (check every %s)",
		s.seed, s.duration, s.objects, s.rate, s.writers, s.replicas, s.checkInterval)
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
	// synced is set once its replica synced (and cleared when it is stopped): the
	// monitor checks HasSynced of these.
	synced atomic.Bool
}

// event is what a handler saw of one object, and when.
type event struct {
	typ string // add, update, delete
	uid string
	rv  string
	at  time.Time
}

// recorder is the normal handler: per key the sequence of events.
type recorder struct {
	mu       sync.Mutex
	seq      map[string][]event
	events   atomic.Int64
	kind     string
	writes   *sync.Map // kind/key@rv → time written
	seen     *sync.Map // role|kind/key@rv, shared by the replicas: a write is timed when first seen
	role     string    // the informer's name (pods, configmaps (metadata), ...)
	maxDelay atomic.Int64
}

func newRecorder(role, kind string, writes, seen *sync.Map) *recorder {
	return &recorder{seq: map[string][]event{}, kind: kind, writes: writes, seen: seen, role: role}
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
	written := r.kind + "/" + key + "@" + m.GetResourceVersion()
	// A hand-off adds objects written long before to the replica that takes their slot:
	// only the first replica to see a write times it.
	if at, ok := r.writes.Load(written); ok && typ != "delete" && !r.firstSeen(written) {
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
	r.seq[key] = append(r.seq[key], event{typ: typ, uid: string(m.GetUID()), rv: m.GetResourceVersion(), at: time.Now()})
	r.mu.Unlock()
}

// firstSeen reports whether an informer of this role on some replica saw the write before.
func (r *recorder) firstSeen(written string) bool {
	_, loaded := r.seen.LoadOrStore(r.role+"|"+written, struct{}{})
	return loaded
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

// watchAll starts the informers under test, each with a recording, a slow and a
// panicking handler.
func watchAll(ctx context.Context, t *testing.T, c crcache.Cache, writes, seen *sync.Map) []*watched {
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
			rec: newRecorder(w.name, w.gvk.Kind, writes, seen)}
		for _, h := range []toolscache.ResourceEventHandler{wi.rec, slowHandler(), panickyHandler()} {
			if _, err := wi.inf.AddEventHandler(h); err != nil {
				t.Fatal(err)
			}
		}
		informers = append(informers, wi)
	}
	return informers
}

// converge compares until there is no difference or 60 s passed.
func converge(ctx context.Context, t *testing.T, c client.Client, replicas []*replica) map[string][]string {
	deadline := time.Now().Add(60 * time.Second)
	for {
		diffs := compareAll(ctx, t, c, replicas)
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
	ids := replicaIDs(st.replicas)
	namespaces := soakNamespaces(ids)
	for _, name := range append([]string{ringNamespace}, namespaces...) {
		if err := cp.direct.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := grantAll(ctx, cp.direct); err != nil {
		t.Fatal(err)
	}
	if err := grantSharding(ctx, cp.direct); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d replicas (Pods and Apps sharded by namespace over %v, ConfigMaps by uid), consistency check every %s",
		st.replicas, namespaces, st.checkInterval)

	goroutinesBefore := runtime.NumGoroutine()
	cacheCtx, stopCaches := context.WithCancel(ctx)
	writes, seen := &sync.Map{}, &sync.Map{}
	f := newFleet(t, cp, st, writes, seen)
	for _, id := range ids {
		f.live = append(f.live, f.start(cacheCtx, id))
	}
	for _, r := range f.current() {
		if err := f.sync(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	syncedAt := time.Now()
	monitorDone := make(chan struct{})
	go func() { // HasSynced never goes back to false
		defer close(monitorDone)
		for cacheCtx.Err() == nil {
			for _, r := range f.current() {
				for _, w := range r.informers {
					if w.synced.Load() && !w.inf.HasSynced() {
						w.unsynced.Store(true)
					}
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	var maxHeap atomic.Uint64
	go sampleHeap(cacheCtx, &maxHeap)
	samplersCtx, stopSamplers := context.WithCancel(cacheCtx)
	var samplers sync.WaitGroup
	holds := &holdSampler{}
	samplers.Go(func() { holds.run(samplersCtx, f) })
	var memory []memorySample
	var memoryMu sync.Mutex
	samplers.Go(func() { sampleMemory(samplersCtx, f, syncedAt, &memory, &memoryMu) })

	// Faults and writers, both drawn from the seed. The faults watch the first
	// replica's SyncError and readyz check.
	end := time.Now().Add(st.duration)
	faultsDone := make(chan faultLog, 1)
	go func() { faultsDone <- newInjector(t, cp, f, st, end).run(cacheCtx) }()
	written := runWriters(ctx, t, cp, writes, st, namespaces, end)
	faults := <-faultsDone
	cp.proxy.Blackhole(false)
	cp.proxy.SetDelay(0)
	t.Logf("writes: %d (%.0f/s, %.0f/s while the kube-apiserver was up, %d failed); faults: %v",
		written.writes.Load(), written.rate(st.duration), written.rateWhileUp(st.duration, faults.restarts),
		written.failed.Load(), faults.counts)

	// Within 60 s the ring settles, the replicas' stores together equal the server, each
	// holding its share, and every handler's view of its share too.
	replicas := f.current()
	diffs := converge(ctx, t, cp.direct, replicas)
	converged := time.Since(end)
	for name, d := range diffs {
		if len(d) > 0 {
			t.Errorf("%s: %d differences from the server, e.g. %v", name, len(d), d[:min(5, len(d))])
		}
	}
	var delivered int64
	var maxDelay time.Duration
	var informers []*watched
	for _, r := range f.all() {
		informers = append(informers, r.informers...)
	}
	for _, w := range informers {
		delivered += w.rec.events.Load()
		maxDelay = max(maxDelay, time.Duration(w.rec.maxDelay.Load()))
		if w.unsynced.Load() {
			t.Errorf("%s: HasSynced went back to false", w.name)
		}
	}
	stopSamplers()
	samplers.Wait()
	sampleMemoryOnce(f, syncedAt, &memory, &memoryMu)
	for _, d := range holds.doubles {
		t.Errorf("double hold: %s", d)
	}
	overlaps := f.recon.classify(f.all())
	for _, o := range overlaps {
		if !o.handOff && !o.otherObject {
			t.Errorf("overlapping reconcile of %s (slot %d): %s entered at %s while %s was in it, not at a hand-off; %s",
				o.key, o.slot, o.entrant, o.at.Format("15:04:05.000"), o.holder, o.states)
		}
	}
	pipeline := pipelineCounts(t)
	// No fault loses a watch event silently: the consistency check finds nothing and
	// causes no relist (the replicas' hand-offs relist with cause "shard").
	if n := sum(pipeline.drift); n > 0 || pipeline.checks["drift"] > 0 || pipeline.relists["drift"] > 0 {
		t.Errorf("the consistency check found %.0f drifted objects (%s) in %.0f checks and relisted %.0f times; want none",
			n, causes(pipeline.drift), pipeline.checks["drift"], pipeline.relists["drift"])
	}
	if pipeline.checks["ok"] == 0 {
		t.Errorf("no consistency check passed (checks: %s)", causes(pipeline.checks))
	}
	acquired, released := handOffs(f.all())

	if err := f.stopAll(); err != nil {
		t.Errorf("cache Start: %v", err)
	}
	stopCaches()
	<-monitorDone
	cp.proxy.Cut() // the caches' idle connections end with them
	leftover := goroutinesLeft(goroutinesBefore)
	if leftover > 0 {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines left after the caches stopped:\n%s", leftover, buf[:runtime.Stack(buf, true)])
	}

	r := report{settings: st, faults: faults, load: written, delivered: delivered, pipeline: pipeline,
		maxDelay: maxDelay, converged: converged, diffs: total(diffs), namespaces: len(namespaces),
		acquired: acquired, released: released, maxHeap: maxHeap.Load(), leftover: leftover, passed: !t.Failed(),
		restarts: f.log, holds: holds, reconciles: f.recon.calls.Load(), overlaps: overlaps, memory: memory}
	t.Log(r.markdown(nil))
	if st.report != "" {
		if err := r.write(st.report); err != nil {
			t.Error(err)
		}
	}
}

// compareAll compares every replica's informers and recorders with a consistent LIST
// of the server (see compareShares; the ring's settling under "ring"), by informer.
func compareAll(ctx context.Context, t *testing.T, c client.Client, replicas []*replica) map[string][]string {
	server := map[schema.GroupVersionKind]map[string]serverObject{}
	out := map[string][]string{"ring": ringDiffs(replicas)}
	for i, w := range replicas[0].informers {
		if _, ok := server[w.gvk]; !ok {
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(w.gvk.GroupVersion().WithKind(w.gvk.Kind + "List"))
			if err := c.List(ctx, list); err != nil {
				t.Fatalf("consistent LIST of %s: %v", w.gvk.Kind, err)
			}
			m := map[string]serverObject{}
			for _, o := range list.Items {
				m[o.Namespace+"/"+o.Name] = serverObject{uid: o.UID, version: string(o.UID) + "@" + o.ResourceVersion}
			}
			server[w.gvk] = m
		}
		out[w.name] = compareShares(replicas, i, server[w.gvk])
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

// pipeline is what the informers' series counted over the run.
type pipeline struct {
	relists     map[string]float64 // by cause
	watchStarts float64
	forbidden   float64            // list and watch errors whose reason is Forbidden
	errors      map[string]float64 // list and watch errors by "op reason"
	checks      map[string]float64 // consistency checks by result
	drift       map[string]float64 // objects the consistency checks found drifted, by drift
	// starts are the informers' starts by "start" ("start reason" for discarded ones),
	// summed over every cache built; loaded and fetched the objects warm starts loaded
	// from snapshots and fetched by their metadata diffs.
	starts          map[string]float64
	loaded, fetched float64
}

// pipelineCounts sums the informers' series.
func pipelineCounts(t *testing.T) pipeline {
	reg := prometheus.NewRegistry()
	if err := informer.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	p := pipeline{relists: map[string]float64{}, errors: map[string]float64{}, checks: map[string]float64{},
		drift: map[string]float64{}, starts: map[string]float64{}}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch f.GetName() {
			case "deltacache_informer_relists_total":
				p.relists[labels["cause"]] += m.GetCounter().GetValue()
			case "deltacache_informer_watch_starts_total":
				p.watchStarts += m.GetCounter().GetValue()
			case "deltacache_consistency_checks_total":
				p.checks[labels["result"]] += m.GetCounter().GetValue()
			case "deltacache_consistency_drift_objects_total":
				p.drift[labels["drift"]] += m.GetCounter().GetValue()
			case "deltacache_informer_starts_total":
				start := labels["start"]
				if labels["reason"] != "" {
					start += " (" + labels["reason"] + ")"
				}
				p.starts[start] += m.GetCounter().GetValue()
			case "deltacache_snapshot_loaded_objects_total":
				p.loaded += m.GetCounter().GetValue()
			case "deltacache_snapshot_fetched_objects_total":
				p.fetched += m.GetCounter().GetValue()
			case "deltacache_informer_errors_total":
				p.errors[labels["op"]+" "+labels["reason"]] += m.GetCounter().GetValue()
				if labels["reason"] == "Forbidden" {
					p.forbidden += m.GetCounter().GetValue()
				}
			}
		}
	}
	return p
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
