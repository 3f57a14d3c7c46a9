package informer

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/deltacache/deltacache/pkg/informer/informertest"

	"github.com/deltacache/deltacache/internal/testenv"
)

var podLabels = MetricLabels{Kind: podKind, Shape: ShapeTyped}

// newMetricsRegistry returns a fresh Metrics registered with a fresh registry.
func newMetricsRegistry(t *testing.T) (*Metrics, *prometheus.Registry) {
	t.Helper()
	m := NewMetrics()
	reg := prometheus.NewPedanticRegistry()
	must(t, reg.Register(m))
	return m, reg
}

// gathered returns every series of reg carrying labels, keyed by the metric
// name and its other labels ("name{k=v,...}"); histograms appear as
// name_count and name_sum.
func gathered(t *testing.T, reg *prometheus.Registry, labels MetricLabels) map[string]float64 {
	t.Helper()
	return testenv.Series(t, reg, labels.prometheusLabels())
}

// without returns series minus the given names (values that depend on time).
func withoutSeries(series map[string]float64, names ...string) map[string]float64 {
	out := maps.Clone(series)
	for _, n := range names {
		delete(out, n)
	}
	return out
}

func equalSeries(t *testing.T, got, want map[string]float64) {
	t.Helper()
	if !maps.Equal(got, want) {
		keys := slices.Sorted(maps.Keys(got))
		for k := range want {
			if _, ok := got[k]; !ok {
				keys = append(keys, k)
			}
		}
		var diff []string
		for _, k := range keys {
			g, gok := got[k]
			w, wok := want[k]
			if g != w || gok != wok {
				diff = append(diff, fmt.Sprintf("  %s: got %v (present %v), want %v (present %v)", k, g, gok, w, wok))
			}
		}
		t.Fatalf("series differ:\n%s", strings.Join(diff, "\n"))
	}
}

func metricValue(t *testing.T, reg *prometheus.Registry, labels MetricLabels, name string) float64 {
	t.Helper()
	return gathered(t, reg, labels)[name]
}

func TestMetricsCountListsWatchesEventsRelistsAndErrorsExactly(t *testing.T) {
	m, reg := newMetricsRegistry(t)
	f := informertest.New(&corev1.Pod{})
	p1 := f.Create(pod("a", "p1", ""))
	f.Create(pod("a", "p2", ""))
	p3 := f.Create(pod("a", "p3", ""))
	f.ScriptList(informertest.ListResponse{Err: informertest.ErrForbidden()})
	s := newPodInformer(f, Options{Metrics: m, PageSize: 2})
	startInformer(t, s)
	waitSynced(t, s.HasSyncedChecker())
	eventually(t, 5*time.Second, "watch started", func() bool {
		return metricValue(t, reg, podLabels, "deltacache_informer_watch_starts_total") == 1
	})

	f.Create(pod("a", "p4", ""))
	f.Update(pod("a", "p1", p1.(*corev1.Pod).ResourceVersion, "x=y"))
	f.Delete(p3)
	f.SendBookmark()
	eventually(t, 5*time.Second, "events and bookmark counted", func() bool {
		return metricValue(t, reg, podLabels, "deltacache_informer_watch_bookmarks_total") == 1
	})
	// 410: the live watch gets an Expired ERROR event; the informer relists.
	f.Compact()
	// Counters are read after the gauges in a scrape: wait for the relist
	// first, then for the DeltaFIFO to drain.
	eventually(t, 5*time.Second, "second watch started", func() bool {
		return metricValue(t, reg, podLabels, "deltacache_informer_watch_starts_total") == 2
	})
	eventually(t, 5*time.Second, "DeltaFIFO drained", func() bool {
		return metricValue(t, reg, podLabels, "deltacache_informer_delta_fifo_depth") == 0
	})

	got := withoutSeries(gathered(t, reg, podLabels),
		"deltacache_informer_list_duration_seconds_sum", "deltacache_informer_watch_duration_seconds_sum",
		"deltacache_informer_initial_sync_duration_seconds", "deltacache_informer_last_event_age_seconds")
	rv, _ := parseRV(f.ResourceVersion())
	equalSeries(t, got, map[string]float64{
		"deltacache_informer_list_requests_total":                             5, // forbidden, 2 pages, 2 pages
		"deltacache_informer_list_pages_total":                                4,
		"deltacache_informer_list_objects_total":                              6,
		"deltacache_informer_list_duration_seconds_count":                     2,
		"deltacache_informer_watch_starts_total":                              2,
		"deltacache_informer_watch_duration_seconds_count":                    1, // the second is open
		"deltacache_informer_watch_events_total{type=ADDED}":                  1,
		"deltacache_informer_watch_events_total{type=MODIFIED}":               1,
		"deltacache_informer_watch_events_total{type=DELETED}":                1,
		"deltacache_informer_watch_bookmarks_total":                           1,
		"deltacache_informer_relists_total{cause=error}":                      1,
		"deltacache_informer_relists_total{cause=drift}":                      0,
		"deltacache_informer_relists_total{cause=shard}":                      0,
		"deltacache_informer_relists_total{cause=corrupt}":                    0,
		"deltacache_informer_relists_total{cause=expired}":                    1,
		"deltacache_informer_relists_total{cause=too_large_resource_version}": 0,
		"deltacache_informer_errors_total{op=list,reason=Forbidden}":          1,
		"deltacache_informer_errors_total{op=watch,reason=Expired}":           1,
		"deltacache_informer_objects":                                         3,
		"deltacache_informer_stored_objects{form=decoded}":                    3,
		"deltacache_informer_stored_objects{form=encoded}":                    0,
		"deltacache_informer_stored_bytes":                                    0,
		"deltacache_informer_storage_codec_errors_total{op=encode}":           0,
		"deltacache_informer_storage_codec_errors_total{op=decode}":           0,
		"deltacache_informer_synced":                                          1,
		"deltacache_informer_delta_fifo_depth":                                0,
		"deltacache_informer_last_sync_resource_version":                      float64(rv),
	})
}

