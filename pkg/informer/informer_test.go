package informer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/deltacache/deltacache/pkg/informer/informertest"
)

type informerRun struct {
	s      *SharedIndexInformer
	cancel context.CancelFunc
	done   chan struct{}
}

func startInformer(t *testing.T, s *SharedIndexInformer) *informerRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	run := &informerRun{s: s, cancel: cancel, done: make(chan struct{})}
	go func() { defer close(run.done); s.RunWithContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-run.done:
		case <-time.After(10 * time.Second):
			t.Error("informer did not stop")
		}
	})
	return run
}

func (r *informerRun) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	waitClosed(t, r.done, 10*time.Second, "informer to stop")
}

func newPodInformer(lw toolscache.ListerWatcher, opts Options) *SharedIndexInformer {
	if opts.Backoff == (Backoff{}) {
		opts.Backoff = fastBackoff
	}
	return NewSharedIndexInformer(lw, &corev1.Pod{}, opts)
}

func addHandler(t *testing.T, s *SharedIndexInformer, h toolscache.ResourceEventHandler) *HandlerRegistration {
	t.Helper()
	reg, err := s.AddEventHandler(h)
	must(t, err)
	return reg.(*HandlerRegistration)
}

func waitSynced(t *testing.T, c toolscache.DoneChecker) {
	t.Helper()
	waitClosed(t, c.Done(), 10*time.Second, c.Name()+" to sync")
}

func storeContent(s *SharedIndexInformer) []string { return describeAll(s.GetStore().List()) }

func TestInitialListAddsCarryIsInInitialList(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.Create(pod("a", "p1", ""))
	f.Create(pod("a", "p2", ""))
	s := newPodInformer(f, Options{})
	rec := newRecorder()
	reg := addHandler(t, s, rec)
	startInformer(t, s)
	waitSynced(t, reg.HasSyncedChecker())
	f.Create(pod("a", "p3", ""))
	f.Update(pod("a", "p1", ""))
	f.Delete(pod("a", "p2", ""))
	eventually(t, 10*time.Second, "5 events", func() bool { return rec.count() == 5 })
	got := rec.all()
	//nolint:goconst // expected values are spelled out so the test reads as its specification
	equalStrings(t, "initial adds", sortedCopy(got[:2]), []string{"add a/p1@2 initial", "add a/p2@3 initial"})
	equalStrings(t, "live events", got[2:], []string{"add a/p3@4", "update a/p1@5 from 2", "delete a/p2@6"})
	equalStrings(t, "store", storeContent(s), []string{"a/p1@5", "a/p3@4"})
}

func TestStoreIsUpdatedBeforeHandlersAreNotified(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.Create(pod("a", "p1", ""))
	s := newPodInformer(f, Options{})
	var mu sync.Mutex
	var violations []string
	check := func(obj any, wantPresent bool) {
		_, exists, _ := s.GetStore().GetByKey(keyOfObj(obj))
		if exists != wantPresent {
			mu.Lock()
			violations = append(violations, describe(obj))
			mu.Unlock()
		}
	}
	rec := newRecorder()
	reg := addHandler(t, s, toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, initial bool) { check(obj, true); rec.OnAdd(obj, initial) },
		UpdateFunc: func(o, n any) { check(n, true); rec.OnUpdate(o, n) },
		DeleteFunc: func(obj any) { check(obj, false); rec.OnDelete(obj) },
	})
	startInformer(t, s)
	waitSynced(t, reg.HasSyncedChecker())
	f.Create(pod("a", "p2", ""))
	eventually(t, 10*time.Second, "add p2", func() bool { return len(rec.forKey("a/p2")) == 1 })
	f.Update(pod("a", "p2", ""))
	eventually(t, 10*time.Second, "update p2", func() bool { return len(rec.forKey("a/p2")) == 2 })
	f.Delete(pod("a", "p2", ""))
	eventually(t, 10*time.Second, "delete p2", func() bool { return len(rec.forKey("a/p2")) == 3 })
	mu.Lock()
	defer mu.Unlock()
	if len(violations) > 0 {
		t.Fatalf("handler saw a store not yet updated for %v", violations)
	}
}

