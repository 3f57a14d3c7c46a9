package informer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// snapshotBenchRecords returns n protobuf-encoded fullPods as snapshot
// records, and the codec.
func snapshotBenchRecords(b *testing.B, n int) ([]snapshotRecord, *countingCodec) {
	c := podCodec(b)
	recs := make([]snapshotRecord, n)
	for i := range recs {
		p := fullPod(fmt.Sprintf("ns%d", i%20), fmt.Sprintf("pod-%d", i), fmt.Sprint(1000+i))
		data, err := c.Encode(p)
		if err != nil {
			b.Fatal(err)
		}
		recs[i] = snapshotRecord{key: p.Namespace + "/" + p.Name, data: data}
	}
	return recs, c
}

// BenchmarkSnapshotWrite20k measures one snapshot write of 20k pods (the
// file written, synced and renamed into place), and the bytes per object.
func BenchmarkSnapshotWrite20k(b *testing.B) {
	recs, _ := snapshotBenchRecords(b, 20000)
	dir := b.TempDir()
	h := snapshotHeader{written: time.Now(), resourceVersion: "1000"}
	var n int64
	b.ResetTimer()
	for range b.N {
		var err error
		if n, err = writeSnapshotFile(b.Context(), dir, "pods", h, recs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/float64(len(recs)), "file-B/object")
}

// BenchmarkSnapshotLoad20k measures a warm start's load of 20k pods: the file
// read and checked, and every record decoded once for its key,
// resourceVersion, uid and index values (namespace and "app" label).
func BenchmarkSnapshotLoad20k(b *testing.B) {
	recs, c := snapshotBenchRecords(b, 20000)
	dir := b.TempDir()
	cfg := Snapshot{Identity: "pods", Version: "bench"}
	build, _ := cfg.buildHash()
	h := snapshotHeader{identity: cfg.identityHash(), build: build, written: time.Now(), resourceVersion: "1000"}
	if _, err := writeSnapshotFile(b.Context(), dir, "pods", h, recs); err != nil {
		b.Fatal(err)
	}
	st, _ := os.Stat(filepath.Join(dir, "pods"))
	ix := NewIndexerWithOptions(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{
		toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc, appLabel: labelIndex(appLabel)},
		IndexerOptions{Codec: c})
	b.ResetTimer()
	for range b.N {
		_, loaded, err := readSnapshotFile(dir, "pods", h.identity, h.build)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range loaded {
			if _, err := ix.restoreEncoded(r.key, r.data); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(st.Size())/float64(len(recs)), "file-B/object")
}

// BenchmarkSnapshotWarmStart20kPods compares, in one process and alternately,
// the time from Run to synced of a pod informer (compact storage) over 20k
// pods on the fake server: warm (from a snapshot of an unchanged server: the
// file loaded and decoded once per record for its index values, a LIST of one
// object, a catch-up watch that gets its bookmark at once) and cold (a
// paginated LIST of 20k pods, which the fake hands over without a wire
// decode: a real cold start costs more). It reports warm-ns/sync,
// cold-ns/sync, speedup-x (cold ÷ warm) and the bytes allocated by each.
func BenchmarkSnapshotWarmStart20kPods(b *testing.B) {
	srv := newSnapshotServer()
	for i := range 20000 {
		srv.Create(fullPod(fmt.Sprintf("ns%d", i%20), fmt.Sprintf("pod-%d", i), ""))
	}
	dir := b.TempDir()
	indexers := toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc, appLabel: labelIndex(appLabel)}
	run := func(snapshot, wantWarm bool) (time.Duration, uint64) {
		opts := Options{StorageCodec: podCodec(b), Indexers: indexers, Metrics: NewMetrics(), DisableWatchList: true}
		if snapshot {
			opts.Snapshot = Snapshot{Dir: dir, Name: "pods", Identity: "pods", Version: "bench"}
		}
		s := NewSharedIndexInformer(srv, &corev1.Pod{}, opts)
		var m goruntime.MemStats
		goruntime.ReadMemStats(&m)
		before := m.TotalAlloc
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		start := time.Now()
		go func() { defer close(done); s.RunWithContext(ctx) }()
		for !s.HasSynced() {
			time.Sleep(100 * time.Microsecond)
		}
		took := time.Since(start)
		goruntime.ReadMemStats(&m)
		cancel()
		<-done
		if wantWarm {
			if rep, _ := s.StartReport(); rep.Start != StartResumed {
				b.Fatalf("warm start was %+v", rep)
			}
		}
		return took, m.TotalAlloc - before
	}
	run(true, false) // the first run finds no file, lists cold, and writes the snapshot at stop
	var warm, cold time.Duration
	var warmBytes, coldBytes uint64
	n := 0
	for b.Loop() {
		d, by := run(true, true)
		warm, warmBytes = warm+d, warmBytes+by
		d, by = run(false, false)
		cold, coldBytes = cold+d, coldBytes+by
		n++
	}
	b.ReportMetric(float64(warm.Nanoseconds())/float64(n), "warm-ns/sync")
	b.ReportMetric(float64(cold.Nanoseconds())/float64(n), "cold-ns/sync")
	b.ReportMetric(float64(cold)/float64(warm), "speedup-x")
	b.ReportMetric(float64(warmBytes)/float64(n), "warm-B/sync")
	b.ReportMetric(float64(coldBytes)/float64(n), "cold-B/sync")
}
