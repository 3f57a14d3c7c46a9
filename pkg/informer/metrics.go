package informer

import (
	"errors"
	"maps"
	"reflect"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// Values of the "shape" label: the Go type an informer lists, stores and hands
// out.
const (
	ShapeTyped        = "typed"        // a Go type of a Scheme (e.g. *corev1.Pod)
	ShapeUnstructured = "unstructured" // *unstructured.Unstructured
	ShapeMetadata     = "metadata"     // *metav1.PartialObjectMetadata
)

// Values of the "cause" label of deltacache_informer_relists_total.
const (
	// relistCauseExpired: the resourceVersion was too old (410 Expired/Gone).
	relistCauseExpired = "expired"
	// relistCauseTooLargeResourceVersion: the server had not reached the
	// resourceVersion ("Too large resource version").
	relistCauseTooLargeResourceVersion = "too_large_resource_version"
	// relistCauseError: any other list or watch error, after backoff.
	relistCauseError = "error"
	// relistCauseDrift: the consistency check found the store different from
	// the server (see ConsistencyCheck).
	relistCauseDrift = "drift"
	// relistCauseShard: the shard selector changed (a slot moved to or
	// from this replica, or a namespace it owns appeared or went away).
	relistCauseShard = "shard"
	// relistCauseCorrupt: a stored record did not decode (its bytes were
	// damaged in memory, or the codec has a bug); the relist replaces it.
	relistCauseCorrupt = "corrupt"
)

// MetricLabels are the label values of an informer's series. Each must come
// from a bounded set — never a namespace or an object name: informers with
// equal labels, such as the per-namespace informers of one kind, add up into
// one set of series (see Metrics).
type MetricLabels struct {
	Group, Version, Kind string
	// Shape is ShapeTyped, ShapeUnstructured or ShapeMetadata.
	Shape string
}

var informerLabelNames = []string{"group", "version", "kind", "shape"}

func (l MetricLabels) values() []string { return []string{l.Group, l.Version, l.Kind, l.Shape} }

func (l MetricLabels) prometheusLabels() prometheus.Labels {
	return prometheus.Labels{"group": l.Group, "version": l.Version, "kind": l.Kind, "shape": l.Shape}
}

// metricLabelsFor completes labels from the example object: a missing kind
// is taken, with group and version, from the object's GroupVersionKind (the
// Go type name when the GVK is unset); a missing shape from its Go type.
func metricLabelsFor(labels MetricLabels, example runtime.Object) MetricLabels {
	if labels.Kind == "" && example != nil {
		gvk := example.GetObjectKind().GroupVersionKind()
		labels.Group, labels.Version, labels.Kind = gvk.Group, gvk.Version, gvk.Kind
		if labels.Kind == "" {
			t := reflect.TypeOf(example)
			for t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
			labels.Kind = t.Name()
		}
	}
	if labels.Shape == "" {
		switch example.(type) {
		case *unstructured.Unstructured:
			labels.Shape = ShapeUnstructured
		case *metav1.PartialObjectMetadata:
			labels.Shape = ShapeMetadata
		default:
			labels.Shape = ShapeTyped
		}
	}
	return labels
}

// Metrics is a prometheus.Collector for the pipeline of every informer that
// reports to it (Options.Metrics; DefaultMetrics unless set). Series carry
// the labels group, version, kind and shape (MetricLabels), plus handler for
// per-handler series; see the README for the list. Gauges are read from the
// running informers at scrape time; informers with equal labels add up. An
// informer's series are deleted when the last running informer with its
// labels stops.
type Metrics struct {
	listRequests   *prometheus.CounterVec
	listPages      *prometheus.CounterVec
	listObjects    *prometheus.CounterVec
	listDuration   *prometheus.HistogramVec
	watchStarts    *prometheus.CounterVec
	watchEvents    *prometheus.CounterVec
	watchBookmarks *prometheus.CounterVec
	watchDuration  *prometheus.HistogramVec
	relists        *prometheus.CounterVec
	errors         *prometheus.CounterVec
	checks         *prometheus.CounterVec
	drift          *prometheus.CounterVec
	handlerLatency *prometheus.HistogramVec
	handlerPanics  *prometheus.CounterVec
	codecErrors    *prometheus.CounterVec
	shardFiltered  *prometheus.CounterVec
	shardEvicted   *prometheus.CounterVec
	snapshot       snapshotVecs

	shardServer *prometheus.Desc

	storedBytes, storedObjects *prometheus.Desc
	compressionRatio           *prometheus.Desc

	objects, synced, syncDuration, lastEventAge, resourceVersion, fifoDepth, pendingKeys *prometheus.Desc

	handlerSynced, handlerInitial, handlerInitialDelivered *prometheus.Desc

	mu      sync.Mutex
	running map[*SharedIndexInformer]*informerMetrics
	refs    map[MetricLabels]int
}

var _ prometheus.Collector = (*Metrics)(nil)

// DefaultMetrics receives the metrics of informers whose Options.Metrics is
// nil. pkg/cache registers it with controller-runtime's metrics.Registry.
var DefaultMetrics = NewMetrics()

// RegisterMetrics registers DefaultMetrics with r. Registering it twice with
// the same registry is not an error.
func RegisterMetrics(r prometheus.Registerer) error {
	if err := r.Register(DefaultMetrics); err != nil {
		if _, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); !ok {
			return err
		}
	}
	return nil
}