func TestRegistrationHasSyncedOnlyAfterHandlerProcessedInitialList(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	for i := range 3 {
		f.Create(pod("a", fmt.Sprintf("p%d", i), ""))
	}
	s := newPodInformer(f, Options{Name: podsResource})
	slow := newRecorder()
	slow.block = make(chan struct{})
	fast := newRecorder()
	slowReg := addHandler(t, s, slow)
	fastReg := addHandler(t, s, fast)
	startInformer(t, s)

	waitSynced(t, s.HasSyncedChecker())
	waitSynced(t, fastReg.HasSyncedChecker())
	if slowReg.HasSynced() || toolscache.IsDone(slowReg.HasSyncedChecker()) {
		t.Fatal("a handler that processed nothing is synced")
	}
	if !s.HasSynced() {
		t.Fatal("informer not synced")
	}
	close(slow.block)
	waitSynced(t, slowReg.HasSyncedChecker())
	if slow.count() != 3 {
		t.Fatalf("slow handler synced after %d of 3 initial adds", slow.count())
	}
	if name := slowReg.HasSyncedChecker().Name(); !strings.HasPrefix(name, "pods/") {
		t.Fatalf("checker name %q", name)
	}
}

func TestHandlerAddedAfterStartGetsStoreReplayedBeforeLiveEvents(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.Create(pod("a", "p1", ""))
	s := newPodInformer(f, Options{})
	startInformer(t, s)
	waitSynced(t, s.HasSyncedChecker())

	late := newRecorder()
	late.block = make(chan struct{})
	reg := addHandler(t, s, late)
	// The handler goroutine takes the replayed add and blocks in it.
	eventually(t, 10*time.Second, "replayed add in flight", func() bool { return reg.pendingCount() == 0 })
	f.Update(pod("a", "p1", ""))
	eventually(t, 10*time.Second, "update queued", func() bool { return reg.pendingCount() == 1 })
	if reg.HasSynced() {
		t.Fatal("late registration synced before processing its replay")
	}
	close(late.block)
	waitSynced(t, reg.HasSyncedChecker())
	eventually(t, 10*time.Second, "late handler caught up", func() bool { return late.count() == 2 })
	equalStrings(t, "late handler", late.all(), []string{"add a/p1@2 initial", "update a/p1@3 from 2"})
}

func TestStuckHandlerNeverBlocksInformerOrOtherHandlers(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	s := newPodInformer(f, Options{})
	stuck := newRecorder()
	stuck.block = make(chan struct{})
	other := newRecorder()
	stuckReg := addHandler(t, s, stuck)
	otherReg := addHandler(t, s, other)
	startInformer(t, s)
	waitSynced(t, otherReg.HasSyncedChecker())
	for i := range 200 {
		f.Create(pod("a", fmt.Sprintf("p%d", i), ""))
	}
	eventually(t, 10*time.Second, "other handler got 200 adds", func() bool { return other.count() == 200 })
	if s.Indexer().Len() != 200 {
		t.Fatalf("store has %d objects", s.Indexer().Len())
	}
	if stuck.count() != 0 {
		t.Fatal("stuck handler was called")
	}
	close(stuck.block)
	eventually(t, 10*time.Second, "stuck handler caught up", func() bool { return stuck.count() == 200 })
	_ = stuckReg
}