// clockSteppingLW advances a fake clock by step on every LIST request.
type clockSteppingLW struct {
	*informertest.Fake
	clock *clocktesting.FakeClock
	step  time.Duration
}

func (l clockSteppingLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	l.clock.Step(l.step)
	return l.Fake.ListWithContext(ctx, opts)
}

func TestMetricsInitialSyncDurationAndLastEventAgeFollowTheClock(t *testing.T) {
	m, reg := newMetricsRegistry(t)
	fc := clocktesting.NewFakeClock(time.Unix(1000, 0))
	f := informertest.New(&corev1.Pod{})
	f.Create(pod("a", "p1", ""))
	f.Create(pod("a", "p2", ""))
	s := newPodInformer(clockSteppingLW{f, fc, 2 * time.Second}, Options{Metrics: m, PageSize: 1, Clock: fc})
	if !s.LastActivity().IsZero() {
		t.Fatalf("LastActivity before Run = %v, want zero", s.LastActivity())
	}
	startInformer(t, s)
	waitSynced(t, s.HasSyncedChecker())
	eventually(t, 5*time.Second, "watch started", func() bool {
		return metricValue(t, reg, podLabels, "deltacache_informer_watch_starts_total") == 1
	})
	// The sync duration is recorded after HasSynced turns true, on the
	// informer's goroutine: wait for it before the clock moves (CI saw 0).
	eventually(t, 5*time.Second, "initial sync duration recorded", func() bool {
		return metricValue(t, reg, podLabels, "deltacache_informer_initial_sync_duration_seconds") != 0
	})
	// Two pages, 2s each; the watch opened at 1004.
	if got, want := s.LastActivity(), time.Unix(1004, 0); !got.Equal(want) {
		t.Fatalf("LastActivity = %v, want %v", got, want)
	}
	fc.Step(7 * time.Second)
	got := gathered(t, reg, podLabels)
	if got["deltacache_informer_initial_sync_duration_seconds"] != 4 ||
		got["deltacache_informer_last_event_age_seconds"] != 7 ||
		got["deltacache_informer_list_duration_seconds_sum"] != 4 {
		t.Fatalf("sync duration %v, last event age %v, list duration %v; want 4, 7, 4",
			got["deltacache_informer_initial_sync_duration_seconds"], got["deltacache_informer_last_event_age_seconds"],
			got["deltacache_informer_list_duration_seconds_sum"])
	}
	f.SendBookmark()
	eventually(t, 5*time.Second, "bookmark counted", func() bool {
		return metricValue(t, reg, podLabels, "deltacache_informer_watch_bookmarks_total") == 1
	})
	fc.Step(3 * time.Second)
	if got := metricValue(t, reg, podLabels, "deltacache_informer_last_event_age_seconds"); got != 3 {
		t.Fatalf("last event age after a bookmark and 3s = %v, want 3", got)
	}
}