// NewMetrics returns an empty collector; register it with a
// prometheus.Registerer and pass it as Options.Metrics.
func NewMetrics() *Metrics {
	counter := func(name, help string, extra ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help},
			append(append([]string{}, informerLabelNames...), extra...))
	}
	histogram := func(name, help string, buckets []float64, extra ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets},
			append(append([]string{}, informerLabelNames...), extra...))
	}
	gauge := func(name, help string, extra ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, append(append([]string{}, informerLabelNames...), extra...), nil)
	}
	return &Metrics{
		listRequests: counter("deltacache_informer_list_requests_total",
			"LIST requests sent (one per page), failed ones included."),
		listPages: counter("deltacache_informer_list_pages_total",
			"LIST pages received."),
		listObjects: counter("deltacache_informer_list_objects_total",
			"Objects of the complete lists (paginated LIST or WatchList stream) installed into the store."),
		listDuration: histogram("deltacache_informer_list_duration_seconds",
			"Duration of each complete list, from its first request to its installation in the store.",
			[]float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}),
		watchStarts: counter("deltacache_informer_watch_starts_total",
			"Watches opened (a WatchList stream that goes on as the watch included)."),
		watchEvents: counter("deltacache_informer_watch_events_total",
			"Watch events received, by type (ADDED, MODIFIED, DELETED); bookmarks are counted apart.", "type"),
		watchBookmarks: counter("deltacache_informer_watch_bookmarks_total",
			"Watch bookmarks received."),
		watchDuration: histogram("deltacache_informer_watch_duration_seconds",
			"Duration of each watch, from its opening to its end (server timeout, error, stall or stop).",
			[]float64{1, 10, 30, 60, 120, 300, 450, 600, 660, 900, 1800}),
		relists: counter("deltacache_informer_relists_total",
			"Lists after the first, by cause: expired (410), too_large_resource_version, error, drift, shard, corrupt (a stored record did not decode).", "cause"),
		checks: counter("deltacache_consistency_checks_total",
			"Consistency checks (a metadata-only LIST compared with the store), by result: ok, drift, error.",
			"result"),
		drift: counter("deltacache_consistency_drift_objects_total",
			"Objects a consistency check found different from the server, by drift: missing (on the server, "+
				"not in the store), extra (in the store, deleted on the server), stale (an older resourceVersion "+
				"or another uid in the store).", "drift"),
		errors: counter("deltacache_informer_errors_total",
			"List and watch errors, by operation (list, watch, watchlist) and reason (Forbidden, NotFound, "+
				"Expired, TooLargeResourceVersion, Transport, WatchStalled, ...).", "op", "reason"),
		handlerLatency: histogram("deltacache_handler_processing_latency_seconds",
			"Duration of each event handler call (OnAdd, OnUpdate, OnDelete).",
			[]float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}, "handler"),
		handlerPanics: counter("deltacache_handler_panics_total",
			"Event handler calls that panicked (recovered unless CrashOnHandlerPanic).", "handler"),
		codecErrors: counter("deltacache_informer_storage_codec_errors_total",
			"Objects the storage codec of compact storage could not encode (kept decoded) or decode (left out "+
				"of the read), by op (encode, decode).", "op"),

		shardFiltered: counter("deltacache_informer_shard_filtered_objects_total",
			"Objects received (listed or watched) outside the informer's shard selector and dropped on the "+
				"client: a server that does not honour shardSelector sends them all."),
		shardEvicted: counter("deltacache_informer_shard_evicted_objects_total",
			"Stored objects dropped, without a Delete notification, because a new shard selector no longer "+
				"selects them (a hand-off to another replica)."),
		shardServer: gauge("deltacache_informer_shard_server_filtering",
			"For sharded informers: 1 when the server honours shardSelector (ShardInfo in its list), 0 when "+
				"the informer filters on the client; absent before the first sharded list."),

		storedBytes: gauge("deltacache_informer_stored_bytes",
			"Bytes of the encoded objects held in the informer's store (compact storage; the payload, "+
				"without the store's structure); 0 when objects are held decoded."),
		compressionRatio: gauge("deltacache_informer_compression_ratio",
			"For informers whose storage codec compresses: the bytes of the objects' encodings over the bytes "+
				"stored for them, over every object encoded since the start (2 = half the bytes)."),
		storedObjects: gauge("deltacache_informer_stored_objects",
			"Objects in the informer's store by form: encoded (compact storage) or decoded.", "form"),

		objects: gauge("deltacache_informer_objects",
			"Objects in the informer's store."),
		synced: gauge("deltacache_informer_synced",
			"1 once the informer's initial list is in its store and popped, else 0."),
		syncDuration: gauge("deltacache_informer_initial_sync_duration_seconds",
			"Seconds from the informer's start to its initial sync; present once synced."),
		lastEventAge: gauge("deltacache_informer_last_event_age_seconds",
			"Seconds since the informer last heard from the server: a watch event or bookmark, "+
				"a watch opened, a list installed (since its start before any)."),
		resourceVersion: gauge("deltacache_informer_last_sync_resource_version",
			"Last resourceVersion seen (list, event or bookmark), when it is an integer."),
		fifoDepth: gauge("deltacache_informer_delta_fifo_depth",
			"Keys queued in the DeltaFIFO, waiting for the informer to apply them."),
		pendingKeys: gauge("deltacache_handler_pending_keys",
			"Keys with notifications waiting for delivery to an event handler.", "handler"),
		handlerSynced: gauge("deltacache_handler_synced",
			"1 once the event handler has been handed every object of its initial list and returned "+
				"(its registration's HasSynced, which controller-runtime waits for), else 0.", "handler"),
		handlerInitial: gauge("deltacache_handler_initial_objects",
			"Objects of the event handler's initial list (or of the store replayed to a handler added "+
				"after start) queued for it; final once the informer has synced.", "handler"),
		handlerInitialDelivered: gauge("deltacache_handler_initial_objects_delivered",
			"Objects of the event handler's initial list delivered to it so far; deriv() gives its rate.", "handler"),

		snapshot: newSnapshotVecs(),

		running: map[*SharedIndexInformer]*informerMetrics{},
		refs:    map[MetricLabels]int{},
	}
}

