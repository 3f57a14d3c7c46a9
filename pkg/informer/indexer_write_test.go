package informer

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// The single-object writes (Add, Update, Delete, Bookmark) are batches of
// one: these tests pin, for them, what indexer_batch_test.go pins for the
// pop loop's batches.

// TestIndexerSingleWritesLeavePublishedIndexesAndShardsUntouched: Add,
// Update (with and without a moved index value) and Delete copy before they
// change; the index tries and segments published before them, which readers
// may hold, never change in place.
func TestIndexerSingleWritesLeavePublishedIndexesAndShardsUntouched(t *testing.T) {
	ix := newBatchTestIndexer()
	apps := []string{"web", "db", "two"}
	for i := range 300 {
		must(t, ix.Add(pod("a", fmt.Sprintf("p%d", i), "1", "app="+apps[i%len(apps)])))
	}
	for step := range 60 {
		tbl := ix.table.Load()
		oldIdx := tbl.indices.Load()
		wantIdx := renderIndexes(tbl.funcs, oldIdx)
		oldShards := make([]*segment, len(tbl.segments))
		wantShards := make([]string, len(tbl.segments))
		for i := range tbl.segments {
			oldShards[i] = tbl.segments[i].Load()
			wantShards[i] = fmt.Sprint(oldShards[i].slots)
		}
		name := fmt.Sprintf("p%d", step*5)
		switch step % 4 {
		case 0:
			must(t, ix.Add(pod("a", fmt.Sprintf("n%d", step), "2", "app=two")))
		case 1:
			must(t, ix.Update(pod("a", name, "2", "app="+apps[(step+1)%len(apps)])))
		case 2:
			must(t, ix.Update(pod("a", name, "2", "app="+apps[step*5%len(apps)])))
		case 3:
			must(t, ix.Delete(pod("a", name, "2")))
		}
		if got := renderIndexes(tbl.funcs, oldIdx); got != wantIdx {
			t.Fatalf("step %d: the index set published before the write changed", step)
		}
		for i := range oldShards {
			if got := fmt.Sprint(oldShards[i].slots); got != wantShards[i] {
				t.Fatalf("step %d: shard %d published before the write changed", step, i)
			}
		}
	}
	if n := ix.Len(); n != 300+15-15 {
		t.Fatalf("Len = %d, want 300", n)
	}
}

// TestIndexerAddRefilesWhenAddIndexersRanDuringItsIndexFunctions: Add runs
// the index functions before it takes the writer mutex; when AddIndexers
// completes meanwhile, the object is filed in the new index too (the index
// functions run again under the mutex), as a batch files an object queued
// before AddIndexers.
func TestIndexerAddRefilesWhenAddIndexersRanDuringItsIndexFunctions(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	ix := NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{
		appLabel: func(obj any) ([]string, error) {
			if obj.(*corev1.Pod).Name == "slow" {
				once.Do(func() { close(entered); <-release })
			}
			return modelLabelIndex(appLabel)(obj)
		},
	})
	added := make(chan error, 1)
	go func() { added <- ix.Add(pod("a", "slow", "3", appWeb, "tier=fe")) }()
	<-entered
	must(t, ix.AddIndexers(toolscache.Indexers{tierLabel: modelLabelIndex(tierLabel)}))
	close(release)
	must(t, <-added)
	equalStrings(t, "tier=fe", byIndex(t, ix, tierLabel, "fe"), []string{"a/slow@3"})
	equalStrings(t, "app=web", byIndex(t, ix, appLabel, "web"), []string{"a/slow@3"})
	if got := ix.LastStoreSyncResourceVersion(); got != "3" {
		t.Fatalf("store RV = %q, want 3", got)
	}
}

// TestIndexerDeleteAndBookmarkWaitForAnOpenBatch: Delete and Bookmark, like
// Add, wait for an open batch's commit; the store's RV is then the newest
// of the batch's, the deleted object's and the bookmark's, whatever order
// they were recorded in.
func TestIndexerDeleteAndBookmarkWaitForAnOpenBatch(t *testing.T) {
	ix := newBatchTestIndexer()
	must(t, ix.Add(pod("a", "p", "10", appWeb)))
	w := ix.beginBatch(1)
	must(t, w.put("a/q", pod("a", "q", "12", appWeb)))
	done := make(chan string, 2)
	go func() { must(t, ix.Delete(pod("a", "p", "13"))); done <- "delete" }()
	go func() { ix.Bookmark("11"); done <- "bookmark" }()
	select {
	case what := <-done:
		t.Fatalf("%s ran while a batch was open", what)
	case <-time.After(20 * time.Millisecond):
	}
	w.commit()
	<-done
	<-done
	equalStrings(t, "app=web", byIndex(t, ix, appLabel, "web"), []string{"a/q@12"})
	if got := ix.LastStoreSyncResourceVersion(); got != "13" {
		t.Fatalf("store RV = %q, want 13 (the deleted object's)", got)
	}
	ix.Bookmark("14")
	if got := ix.LastStoreSyncResourceVersion(); got != "14" {
		t.Fatalf("store RV after a newer bookmark = %q, want 14", got)
	}

	// A tombstone's RV is not recorded.
	tomb := NewIndexer(toolscache.DeletionHandlingMetaNamespaceKeyFunc, nil)
	must(t, tomb.Add(pod("a", "q", "13")))
	must(t, tomb.Delete(toolscache.DeletedFinalStateUnknown{Key: "a/q", Obj: pod("a", "q", "20")}))
	if got := tomb.LastStoreSyncResourceVersion(); got != "13" || tomb.Len() != 0 {
		t.Fatalf("after deleting a tombstone: store RV %q, %d keys; want 13, none", got, tomb.Len())
	}
}

// TestWriteBatchKeepsObjectsTheCodecCannotEncodeDecoded: a batch's write of
// an object (not early encoded) under compact storage encodes it, and keeps
// one the codec refuses decoded, reported once, as Add does.
func TestWriteBatchKeepsObjectsTheCodecCannotEncodeDecoded(t *testing.T) {
	codec := podCodec(t)
	codec.failEncode = map[string]bool{"bad": true}
	var reported []string
	ix := NewIndexerWithOptions(toolscache.MetaNamespaceKeyFunc, nil, IndexerOptions{Codec: codec,
		OnCodecError: func(key string, err error) { reported = append(reported, key+": "+err.Error()) }})
	bad, good := fullPod("ns", "bad", "1"), fullPod("ns", "good", "2")
	w := ix.beginBatch(2)
	must(t, w.put("ns/bad", bad))
	must(t, w.put("ns/good", good))
	w.commit()
	if s := ix.StoredStats(); s.Objects != 2 || s.Encoded != 1 || s.EncodedBytes != int64(good.Size()) {
		t.Fatalf("StoredStats = %+v, want 2 objects, 1 encoded of %d bytes", s, good.Size())
	}
	got, ok, err := ix.GetByKey("ns/bad")
	if !ok || err != nil || got == bad || describe(got) != "ns/bad@1" {
		t.Fatalf("GetByKey(bad) = %v, %v, %v: want a copy of the object kept decoded", describe(got), ok, err)
	}
	if want := "ns/bad: encode: cannot represent bad"; strings.Join(reported, "|") != want {
		t.Fatalf("reported %q, want %q", reported, want)
	}
}