func TestStuckHandlerPendingBoundedByKeys(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	for i := range 10 {
		f.Create(pod("a", fmt.Sprintf("p%d", i), ""))
	}
	s := newPodInformer(f, Options{})
	stuck := newRecorder()
	stuck.block = make(chan struct{})
	first := make(chan struct{})
	var once sync.Once
	stuck.onCall = func(string) {}
	reg := addHandler(t, s, toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			once.Do(func() { close(first) })
			stuck.OnAdd(obj, initial)
		},
		UpdateFunc: stuck.OnUpdate,
		DeleteFunc: stuck.OnDelete,
	})
	counter := newRecorder()
	counterReg := addHandler(t, s, counter)
	startInformer(t, s)
	waitClosed(t, first, 10*time.Second, "first delivery")
	waitSynced(t, counterReg.HasSyncedChecker())

	// 1000 updates over 10 keys, plus a create+delete of a short-lived key.
	for i := range 1000 {
		f.Update(pod("a", fmt.Sprintf("p%d", i%10), ""))
	}
	f.Create(pod("a", "short", ""))
	f.Delete(pod("a", "short", ""))
	last := f.ResourceVersion()
	// Once the store reflects the last RV, every notification was queued.
	eventually(t, 10*time.Second, "store at the last RV", func() bool {
		return s.Indexer().LastStoreSyncResourceVersion() == last
	})
	// 11 distinct keys were touched (10 live ones and the short-lived one).
	if p := reg.pendingCount(); p > 11 {
		t.Fatalf("stuck handler holds %d pending keys for 11 distinct keys", p)
	}
	close(stuck.block)
	caughtUp := func() bool {
		for i := range 10 {
			key := fmt.Sprintf("a/p%d", i)
			evs := stuck.forKey(key)
			o, _, _ := s.GetStore().GetByKey(key)
			if len(evs) == 0 || !strings.Contains(evs[len(evs)-1], describe(o)) {
				return false
			}
		}
		return true
	}
	eventually(t, 10*time.Second, "stuck handler caught up", caughtUp)
	// Per key: the initial add (one was in flight, the others coalesced
	// with their updates into one add), then at most one update to the newest
	// state. The short-lived key is delivered as its add, then its delete.
	for i := range 10 {
		key := fmt.Sprintf("a/p%d", i)
		evs := stuck.forKey(key)
		if len(evs) == 0 || len(evs) > 2 || !strings.HasPrefix(evs[0], "add "+key) {
			t.Fatalf("%s: %q", key, evs)
		}
		o, _, _ := s.GetStore().GetByKey(key)
		if !strings.Contains(evs[len(evs)-1], describe(o)) {
			t.Fatalf("%s: last event %q is not the newest state %s", key, evs[len(evs)-1], describe(o))
		}
	}
	eventually(t, 10*time.Second, "the short-lived key's delete", func() bool { return len(stuck.forKey("a/short")) == 2 })
	evs := stuck.forKey("a/short")
	if !strings.HasPrefix(evs[0], "add a/short@") || !strings.HasPrefix(evs[1], "delete a/short@") {
		t.Fatalf("short-lived key: %q, want its add, then its delete", evs)
	}
}

func TestHandlerPanicIsContained(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.Create(pod("a", "p1", ""))
	f.Create(pod("a", "p2", ""))
	s := newPodInformer(f, Options{})
	rec := newRecorder()
	reg := addHandler(t, s, toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if obj.(*corev1.Pod).Name == "p1" {
				panic("boom")
			}
			rec.OnAdd(obj, initial)
		},
		UpdateFunc: rec.OnUpdate,
	})
	startInformer(t, s)
	waitSynced(t, reg.HasSyncedChecker())
	f.Update(pod("a", "p1", ""))
	eventually(t, 10*time.Second, "update after panic", func() bool { return len(rec.forKey("a/p1")) == 1 })
	equalStrings(t, "p1", rec.forKey("a/p1"), []string{"update a/p1@4 from 2"})
	equalStrings(t, "p2", rec.forKey("a/p2"), []string{"add a/p2@3 initial"})
	if reg.panicCount() != 1 {
		t.Fatalf("Panics = %d, want 1", reg.panicCount())
	}
}

func TestCrashOnHandlerPanicRepanics(t *testing.T) {
	s := newPodInformer(informertest.New(&corev1.Pod{}), Options{CrashOnHandlerPanic: true})
	reg := newRegistration(s, toolscache.ResourceEventHandlerFuncs{AddFunc: func(any) { panic("boom") }}, 0,
		logr.Discard())
	defer func() {
		if p := recover(); p != "boom" {
			t.Fatalf("recovered %v, want boom", p)
		}
	}()
	reg.deliver("a/x", notification{kind: noteAdd, newObj: pod("a", "x", "1")})
	t.Fatal("deliver returned")
}