// vec is what Metrics needs of a CounterVec or HistogramVec.
type vec interface {
	prometheus.Collector
	DeletePartialMatch(labels prometheus.Labels) int
}

func (m *Metrics) vecs() []vec {
	return append([]vec{m.listRequests, m.listPages, m.listObjects, m.listDuration,
		m.watchStarts, m.watchEvents, m.watchBookmarks, m.watchDuration, m.relists, m.errors,
		m.checks, m.drift, m.handlerLatency, m.handlerPanics, m.codecErrors, m.shardFiltered, m.shardEvicted},
		m.snapshot.all()...)
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.vecs() {
		c.Describe(ch)
	}
	for _, d := range []*prometheus.Desc{m.shardServer, m.storedBytes, m.compressionRatio, m.storedObjects, m.objects, m.synced, m.syncDuration, m.lastEventAge,
		m.resourceVersion, m.fifoDepth, m.pendingKeys, m.handlerSynced, m.handlerInitial, m.handlerInitialDelivered} {
		ch <- d
	}
}

// aggregate is the scrape-time state of the running informers of one label set.
type aggregate struct {
	objects, fifo  float64
	encoded, bytes float64
	// compressedIn and compressedOut are CompressingCodec's bytes.
	compressedIn, compressedOut float64
	allSynced                   bool
	maxSyncDuration             float64
	maxAge                      float64
	minRV                       float64
	hasRV                       bool
	pending                     map[string]float64
	// initial are the handlers' initial progress, by handler label.
	initial map[string]*handlerInitialSums
	// shardKnown: some informer learnt the server's sharding; shardAll: all
	// that learnt it found it honoured.
	shardKnown, shardAll bool
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.vecs() {
		c.Collect(ch)
	}
	m.mu.Lock()
	running := make(map[*SharedIndexInformer]*informerMetrics, len(m.running))
	maps.Copy(running, m.running)
	m.mu.Unlock()

	groups := map[MetricLabels]*aggregate{}
	for s, im := range running {
		a := groups[im.labels]
		if a == nil {
			a = &aggregate{allSynced: true, shardAll: true, pending: map[string]float64{},
				initial: map[string]*handlerInitialSums{}}
			groups[im.labels] = a
		}
		stored := s.indexer.StoredStats()
		a.objects += float64(stored.Objects)
		a.encoded += float64(stored.Encoded)
		a.bytes += float64(stored.EncodedBytes)
		if cc, ok := s.indexer.codec.(CompressingCodec); ok {
			in, out := cc.CompressionBytes()
			a.compressedIn += float64(in)
			a.compressedOut += float64(out)
		}
		a.fifo += float64(s.fifo.Len())
		if d, ok := im.syncDuration(); ok {
			a.maxSyncDuration = max(a.maxSyncDuration, d.Seconds())
		} else {
			a.allSynced = false
		}
		a.maxAge = max(a.maxAge, im.clock.Since(im.lastActivityTime()).Seconds())
		if rv, ok := parseRV(s.LastSyncResourceVersion()); ok {
			if !a.hasRV || float64(rv) < a.minRV {
				a.minRV = float64(rv)
			}
			a.hasRV = true
		}
		if r := s.getReflector(); r != nil && r.ShardSelector() != nil {
			switch r.ServerSharding() {
			case ServerShardingHonoured:
				a.shardKnown = true
			case ServerShardingIgnored:
				a.shardKnown, a.shardAll = true, false
			}
		}
		s.mu.Lock()
		handlers := append([]*HandlerRegistration(nil), s.handlers...)
		s.mu.Unlock()
		for _, h := range handlers {
			a.pending[h.label] += float64(h.pendingCount())
			a.addInitial(h.initialProgress())
		}
	}
	for labels, a := range groups {
		lv := labels.values()
		gauge := func(d *prometheus.Desc, v float64, extra ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append(lv, extra...)...)
		}
		gauge(m.objects, a.objects)
		gauge(m.storedBytes, a.bytes)
		if a.compressedOut > 0 {
			gauge(m.compressionRatio, a.compressedIn/a.compressedOut)
		}
		gauge(m.storedObjects, a.encoded, "encoded")
		gauge(m.storedObjects, a.objects-a.encoded, "decoded")
		gauge(m.fifoDepth, a.fifo)
		gauge(m.lastEventAge, a.maxAge)
		if a.allSynced {
			gauge(m.synced, 1)
			gauge(m.syncDuration, a.maxSyncDuration)
		} else {
			gauge(m.synced, 0)
		}
		if a.hasRV {
			gauge(m.resourceVersion, a.minRV)
		}
		for handler, n := range a.pending {
			gauge(m.pendingKeys, n, handler)
		}
		for handler, sums := range a.initial {
			gauge(m.handlerSynced, map[bool]float64{true: 1, false: 0}[sums.allSynced], handler)
			gauge(m.handlerInitial, sums.total, handler)
			gauge(m.handlerInitialDelivered, sums.delivered, handler)
		}
		if a.shardKnown {
			gauge(m.shardServer, map[bool]float64{true: 1, false: 0}[a.shardAll])
		}
	}
}