// stuckHandler blocks every call until release is closed.
type stuckHandler struct{ release chan struct{} }

func (h stuckHandler) OnAdd(any, bool)   { <-h.release }
func (h stuckHandler) OnUpdate(any, any) { <-h.release }
func (h stuckHandler) OnDelete(any)      { <-h.release }

func TestMetricsPerHandlerPendingKeysPanicsAndCalls(t *testing.T) {
	m, reg := newMetricsRegistry(t)
	f := informertest.New(&corev1.Pod{})
	for _, name := range []string{"p1", "p2", "p3"} {
		f.Create(pod("a", name, ""))
	}
	s := newPodInformer(f, Options{Metrics: m})
	panicky := addHandler(t, s, toolscache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if obj.(*corev1.Pod).Name == "p2" {
			panic("boom")
		}
	}})
	slow := addHandler(t, s, stuckHandler{release: make(chan struct{})})
	startInformer(t, s)
	waitSynced(t, panicky.HasSyncedChecker())

	// The slow handler is stuck in its first call; two keys wait.
	eventually(t, 5*time.Second, "two pending keys", func() bool {
		return metricValue(t, reg, podLabels, "deltacache_handler_pending_keys{handler=informer.stuckHandler}") == 2
	})
	// It has not returned from its first call: none of its 3 initial objects is delivered.
	stuck := gathered(t, reg, podLabels)
	for name, want := range map[string]float64{
		"deltacache_handler_synced{handler=informer.stuckHandler}":                              0,
		"deltacache_handler_initial_objects{handler=informer.stuckHandler}":                     3,
		"deltacache_handler_initial_objects_delivered{handler=informer.stuckHandler}":           0,
		"deltacache_handler_synced{handler=cache.ResourceEventHandlerFuncs}":                    1,
		"deltacache_handler_initial_objects_delivered{handler=cache.ResourceEventHandlerFuncs}": 3,
	} {
		if got, ok := stuck[name]; !ok || got != want {
			t.Errorf("while stuck, %s = %v (present %t), want %v", name, got, ok, want)
		}
	}
	close(slow.handler.(stuckHandler).release)
	waitSynced(t, slow.HasSyncedChecker())
	eventually(t, 5*time.Second, "slow handler done", func() bool {
		return metricValue(t, reg, podLabels,
			"deltacache_handler_processing_latency_seconds_count{handler=informer.stuckHandler}") == 3
	})

	got := gathered(t, reg, podLabels)
	handlerSeries := map[string]float64{}
	for k, v := range got {
		if strings.HasPrefix(k, "deltacache_handler_") && !strings.Contains(k, "_sum{") {
			handlerSeries[k] = v
		}
	}
	equalSeries(t, handlerSeries, map[string]float64{
		"deltacache_handler_pending_keys{handler=cache.ResourceEventHandlerFuncs}":                     0,
		"deltacache_handler_pending_keys{handler=informer.stuckHandler}":                               0,
		"deltacache_handler_panics_total{handler=cache.ResourceEventHandlerFuncs}":                     1,
		"deltacache_handler_panics_total{handler=informer.stuckHandler}":                               0,
		"deltacache_handler_processing_latency_seconds_count{handler=cache.ResourceEventHandlerFuncs}": 3,
		"deltacache_handler_processing_latency_seconds_count{handler=informer.stuckHandler}":           3,
		"deltacache_handler_synced{handler=cache.ResourceEventHandlerFuncs}":                           1,
		"deltacache_handler_synced{handler=informer.stuckHandler}":                                     1,
		"deltacache_handler_initial_objects{handler=cache.ResourceEventHandlerFuncs}":                  3,
		"deltacache_handler_initial_objects{handler=informer.stuckHandler}":                            3,
		"deltacache_handler_initial_objects_delivered{handler=cache.ResourceEventHandlerFuncs}":        3,
		"deltacache_handler_initial_objects_delivered{handler=informer.stuckHandler}":                  3,
	})
}

// clockHandler advances a fake clock by step inside every call.
type clockHandler struct {
	clock *clocktesting.FakeClock
	step  time.Duration
}