func TestRemoveEventHandlerIsIdempotentAndStopsDelivery(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	s := newPodInformer(f, Options{})
	rec := newRecorder()
	reg := addHandler(t, s, rec)
	keep := newRecorder()
	keepReg := addHandler(t, s, keep)
	startInformer(t, s)
	waitSynced(t, keepReg.HasSyncedChecker())
	f.Create(pod("a", "p1", ""))
	eventually(t, 10*time.Second, "first add", func() bool { return rec.count() == 1 && keep.count() == 1 })
	must(t, s.RemoveEventHandler(reg))
	must(t, s.RemoveEventHandler(reg))
	waitClosed(t, reg.Stopped(), 5*time.Second, "handler goroutine to exit")
	f.Create(pod("a", "p2", ""))
	eventually(t, 10*time.Second, "kept handler got p2", func() bool { return keep.count() == 2 })
	if rec.count() != 1 {
		t.Fatalf("removed handler got %q", rec.all())
	}
	other := newPodInformer(f, Options{})
	if err := other.RemoveEventHandler(keepReg); err == nil {
		t.Fatal("removing another informer's registration succeeded")
	}
}

func TestRunOnlyOnceAndNoHandlersAfterStop(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	s := newPodInformer(f, Options{})
	run := startInformer(t, s)
	waitSynced(t, s.HasSyncedChecker())
	// A second Run returns at once.
	second := make(chan struct{})
	go func() { s.Run(make(chan struct{})); close(second) }()
	waitClosed(t, second, 5*time.Second, "second Run to return")
	if s.IsStopped() {
		t.Fatal("stopped while running")
	}
	run.stop(t)
	if !s.IsStopped() {
		t.Fatal("IsStopped false after Run returned")
	}
	if _, err := s.AddEventHandler(newRecorder()); err == nil {
		t.Fatal("AddEventHandler after stop succeeded")
	}
}

func TestSettersFailAfterStart(t *testing.T) {
	s := newPodInformer(informertest.New(&corev1.Pod{}), Options{})
	must(t, s.SetTransform(func(o any) (any, error) { return o, nil }))
	must(t, s.SetWatchErrorHandler(func(*toolscache.Reflector, error) {}))
	startInformer(t, s)
	eventually(t, 5*time.Second, "started", func() bool { return s.getReflector() != nil })
	if s.SetTransform(nil) == nil {
		t.Error("SetTransform after start succeeded")
	}
	if s.SetWatchErrorHandler(func(*toolscache.Reflector, error) {}) == nil {
		t.Error("SetWatchErrorHandler after start succeeded")
	}
	if s.SetWatchErrorHandlerWithContext(func(context.Context, *toolscache.Reflector, error) {}) == nil {
		t.Error("SetWatchErrorHandlerWithContext after start succeeded")
	}
}