// handlerInitialSums add up the InitialProgress of the registrations of one
// handler label (in informers with equal labels).
type handlerInitialSums struct {
	total, delivered float64
	allSynced        bool
}

func (a *aggregate) addInitial(p InitialProgress) {
	sums := a.initial[p.Label]
	if sums == nil {
		sums = &handlerInitialSums{allSynced: true}
		a.initial[p.Label] = sums
	}
	sums.total += float64(p.Total)
	sums.delivered += float64(p.Delivered)
	sums.allSynced = sums.allSynced && p.Synced
}

// register adds a starting informer and returns its metric state.
func (m *Metrics) register(s *SharedIndexInformer, labels MetricLabels, c clock.PassiveClock) *informerMetrics {
	lv := labels.values()
	im := &informerMetrics{
		labels:         labels,
		clock:          c,
		start:          c.Now(),
		listRequests:   m.listRequests.WithLabelValues(lv...),
		listPages:      m.listPages.WithLabelValues(lv...),
		listObjects:    m.listObjects.WithLabelValues(lv...),
		listDuration:   m.listDuration.WithLabelValues(lv...),
		watchStarts:    m.watchStarts.WithLabelValues(lv...),
		watchBookmarks: m.watchBookmarks.WithLabelValues(lv...),
		watchDuration:  m.watchDuration.WithLabelValues(lv...),
		errors:         m.errors.MustCurryWith(labels.prometheusLabels()),
		handlerLatency: m.handlerLatency.MustCurryWith(labels.prometheusLabels()),
		handlerPanics:  m.handlerPanics.MustCurryWith(labels.prometheusLabels()),
		encodeErrors:   m.codecErrors.WithLabelValues(append(lv, "encode")...),
		decodeErrors:   m.codecErrors.WithLabelValues(append(lv, "decode")...),
	}
	// The shard series exist once the informer is sharded (see shardSeries).
	im.shardSeries = sync.OnceValue(func() [2]prometheus.Counter {
		return [2]prometheus.Counter{m.shardFiltered.WithLabelValues(lv...), m.shardEvicted.WithLabelValues(lv...)}
	})
	if s.shard.Load() != nil {
		im.shardSeries()
	}
	im.snapshotSeries = sync.OnceValue(func() *snapshotSeries { return &snapshotSeries{vecs: m.snapshot, labels: lv} })
	for i, t := range []watch.EventType{watch.Added, watch.Modified, watch.Deleted} {
		im.watchEvents[i] = m.watchEvents.WithLabelValues(append(lv, string(t))...)
	}
	causes := []string{relistCauseExpired, relistCauseTooLargeResourceVersion, relistCauseError, relistCauseDrift, relistCauseShard,
		relistCauseCorrupt}
	for i, cause := range causes {
		im.relists[i] = m.relists.WithLabelValues(append(lv, cause)...)
	}
	if s.opts.ConsistencyCheck.enabled() { // the series exist where checks run
		for i, result := range []string{"ok", "drift", "error"} {
			im.consistencyChecks[i] = m.checks.WithLabelValues(append(lv, result)...)
		}
		for i, drift := range []string{driftMissing, driftExtra, driftStale} {
			im.driftObjects[i] = m.drift.WithLabelValues(append(lv, drift)...)
		}
	}
	im.syncedAfter.Store(-1)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.running[s] = im
	m.refs[labels]++
	return im
}

