package informer

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

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
		if n, err = writeSnapshotFile(b.Context(), dir, "pods", h, recs, snapshotPace{}); err != nil {
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
	if _, err := writeSnapshotFile(b.Context(), dir, "pods", h, recs, snapshotPace{}); err != nil {
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
		var copies valueCopies
		for _, r := range loaded {
			if _, err := ix.restoreEncoded(r.key, r.data, &copies); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(st.Size())/float64(len(recs)), "file-B/object")
}