func TestTransformAppliedOnceToEveryReceivedObject(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.Create(pod("a", "listed", ""))
	var mu sync.Mutex
	calls := map[string]int{}
	s := newPodInformer(f, Options{Transform: func(obj any) (any, error) {
		p := obj.(*corev1.Pod)
		mu.Lock()
		calls[p.Name+"@"+p.ResourceVersion]++
		mu.Unlock()
		p.Annotations = map[string]string{"transformed": "yes"}
		return p, nil
	}})
	rec := newRecorder()
	reg := addHandler(t, s, rec)
	startInformer(t, s)
	waitSynced(t, reg.HasSyncedChecker())
	f.Create(pod("a", "watched", ""))
	f.Delete(pod("a", "listed", ""))
	eventually(t, 10*time.Second, "3 events", func() bool { return rec.count() == 3 })
	for _, o := range s.GetStore().List() {
		if o.(*corev1.Pod).Annotations["transformed"] != "yes" {
			t.Fatalf("stored object not transformed: %s", describe(o))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(calls) != "map[listed@2:1 listed@4:1 watched@3:1]" {
		t.Fatalf("transform calls = %v", calls)
	}
}

func TestRelistDeletesVanishedObjectsWithTombstones(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.ScriptList(
		informertest.ListResponse{Items: items(pod("a", "p1", "5"), pod("a", "p2", "6"), pod("a", "p3", "7")),
			ResourceVersion: "10"},
		informertest.ListResponse{Items: items(pod("a", "p1", "5"), pod("a", "p3", "12")), ResourceVersion: "20"},
	)
	f.ScriptWatch(
		informertest.WatchResponse{Events: []watch.Event{informertest.StatusEvent(informertest.ErrExpired())}},
		informertest.WatchResponse{},
	)
	gate := make(chan struct{})
	s := newPodInformer(&gatedLW{Fake: f, beforeList: 2, gate: gate}, Options{})
	rec := newRecorder()
	reg := addHandler(t, s, rec)
	startInformer(t, s)
	waitSynced(t, reg.HasSyncedChecker())
	close(gate) // the relist may proceed now that the initial list was handled
	eventually(t, 10*time.Second, "relist applied", func() bool { return rec.count() == 5 })
	// p1 was relisted unchanged (same RV): not delivered to a non-resync handler.
	equalStrings(t, "p1", rec.forKey("a/p1"), []string{"add a/p1@5 initial"})
	equalStrings(t, "p2", rec.forKey("a/p2"), []string{"add a/p2@6 initial", "delete tombstone(a/p2@6)"})
	equalStrings(t, "p3", rec.forKey("a/p3"), []string{"add a/p3@7 initial", "update a/p3@12 from 7"})
	equalStrings(t, "store", storeContent(s), []string{"a/p1@5", "a/p3@12"})
	eventually(t, 5*time.Second, "store RV", func() bool { return s.Indexer().LastStoreSyncResourceVersion() == "20" })
}

// countingTransform returns a transform that marks each pod and counts its
// calls per name@resourceVersion, and a function returning those counts.
func countingTransform() (toolscache.TransformFunc, func() string) {
	var mu sync.Mutex
	calls := map[string]int{}
	transform := func(obj any) (any, error) {
		p := obj.(*corev1.Pod)
		mu.Lock()
		calls[p.Name+"@"+p.ResourceVersion]++
		mu.Unlock()
		p.Annotations = map[string]string{"transformed": "yes"}
		return p, nil
	}
	return transform, func() string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprint(calls)
	}
}

// The transform is the Reflector's, applied to what it receives: a relist's
// tombstone carries the stored (transformed) object, not transformed again.
func TestTransformNotAppliedToRelistTombstones(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.ScriptList(
		informertest.ListResponse{Items: items(pod("a", "p1", "5"), pod("a", "p2", "6")), ResourceVersion: "10"},
		informertest.ListResponse{Items: items(pod("a", "p1", "5")), ResourceVersion: "20"},
	)
	f.ScriptWatch(
		informertest.WatchResponse{Events: []watch.Event{informertest.StatusEvent(informertest.ErrExpired())}},
		informertest.WatchResponse{},
	)
	gate := make(chan struct{})
	transform, calls := countingTransform()
	s := newPodInformer(&gatedLW{Fake: f, beforeList: 2, gate: gate}, Options{Transform: transform})
	rec := newRecorder()
	reg := addHandler(t, s, rec)
	startInformer(t, s)
	waitSynced(t, reg.HasSyncedChecker())
	close(gate)
	eventually(t, 10*time.Second, "relist applied", func() bool { return rec.count() == 3 })
	equalStrings(t, "p2", rec.forKey("a/p2"), []string{"add a/p2@6 initial", "delete tombstone(a/p2@6)"})
	if got := calls(); got != "map[p1@5:2 p2@6:1]" {
		t.Fatalf("transform calls = %s", got)
	}
}

// A resync re-delivers the stored object: the transform does not run again.
func TestTransformNotAppliedToResyncs(t *testing.T) {
	fc := clocktesting.NewFakeClock(time.Now())
	f := informertest.New(&corev1.Pod{})
	f.Create(pod("a", "p1", ""))
	transform, calls := countingTransform()
	s := newPodInformer(f, Options{Clock: fc, ResyncPeriod: time.Second, Transform: transform})
	rec := newRecorder()
	reg := addHandler(t, s, rec)
	startInformer(t, s)
	waitSynced(t, reg.HasSyncedChecker())
	eventually(t, 5*time.Second, "resync timer armed", func() bool { return fc.Waiters() == 2 })
	fc.Step(time.Second)
	eventually(t, 5*time.Second, "resync", func() bool { return rec.count() == 2 })
	equalStrings(t, "events", rec.all(), []string{"add a/p1@2 initial", "update a/p1@2 from 2"})
	if got := calls(); got != "map[p1@2:1]" {
		t.Fatalf("transform calls = %s", got)
	}
}

func TestLastErrorIsForbiddenUntilListSucceeds(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.ScriptList(informertest.ListResponse{Err: informertest.ErrForbidden()})
	gate := make(chan struct{})
	lw := &gatedLW{Fake: f, beforeList: 2, gate: gate}
	var handled []error
	var mu sync.Mutex
	s := newPodInformer(lw, Options{WatchErrorHandler: func(_ context.Context, r *toolscache.Reflector, err error) {
		mu.Lock()
		handled = append(handled, err)
		mu.Unlock()
	}})
	startInformer(t, s)
	eventually(t, 10*time.Second, "LastError", func() bool { return s.LastError() != nil })
	err := s.LastError()
	var lwe *ListWatchError
	if !apierrors.IsForbidden(err) || !errors.As(err, &lwe) || lwe.Reason != ReasonForbidden {
		t.Fatalf("LastError = %v", err)
	}
	if s.HasSynced() {
		t.Fatal("synced despite a forbidden list")
	}
	close(gate)
	waitSynced(t, s.HasSyncedChecker())
	eventually(t, 5*time.Second, "LastError cleared", func() bool { return s.LastError() == nil })
	mu.Lock()
	defer mu.Unlock()
	if len(handled) != 1 || !apierrors.IsForbidden(handled[0]) {
		t.Fatalf("WatchErrorHandler got %v", handled)
	}
}

func TestInformerLogsSyncedOnce(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.Create(pod("a", "p1", ""))
	f.Create(pod("a", "p2", ""))
	var mu sync.Mutex
	var lines []string
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		lines = append(lines, args)
		mu.Unlock()
	}, funcr.Options{})
	s := newPodInformer(f, Options{Name: "Pod.v1.", Logger: log, PageSize: 1})
	startInformer(t, s)
	waitSynced(t, s.HasSyncedChecker())
	eventually(t, 5*time.Second, "synced log line", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range lines {
			if strings.Contains(l, `"msg"="informer synced"`) {
				return true
			}
		}
		return false
	})
	mu.Lock()
	defer mu.Unlock()
	var synced []string
	for _, l := range lines {
		if strings.Contains(l, `"msg"="informer synced"`) {
			synced = append(synced, l)
		}
	}
	if len(synced) != 1 {
		t.Fatalf("synced lines: %q", synced)
	}
	for _, want := range []string{`"informer"="Pod.v1."`, `"objects"=2`, `"pages"=2`, `"seconds"=`} {
		if !strings.Contains(synced[0], want) {
			t.Fatalf("line %s lacks %s", synced[0], want)
		}
	}
}