func (h clockHandler) OnAdd(any, bool)   { h.clock.Step(h.step) }
func (h clockHandler) OnUpdate(any, any) { h.clock.Step(h.step) }
func (h clockHandler) OnDelete(any)      { h.clock.Step(h.step) }

func TestMetricsHandlerLatencyIsTheDurationOfEachCall(t *testing.T) {
	m, reg := newMetricsRegistry(t)
	fc := clocktesting.NewFakeClock(time.Unix(1000, 0))
	f := informertest.New(&corev1.Pod{})
	f.Create(pod("a", "p1", ""))
	f.Create(pod("a", "p2", ""))
	s := newPodInformer(f, Options{Metrics: m, Clock: fc})
	reg1 := addHandler(t, s, clockHandler{clock: fc, step: 250 * time.Millisecond})
	startInformer(t, s)
	waitSynced(t, reg1.HasSyncedChecker())
	eventually(t, 5*time.Second, "both calls observed", func() bool {
		return metricValue(t, reg, podLabels,
			"deltacache_handler_processing_latency_seconds_count{handler=informer.clockHandler}") == 2
	})
	if got := metricValue(t, reg, podLabels,
		"deltacache_handler_processing_latency_seconds_sum{handler=informer.clockHandler}"); got != 0.5 {
		t.Fatalf("latency sum = %v, want 0.5", got)
	}
}

// gatedListLW blocks LIST requests until open is closed.
type gatedListLW struct {
	*informertest.Fake
	open chan struct{}
}

func (l gatedListLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	select {
	case <-l.open:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return l.Fake.ListWithContext(ctx, opts)
}

func TestMetricsOfInformersWithEqualLabelsAddUpAndVanishWithTheLast(t *testing.T) {
	m, reg := newMetricsRegistry(t)
	labels := MetricLabels{Group: "apps", Version: "v1", Kind: "Thing", Shape: ShapeTyped}
	f1 := informertest.New(&corev1.Pod{})
	f1.Create(pod(ns1, "p1", ""))
	f1.Create(pod(ns1, "p2", ""))
	f2 := informertest.New(&corev1.Pod{})
	for _, name := range []string{"p1", "p2", "p3"} {
		f2.Create(pod("ns2", name, ""))
	}
	gate := make(chan struct{})
	s1 := newPodInformer(f1, Options{Metrics: m, MetricLabels: labels})
	s2 := newPodInformer(gatedListLW{f2, gate}, Options{Metrics: m, MetricLabels: labels})
	run1 := startInformer(t, s1)
	waitSynced(t, s1.HasSyncedChecker())
	run2 := startInformer(t, s2)
	eventually(t, 5*time.Second, "second informer registered", func() bool {
		_, ok := gathered(t, reg, labels)["deltacache_informer_objects"]
		return ok && !s2.LastActivity().IsZero()
	})
	got := gathered(t, reg, labels)
	if got["deltacache_informer_objects"] != 2 || got["deltacache_informer_synced"] != 0 {
		t.Fatalf("while one informer lists: objects %v synced %v, want 2 and 0",
			got["deltacache_informer_objects"], got["deltacache_informer_synced"])
	}
	if _, ok := got["deltacache_informer_initial_sync_duration_seconds"]; ok {
		t.Fatal("initial sync duration reported before every informer synced")
	}
	close(gate)
	waitSynced(t, s2.HasSyncedChecker())
	eventually(t, 5*time.Second, "both synced", func() bool {
		got := gathered(t, reg, labels)
		return got["deltacache_informer_objects"] == 5 && got["deltacache_informer_synced"] == 1 &&
			got["deltacache_informer_list_objects_total"] == 5
	})

	run2.stop(t)
	if got := metricValue(t, reg, labels, "deltacache_informer_objects"); got != 2 {
		t.Fatalf("objects after stopping one informer = %v, want 2", got)
	}
	run1.stop(t)
	if got := gathered(t, reg, labels); len(got) != 0 {
		t.Fatalf("series left after every informer stopped: %v", got)
	}
}

func TestMetricLabelsDefaultToTheExampleObjectsKindAndShape(t *testing.T) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	typed := &corev1.Service{}
	typed.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Service"))
	for _, tc := range []struct {
		example runtime.Object
		given   MetricLabels
		want    MetricLabels
	}{
		{&corev1.Pod{}, MetricLabels{}, MetricLabels{Kind: podKind, Shape: ShapeTyped}},
		{typed, MetricLabels{}, MetricLabels{Version: "v1", Kind: "Service", Shape: ShapeTyped}},
		{u, MetricLabels{}, MetricLabels{Version: "v1", Kind: "Secret", Shape: ShapeUnstructured}},
		{meta, MetricLabels{}, MetricLabels{Version: "v1", Kind: "ConfigMap", Shape: ShapeMetadata}},
		{meta, MetricLabels{Group: "g", Version: "v2", Kind: "K"},
			MetricLabels{Group: "g", Version: "v2", Kind: "K", Shape: ShapeMetadata}},
	} {
		s := NewSharedIndexInformer(informertest.New(tc.example), tc.example, Options{MetricLabels: tc.given})
		if got := s.MetricLabels(); got != tc.want {
			t.Errorf("%T %+v: labels %+v, want %+v", tc.example, tc.given, got, tc.want)
		}
	}
}

