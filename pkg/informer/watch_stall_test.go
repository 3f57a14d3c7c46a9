package informer

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/deltacache/deltacache/pkg/informer/informertest"
)

// With nothing configured, a watch that stays open and delivers nothing (a proxy
// that keeps the connection and forwards nothing) is abandoned after
// defaultWatchStallTimeout and re-opened from the last resourceVersion, without a
// relist; the abandonment is logged once and counted.
func TestSilentWatchIsReopenedFromTheLastRVAfterTheDefaultStallTimeout(t *testing.T) {
	m, reg := newMetricsRegistry(t)
	f := informertest.New(&corev1.Pod{})
	f.Create(pod("a", "p1", ""))
	fc := clocktesting.NewFakeClock(time.Now())
	logs := &verboseLogs{}
	s := newPodInformer(f, Options{Metrics: m, Clock: fc, Logger: *logs.logger()})
	startInformer(t, s)
	waitSynced(t, s.HasSyncedChecker())
	first, err := f.WaitForWatch(testCtx(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	p2 := f.Create(pod("a", "p2", ""))
	eventually(t, 5*time.Second, "p2 stored", func() bool {
		_, ok, _ := s.GetStore().GetByKey("a/p2")
		return ok
	})
	lastRV := p2.(*corev1.Pod).ResourceVersion
	eventually(t, 5*time.Second, "the watch waiting on the clock", fc.HasWaiters)

	// Just short of the bound: the watch stays.
	fc.Step(defaultWatchStallTimeout - time.Second)
	time.Sleep(50 * time.Millisecond)
	if n := len(f.Watches()); n != 1 || first.IsStopped() {
		t.Fatalf("%d watches (first stopped: %t) before the stall timeout, want the first one open", n, first.IsStopped())
	}

	fc.Step(time.Second)
	if _, err := f.WaitForWatch(testCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	if !first.IsStopped() {
		t.Error("the silent watch was not stopped")
	}
	watches := f.RequestsOf("watch")
	if len(watches) != 2 || watches[1].ResourceVersion != lastRV || !watches[1].AllowWatchBookmarks {
		t.Errorf("watch requests %+v, want a second watch from rv %s with bookmarks", watches, lastRV)
	}
	if lists := f.RequestsOf("list"); len(lists) != 1 {
		t.Errorf("%d list requests, want 1 (no relist)", len(lists))
	}
	if got := metricValue(t, reg, podLabels, "deltacache_informer_errors_total{op=watch,reason=WatchStalled}"); got != 1 {
		t.Errorf("WatchStalled errors counted: %v, want 1", got)
	}
	const msg = "watch stalled: no event or bookmark; re-watching from the last resourceVersion"
	eventually(t, 5*time.Second, "the stall logged", func() bool { return len(logs.withMsg(msg)) > 0 })
	if lines := logs.withMsg(msg); len(lines) != 1 {
		t.Errorf("stall logged %d times, want once:\n%v", len(lines), lines)
	}
}

// A negative WatchStallTimeout turns stall detection off: the watch is kept until
// its own server-side timeout and a minute.
func TestNegativeWatchStallTimeoutKeepsASilentWatch(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	fc := clocktesting.NewFakeClock(time.Now())
	s := newPodInformer(f, Options{Clock: fc, WatchStallTimeout: -1, MinWatchTimeout: time.Hour})
	startInformer(t, s)
	waitSynced(t, s.HasSyncedChecker())
	first, err := f.WaitForWatch(testCtx(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the watch waiting on the clock", fc.HasWaiters)
	fc.Step(10 * defaultWatchStallTimeout)
	time.Sleep(50 * time.Millisecond)
	if n := len(f.Watches()); n != 1 || first.IsStopped() {
		t.Fatalf("%d watches (first stopped: %t), want the first one open", n, first.IsStopped())
	}
}