func TestPerHandlerResyncPeriods(t *testing.T) {
	fc := clocktesting.NewFakeClock(time.Now())
	f := informertest.New(&corev1.Pod{})
	f.Create(pod("a", "p1", ""))
	s := newPodInformer(f, Options{Clock: fc, ResyncPeriod: 3 * time.Second})
	every1 := newRecorder()
	every3 := newRecorder()
	never := newRecorder()
	r1, err := s.AddEventHandlerWithResyncPeriod(every1, time.Second)
	must(t, err)
	r3 := addHandler(t, s, every3) // informer default: 3s
	zero := time.Duration(0)
	rn, err := s.AddEventHandlerWithOptions(never, toolscache.HandlerOptions{ResyncPeriod: &zero})
	must(t, err)
	startInformer(t, s)
	for _, r := range []toolscache.ResourceEventHandlerRegistration{r1, r3, rn} {
		waitSynced(t, r.HasSyncedChecker())
	}
	// Waiters: the watch's stall timer and the resync timer.
	armed := func() bool { return fc.Waiters() == 2 }
	for step := 1; step <= 3; step++ {
		eventually(t, 5*time.Second, "resync timer armed", armed)
		fc.Step(time.Second)
		eventually(t, 5*time.Second, fmt.Sprintf("resync %d", step), func() bool { return every1.count() == 1+step })
	}
	eventually(t, 5*time.Second, "3s handler resynced", func() bool { return every3.count() == 2 })
	//nolint:goconst // expected values are spelled out so the test reads as its specification
	equalStrings(t, "every 1s", every1.all(),
		[]string{"add a/p1@2 initial", "update a/p1@2 from 2", "update a/p1@2 from 2", "update a/p1@2 from 2"})
	equalStrings(t, "every 3s", every3.all(), []string{"add a/p1@2 initial", "update a/p1@2 from 2"})
	equalStrings(t, "never", never.all(), []string{"add a/p1@2 initial"})
}

