package informer

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Values of the "start" label of deltacache_informer_starts_total: how an
// informer got its first list.
const (
	// startCold: a full list (no snapshot, or snapshots off).
	startCold = "cold"
	// startResumed: a snapshot brought up to date by a watch resumed from its
	// resourceVersion.
	startResumed = "resumed"
	// startDiffed: a snapshot brought up to date by a metadata-only LIST
	// compared with it, and Gets of the objects added or changed.
	startDiffed = "diffed"
	// startDiscarded: a snapshot was found but not used (its "reason" label
	// says why); the informer listed in full.
	startDiscarded = "discarded"
)

// snapshotVecs are the series of snapshots and warm starts.
type snapshotVecs struct {
	writes, writtenBytes, starts, loaded, fetched *prometheus.CounterVec
	writeDuration                                 *prometheus.HistogramVec
}

func newSnapshotVecs() snapshotVecs {
	counter := func(name, help string, extra ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help},
			append(append([]string{}, informerLabelNames...), extra...))
	}
	return snapshotVecs{
		writes: counter("deltacache_snapshot_writes_total",
			"Snapshot writes, by result: written, skipped (a record held decoded, or no resourceVersion yet), failed.",
			"result"),
		writtenBytes: counter("deltacache_snapshot_written_bytes_total",
			"Bytes of the snapshot files written."),
		writeDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "deltacache_snapshot_write_duration_seconds",
			Help:    "Duration of each snapshot write, from reading the store to the file's rename.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, informerLabelNames),
		starts: counter("deltacache_informer_starts_total",
			"Informer starts by how the first list was had: cold, resumed, diffed, discarded (with the reason the "+
				"snapshot was not used).", "start", "reason"),
		loaded: counter("deltacache_snapshot_loaded_objects_total",
			"Objects loaded from snapshot files by warm starts."),
		fetched: counter("deltacache_snapshot_fetched_objects_total",
			"Objects a warm start's metadata diff fetched with a Get (added or changed while the process was down)."),
	}
}

func (v snapshotVecs) all() []vec {
	return []vec{v.writes, v.writtenBytes, v.writeDuration, v.starts, v.loaded, v.fetched}
}

// snapshotSeries are one label set's snapshot series.
type snapshotSeries struct {
	vecs   snapshotVecs
	labels []string
}

// snapshotWritten records a snapshot of n bytes written in d.
func (im *informerMetrics) snapshotWritten(n int64, d time.Duration) {
	if im == nil {
		return
	}
	s := im.snapshotSeries()
	s.vecs.writes.WithLabelValues(append(s.labels, snapshotResultWritten)...).Inc()
	s.vecs.writtenBytes.WithLabelValues(s.labels...).Add(float64(n))
	s.vecs.writeDuration.WithLabelValues(s.labels...).Observe(d.Seconds())
}

// snapshotResult counts a snapshot write that did not write.
func (im *informerMetrics) snapshotResult(result string) {
	if im == nil {
		return
	}
	s := im.snapshotSeries()
	s.vecs.writes.WithLabelValues(append(s.labels, result)...).Inc()
}

// started records how the informer started (a start* value; reason for
// startDiscarded), the objects loaded from a snapshot and fetched by a diff.
func (im *informerMetrics) started(start, reason string, loaded, fetched int) {
	if im == nil {
		return
	}
	s := im.snapshotSeries()
	s.vecs.starts.WithLabelValues(append(s.labels, start, reason)...).Inc()
	if loaded > 0 {
		s.vecs.loaded.WithLabelValues(s.labels...).Add(float64(loaded))
	}
	if fetched > 0 {
		s.vecs.fetched.WithLabelValues(s.labels...).Add(float64(fetched))
	}
}