type genericHandler[T any] struct {
	toolscache.ResourceEventHandlerFuncs
}

func TestHandlerLabelIsTheGoTypeWithPackageNamesOnly(t *testing.T) {
	for _, tc := range []struct {
		h    toolscache.ResourceEventHandler
		want string
	}{
		{toolscache.ResourceEventHandlerFuncs{}, "cache.ResourceEventHandlerFuncs"},
		{&toolscache.ResourceEventHandlerFuncs{}, "*cache.ResourceEventHandlerFuncs"},
		{&genericHandler[*corev1.Pod]{}, "*informer.genericHandler[*v1.Pod]"},
	} {
		if got := defaultHandlerLabel(tc.h); got != tc.want {
			t.Errorf("defaultHandlerLabel(%T) = %q, want %q", tc.h, got, tc.want)
		}
	}
}

// namedHandler names itself (NamedHandler).
type namedHandler struct {
	toolscache.ResourceEventHandlerFuncs
	name string
}

func (h namedHandler) HandlerName() string { return h.name }

// Every controller-runtime controller registers a handler of the same Go type:
// registrations of one type are still one series each ("#2" for the second),
// a NamedHandler is named by itself, Options.HandlerLabel overrides both, and
// a removed registration's label is free for the next.
func TestMetricsEachRegistrationIsItsOwnSeriesEvenWithTheSameGoType(t *testing.T) {
	m, reg := newMetricsRegistry(t)
	f := informertest.New(&corev1.Pod{})
	f.Create(pod("a", "p1", ""))
	f.Create(pod("a", "p2", ""))
	s := newPodInformer(f, Options{Metrics: m, HandlerLabel: func(h toolscache.ResourceEventHandler) string {
		if _, ok := h.(*toolscache.ResourceEventHandlerFuncs); ok {
			return "by-option"
		}
		return ""
	}})
	first := addHandler(t, s, toolscache.ResourceEventHandlerFuncs{})
	second := addHandler(t, s, toolscache.ResourceEventHandlerFuncs{})
	named := addHandler(t, s, namedHandler{name: "controller-a"})
	byOption := addHandler(t, s, &toolscache.ResourceEventHandlerFuncs{})
	startInformer(t, s)
	for _, r := range []*HandlerRegistration{first, second, named, byOption} {
		waitSynced(t, r.HasSyncedChecker())
	}
	labels := []string{"cache.ResourceEventHandlerFuncs", "cache.ResourceEventHandlerFuncs#2", "controller-a", "by-option"}
	equalStrings(t, "labels",
		[]string{first.MetricLabel(), second.MetricLabel(), named.MetricLabel(), byOption.MetricLabel()}, labels)
	const calls = "deltacache_handler_processing_latency_seconds_count{handler=%s}"
	eventually(t, 5*time.Second, "two calls per registration", func() bool {
		got := gathered(t, reg, podLabels)
		for _, l := range labels {
			if got[fmt.Sprintf(calls, l)] != 2 {
				return false
			}
		}
		return true
	})
	must(t, s.RemoveEventHandler(first))
	third := addHandler(t, s, toolscache.ResourceEventHandlerFuncs{})
	if got := third.MetricLabel(); got != "cache.ResourceEventHandlerFuncs" {
		t.Errorf("label after the first registration was removed = %q, want the free base label", got)
	}
}

func TestRegisterMetricsTwiceIsNotAnError(t *testing.T) {
	r := prometheus.NewRegistry()
	must(t, RegisterMetrics(r))
	must(t, RegisterMetrics(r))
}
