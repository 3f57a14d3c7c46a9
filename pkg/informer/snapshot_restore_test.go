package informer

import (
	"fmt"
	"strings"
	"testing"

	toolscache "k8s.io/client-go/tools/cache"
)

// snapshotRecords encodes n pods with codec as a snapshot's records.
func snapshotRecords(t *testing.T, c *countingCodec, n int) []snapshotRecord {
	t.Helper()
	recs := make([]snapshotRecord, n)
	for i := range recs {
		p := pod("ns", fmt.Sprintf("p-%05d", i), fmt.Sprint(100+i), fmt.Sprintf("app=%d", i%7))
		data, err := c.Encode(p)
		if err != nil {
			t.Fatal(err)
		}
		recs[i] = snapshotRecord{key: "ns/" + p.Name, data: data}
	}
	return recs
}

func TestRestoreAllDecodesEveryRecordOnceInOrderOverSeveralWorkers(t *testing.T) {
	c := podCodec(t)
	ix := NewIndexerWithOptions(toolscache.MetaNamespaceKeyFunc,
		toolscache.Indexers{"app": labelIndex("app")}, IndexerOptions{Codec: c})
	n := restoreChunk*5 + 17 // several chunks, the last one short
	recs := snapshotRecords(t, c, n)
	decodesBefore := c.decodes.Load()
	out, err := ix.restoreAll(recs)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.decodes.Load() - decodesBefore; got != int64(n) {
		t.Errorf("decodes = %d, want one per record (%d)", got, n)
	}
	for i, e := range out {
		wantKey, wantRV := fmt.Sprintf("ns/p-%05d", i), fmt.Sprint(100+i)
		if e == nil || e.key != wantKey || e.rv != wantRV {
			t.Fatalf("out[%d] = %+v, want key %s rv %s", i, e, wantKey, wantRV)
		}
		if v := e.vals.values[0]; len(v) != 1 || v[0] != fmt.Sprint(i%7) {
			t.Fatalf("out[%d] index values %v, want [%d]", i, v, i%7)
		}
		if recs[i].data != nil {
			t.Fatalf("record %d not cleared", i)
		}
	}
}

func TestRestoreAllReturnsTheErrorOfACorruptRecord(t *testing.T) {
	c := podCodec(t)
	ix := NewIndexerWithOptions(toolscache.MetaNamespaceKeyFunc, nil, IndexerOptions{Codec: c})
	recs := snapshotRecords(t, c, restoreChunk*4)
	bad := restoreChunk*3 + 5
	recs[bad].key = "ns/another-name" // the object's own key differs
	_, err := ix.restoreAll(recs)
	if err == nil || !strings.Contains(err.Error(), "ns/another-name") {
		t.Fatalf("restoreAll = %v, want the error naming record ns/another-name", err)
	}
}