// unregister removes a stopped informer; the series of its labels are deleted
// when no other running informer shares them.
func (m *Metrics) unregister(s *SharedIndexInformer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	im, ok := m.running[s]
	if !ok {
		return
	}
	delete(m.running, s)
	m.refs[im.labels]--
	if m.refs[im.labels] > 0 {
		return
	}
	delete(m.refs, im.labels)
	for _, v := range m.vecs() {
		v.DeletePartialMatch(im.labels.prometheusLabels())
	}
}

// informerMetrics is one running informer's handle on its series, and the
// timestamps its scrape-time gauges and health are computed from. Its methods
// are the Reflector's hooks; they do nothing on a nil receiver (a Reflector
// built outside an informer).
type informerMetrics struct {
	labels MetricLabels
	clock  clock.PassiveClock
	start  time.Time

	listRequests, listPages, listObjects prometheus.Counter
	listDuration                         prometheus.Observer
	watchStarts, watchBookmarks          prometheus.Counter
	watchEvents                          [3]prometheus.Counter // ADDED, MODIFIED, DELETED
	watchDuration                        prometheus.Observer
	relists                              [6]prometheus.Counter // expired, too large RV, error, drift, shard, corrupt
	consistencyChecks                    [3]prometheus.Counter // ok, drift, error
	driftObjects                         [3]prometheus.Counter // missing, extra, stale
	errors                               *prometheus.CounterVec
	handlerLatency                       prometheus.ObserverVec
	handlerPanics                        *prometheus.CounterVec
	encodeErrors, decodeErrors           prometheus.Counter
	// shardSeries returns the filtered and evicted counters, creating them
	// on first use.
	shardSeries func() [2]prometheus.Counter
	// snapshotSeries returns the snapshot and start series (see snapshotVecs).
	snapshotSeries func() *snapshotSeries

	// lastActivity and syncedAfter are durations since start, in nanoseconds
	// (so that they keep the clock's monotonic reading); syncedAfter is -1
	// before the initial sync.
	lastActivity atomic.Int64
	syncedAfter  atomic.Int64
}