func TestGetControllerAndNewInformer(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.Create(pod("a", "p1", ""))
	inf := NewInformer(f, &corev1.Pod{}, 0,
		toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	ctrl := inf.GetController()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); ctrl.RunWithContext(ctx) }()
	waitSynced(t, ctrl.HasSyncedChecker())
	if !ctrl.HasSynced() || ctrl.LastSyncResourceVersion() != "2" {
		t.Fatalf("HasSynced=%v LastSyncResourceVersion=%q", ctrl.HasSynced(), ctrl.LastSyncResourceVersion())
	}
	objs, err := inf.GetIndexer().ByIndex(toolscache.NamespaceIndex, "a")
	must(t, err)
	//nolint:goconst // expected values are spelled out so the test reads as its specification
	equalStrings(t, "ns a", describeAll(objs), []string{"a/p1@2"})
	cancel()
	waitClosed(t, done, 10*time.Second, "controller to stop")
	if !inf.IsStopped() {
		t.Fatal("not stopped")
	}
}

func TestAddIndexersOnRunningInformerBackfills(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.Create(pod("a", "p1", "", appWeb))
	s := newPodInformer(f, Options{})
	startInformer(t, s)
	waitSynced(t, s.HasSyncedChecker())
	must(t, s.AddIndexers(toolscache.Indexers{appLabel: labelIndex(appLabel)}))
	f.Create(pod("b", "p2", "", appWeb))
	eventually(t, 10*time.Second, "p2 stored", func() bool { return s.Indexer().Len() == 2 })
	objs, err := s.GetIndexer().ByIndex(appLabel, "web")
	must(t, err)
	equalStrings(t, appWeb, describeAll(objs), []string{"a/p1@2", "b/p2@3"})
	if err := s.AddIndexers(toolscache.Indexers{appLabel: labelIndex(appLabel)}); err == nil {
		t.Fatal("duplicate index accepted")
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sortStrings(out)
	return out
}

func TestHandlerAddedAfterStartGetsItsOwnShorterResyncPeriod(t *testing.T) {
	fc := clocktesting.NewFakeClock(time.Now())
	f := informertest.New(&corev1.Pod{})
	f.Create(pod("a", "p1", ""))
	s := newPodInformer(f, Options{Clock: fc}) // no resync at start
	startInformer(t, s)
	waitSynced(t, s.HasSyncedChecker())
	eventually(t, 5*time.Second, "watch stall timer armed", func() bool { return fc.Waiters() == 1 })
	rec := newRecorder()
	reg, err := s.AddEventHandlerWithResyncPeriod(rec, time.Second)
	must(t, err)
	waitSynced(t, reg.HasSyncedChecker())
	eventually(t, 5*time.Second, "resync timer armed", func() bool { return fc.Waiters() == 2 })
	fc.Step(time.Second)
	eventually(t, 5*time.Second, "resync", func() bool { return rec.count() == 2 })
	equalStrings(t, "events", rec.all(), []string{"add a/p1@2 initial", "update a/p1@2 from 2"})
}
