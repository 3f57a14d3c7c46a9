package informer

import (
	"fmt"
	goruntime "runtime"
	"testing"
)

// BenchmarkRelistApply measures applying a relist of 100k pods to a store of
// 100k pods with the namespace and "app" indexes: a tenth of them updated
// (a third of those moved to another app value), a hundredth deleted and
// as many created, the rest unchanged. mode=whole applies it as the informer
// does (one whole batch: readers see it all at once), mode=sliced in
// batches of maxPopBatch keys as before (readers see it batch by batch).
//
// Besides time and allocations per relist it reports, per object of the
// store:
//
//   - held-B/object: the heap live just before the (last) commit beyond
//     the heap live after it, i.e. what applying the relist holds on top of
//     the relisted store for its duration (whole: the old table, records
//     included, and the copy's cells and shards);
//   - after-B/object: the heap live after the commit beyond the store
//     before the relist (the store's growth: new records and structure).
func BenchmarkRelistApply(b *testing.B) {
	const n = 100_000
	before := make([]any, n)
	type write struct {
		key string
		obj any // nil: delete
	}
	var relist []write
	for i := range n {
		ns, name := fmt.Sprintf("ns%d", i%20), fmt.Sprintf("p%d", i)
		before[i] = pod(ns, name, "1", fmt.Sprintf("app=a%d", i%50))
		switch app := i % 50; {
		case i%100 == 7:
			relist = append(relist, write{key: ns + "/" + name})
		case i%10 == 3 && i%30 == 3:
			relist = append(relist, write{ns + "/" + name, pod(ns, name, "2", fmt.Sprintf("app=a%d", (app+1)%50))})
		case i%10 == 3:
			relist = append(relist, write{ns + "/" + name, pod(ns, name, "2", fmt.Sprintf("app=a%d", app))})
		default:
			relist = append(relist, write{ns + "/" + name, before[i]})
		}
	}
	for i := range n / 100 {
		ns, name := fmt.Sprintf("ns%d", i%20), fmt.Sprintf("new%d", i)
		relist = append(relist, write{ns + "/" + name, pod(ns, name, "2", fmt.Sprintf("app=a%d", i%50))})
	}
	heap := func() int64 {
		var m goruntime.MemStats
		goruntime.GC()
		goruntime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	for _, mode := range []string{"whole", "sliced"} {
		b.Run("mode="+mode, func(b *testing.B) {
			var last, after int64
			b.ReportAllocs()
			for range b.N {
				b.StopTimer()
				ix := newTestIndexer()
				if err := ix.Replace(before, "1"); err != nil {
					b.Fatal(err)
				}
				base := heap()
				b.StartTimer()
				size := len(relist)
				if mode == "sliced" {
					size = maxPopBatch
				}
				for start := 0; start < len(relist); start += size {
					var w *writeBatch
					if mode == "whole" {
						w = ix.beginWholeBatch(0)
					} else {
						w = ix.beginBatch(min(size, len(relist)-start))
					}
					for _, wr := range relist[start:min(start+size, len(relist))] {
						if wr.obj == nil {
							w.take(wr.key)
						} else if _, _, err := w.swap(wr.key, wr.obj); err != nil {
							b.Fatal(err)
						}
					}
					if start+size >= len(relist) {
						b.StopTimer()
						last = heap() - base
						b.StartTimer()
					}
					w.commit()
				}
				b.StopTimer()
				after = heap() - base
				goruntime.KeepAlive(ix)
				b.StartTimer()
			}
			b.ReportMetric(float64(last-after)/n, "held-B/object")
			b.ReportMetric(float64(after)/n, "after-B/object")
		})
	}
}