func (im *informerMetrics) active() {
	if im == nil {
		return
	}
	im.lastActivity.Store(int64(im.clock.Since(im.start)))
}

func (im *informerMetrics) lastActivityTime() time.Time {
	return im.start.Add(time.Duration(im.lastActivity.Load()))
}

func (im *informerMetrics) syncDuration() (time.Duration, bool) {
	d := im.syncedAfter.Load()
	return time.Duration(d), d >= 0
}

// markSynced records the initial sync.
func (im *informerMetrics) markSynced() {
	if im == nil {
		return
	}
	im.syncedAfter.CompareAndSwap(-1, int64(im.clock.Since(im.start)))
}

// listRequest counts a LIST request about to be sent.
func (im *informerMetrics) listRequest() {
	if im != nil {
		im.listRequests.Inc()
	}
}

// listPage counts a LIST page received.
func (im *informerMetrics) listPage() {
	if im != nil {
		im.listPages.Inc()
	}
}

// listInstalled records a complete list put into the store.
func (im *informerMetrics) listInstalled(stats ListSummary) {
	if im == nil {
		return
	}
	im.listObjects.Add(float64(stats.Objects))
	im.listDuration.Observe(stats.Duration.Seconds())
	im.active()
}

// watchStarted records a watch opened.
func (im *informerMetrics) watchStarted() {
	if im == nil {
		return
	}
	im.watchStarts.Inc()
	im.active()
}

// watchEnded records how long a watch lasted.
func (im *informerMetrics) watchEnded(d time.Duration) {
	if im != nil {
		im.watchDuration.Observe(d.Seconds())
	}
}

// watchEvent counts an event applied from a watch (bookmarks included).
func (im *informerMetrics) watchEvent(t watch.EventType) {
	if im == nil {
		return
	}
	switch t {
	case watch.Added:
		im.watchEvents[0].Inc()
	case watch.Modified:
		im.watchEvents[1].Inc()
	case watch.Deleted:
		im.watchEvents[2].Inc()
	case watch.Bookmark:
		im.watchBookmarks.Inc()
	}
}

// relist counts a list that follows the failure err of the previous
// ListAndWatch.
func (im *informerMetrics) relist(err error) {
	if im == nil {
		return
	}
	if req, ok := err.(errRelistRequested); ok {
		switch req.cause {
		case relistCauseShard:
			im.relists[4].Inc()
		case relistCauseCorrupt:
			im.relists[5].Inc()
		default:
			im.relists[3].Inc()
		}
		return
	}
	switch lwReason(err) {
	case ReasonExpired:
		im.relists[0].Inc()
	case ReasonTooLargeResourceVersion:
		im.relists[1].Inc()
	default:
		im.relists[2].Inc()
	}
}

// consistencyChecked records a consistency check's result.
func (im *informerMetrics) consistencyChecked(r *DriftReport, err error) {
	if im == nil || im.consistencyChecks[0] == nil {
		return
	}
	switch {
	case err != nil:
		im.consistencyChecks[2].Inc()
	case r.Drifted():
		im.consistencyChecks[1].Inc()
		im.driftObjects[0].Add(float64(len(r.Missing)))
		im.driftObjects[1].Add(float64(len(r.Extra)))
		im.driftObjects[2].Add(float64(len(r.Stale)))
	default:
		im.consistencyChecks[0].Inc()
	}
}

// shardFiltered counts a received object dropped by the shard selector.
func (im *informerMetrics) shardFilteredObject() {
	if im != nil {
		im.shardSeries()[0].Inc()
	}
}

// shardEvictedObjects counts stored objects evicted by a shard change.
func (im *informerMetrics) shardEvictedObjects(n int) {
	if im != nil {
		im.shardSeries()[1].Add(float64(n))
	}
}

// listWatchError counts a reported error.
func (im *informerMetrics) listWatchError(err *ListWatchError) {
	if im != nil {
		im.errors.WithLabelValues(err.Op, err.Reason).Inc()
	}
}

// handlerMetrics are a registration's series, resolved on its first delivery.
type handlerMetrics struct {
	owner   *informerMetrics
	latency prometheus.Observer
	panics  prometheus.Counter
}

// observeDelivery records a handler call that began at start. It runs on the
// registration's goroutine only, which alone touches r.metrics.
func (r *HandlerRegistration) observeDelivery(start time.Time, panicked bool) {
	im := r.informer.obs.Load()
	if im == nil {
		return
	}
	if r.metrics.owner != im {
		label := r.label
		r.metrics = handlerMetrics{owner: im,
			latency: im.handlerLatency.WithLabelValues(label), panics: im.handlerPanics.WithLabelValues(label)}
	}
	r.metrics.latency.Observe(im.clock.Since(start).Seconds())
	if panicked {
		r.metrics.panics.Inc()
	}
}

// packagePath matches the import path prefix of a qualified type name.
var packagePath = regexp.MustCompile(`[\w.~-]+/`)

var handlerLabels sync.Map // reflect.Type → string

// NamedHandler is a handler that names itself in the "handler" label of the
// deltacache_handler_* series (see Options.HandlerLabel).
type NamedHandler interface {
	toolscache.ResourceEventHandler
	HandlerName() string
}

// defaultHandlerLabel is the default "handler" label of h: its HandlerName when h is
// a NamedHandler, else its Go type with package paths reduced to package
// names, e.g. "cache.ResourceEventHandlerFuncs". Options.HandlerLabel
// overrides it (pkg/cache names controller-runtime's handlers after what
// they enqueue); the informer then makes the label unique among its
// registrations (see uniqueHandlerLabelLocked).
func defaultHandlerLabel(h toolscache.ResourceEventHandler) string {
	if n, ok := h.(NamedHandler); ok {
		if name := n.HandlerName(); name != "" {
			return name
		}
	}
	return goTypeLabel(h)
}

// goTypeLabel is h's Go type with package paths reduced to package names.
func goTypeLabel(h any) string {
	t := reflect.TypeOf(h)
	if l, ok := handlerLabels.Load(t); ok {
		return l.(string)
	}
	l := packagePath.ReplaceAllString(t.String(), "")
	handlerLabels.Store(t, l)
	return l
}

// uniqueHandlerLabelLocked is the label of a new registration of h:
// Options.HandlerLabel's answer, else defaultHandlerLabel's, followed by "#n" when
// n-1 registrations of the informer already have that label (n ≥ 2, the
// smallest free), so that two controllers whose handlers look alike (every
// controller-runtime controller registers the same Go type) are two series.
// The label set stays bounded by the registrations alive at once. s.mu held.
func (s *SharedIndexInformer) uniqueHandlerLabelLocked(h toolscache.ResourceEventHandler) string {
	base := ""
	if s.opts.HandlerLabel != nil {
		base = s.opts.HandlerLabel(h)
	}
	if base == "" {
		base = defaultHandlerLabel(h)
	}
	taken := make(map[string]bool, len(s.handlers))
	for _, r := range s.handlers {
		taken[r.label] = true
	}
	if !taken[base] {
		return base
	}
	for n := 2; ; n++ {
		if l := base + "#" + strconv.Itoa(n); !taken[l] {
			return l
		}
	}
}

// startMetrics registers the informer with its Metrics; called once, by Run.
func (s *SharedIndexInformer) startMetrics() *informerMetrics {
	m := s.opts.Metrics
	if m == nil {
		m = DefaultMetrics
	}
	im := m.register(s, metricLabelsFor(s.opts.MetricLabels, s.example), s.clock)
	s.obs.Store(im)
	return im
}

// stopMetrics unregisters the informer when Run returns.
func (s *SharedIndexInformer) stopMetrics() {
	m := s.opts.Metrics
	if m == nil {
		m = DefaultMetrics
	}
	m.unregister(s)
}

// MetricLabels returns the labels of the informer's series (Options.MetricLabels
// completed from the example object).
func (s *SharedIndexInformer) MetricLabels() MetricLabels {
	return metricLabelsFor(s.opts.MetricLabels, s.example)
}

// LastActivity returns when the informer last heard from the server (watch
// event or bookmark, watch opened, list installed; else its start; zero
// before Run), as deltacache_informer_last_event_age_seconds measures.
func (s *SharedIndexInformer) LastActivity() time.Time {
	im := s.obs.Load()
	if im == nil {
		return time.Time{}
	}
	return im.lastActivityTime()
}
