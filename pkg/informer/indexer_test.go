package informer

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

func labelIndex(key string) toolscache.IndexFunc {
	return func(obj any) ([]string, error) {
		p := obj.(*corev1.Pod)
		if v, ok := p.Labels[key]; ok {
			return []string{v}, nil
		}
		return nil, nil
	}
}

func newTestIndexer() *Indexer {
	return NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{
		toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc,
		appLabel:                  labelIndex(appLabel),
	})
}

func byIndex(t *testing.T, ix *Indexer, name, value string) []string {
	t.Helper()
	objs, err := ix.ByIndex(name, value)
	if err != nil {
		t.Fatalf("ByIndex(%q, %q): %v", name, value, err)
	}
	return describeAll(objs)
}

func TestIndexerAddUpdateDeleteMaintainIndexes(t *testing.T) {
	ix := newTestIndexer()
	must(t, ix.Add(pod("a", "p1", "1", appWeb)))
	must(t, ix.Add(pod("a", "p2", "2", appWeb)))
	must(t, ix.Add(pod("b", "p3", "3", "app=db")))

	//nolint:goconst // expected values are spelled out so the test reads as its specification
	equalStrings(t, appWeb, byIndex(t, ix, appLabel, "web"), []string{"a/p1@1", "a/p2@2"})
	equalStrings(t, "ns a", byIndex(t, ix, toolscache.NamespaceIndex, "a"), []string{"a/p1@1", "a/p2@2"})

	// Update moves p2 from web to db: the old entry is removed.
	must(t, ix.Update(pod("a", "p2", "4", "app=db")))
	equalStrings(t, "app=web after update", byIndex(t, ix, appLabel, "web"), []string{"a/p1@1"})
	equalStrings(t, "app=db after update", byIndex(t, ix, appLabel, "db"), []string{"a/p2@4", "b/p3@3"})

	must(t, ix.Delete(pod("a", "p1", "5")))
	equalStrings(t, "app=web after delete", byIndex(t, ix, appLabel, "web"), []string{})
	equalStrings(t, "values of app", ix.ListIndexFuncValues(appLabel), []string{"db"})
	equalStrings(t, "keys", sortedKeys(ix), []string{"a/p2", "b/p3"})
	if got := ix.LastStoreSyncResourceVersion(); got != "5" {
		t.Fatalf("store RV = %q, want 5", got)
	}
}

func TestIndexerEmptyBucketsAreRemoved(t *testing.T) {
	ix := newTestIndexer()
	must(t, ix.Add(pod("a", "p1", "1", appWeb)))
	must(t, ix.Update(pod("a", "p1", "2", "app=db")))
	must(t, ix.Delete(pod("a", "p1", "3")))
	tbl := ix.table.Load()
	for i, name := range tbl.funcs.names {
		if n := tbl.indices.Load().byName[i].Len(); n != 0 {
			t.Errorf("index %q has %d value buckets, want none", name, n)
		}
	}
	if n := tbl.size.Load(); n != 0 {
		t.Errorf("%d items, want none", n)
	}
}

func TestIndexerFailingIndexFuncLeavesNoStaleEntries(t *testing.T) {
	fail := errors.New("boom")
	ix := NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{
		appLabel: func(obj any) ([]string, error) {
			p := obj.(*corev1.Pod)
			if p.Labels[appLabel] == badLabelValue {
				return nil, fail
			}
			return []string{p.Labels[appLabel]}, nil
		},
	})
	must(t, ix.Add(pod("a", "p1", "1", appWeb)))
	err := ix.Update(pod("a", "p1", "2", "app=bad"))
	if !errors.Is(err, fail) || !strings.Contains(err.Error(), `index "app"`) {
		t.Fatalf("Update error = %v, want the index error naming the index", err)
	}
	// The object is stored, but no longer filed under its old value.
	//nolint:goconst // expected values are spelled out so the test reads as its specification
	if obj, ok, _ := ix.GetByKey("a/p1"); !ok || describe(obj) != "a/p1@2" {
		t.Fatalf("GetByKey = %v %v, want a/p1@2", obj, ok)
	}
	equalStrings(t, appWeb, byIndex(t, ix, appLabel, "web"), []string{})
	equalStrings(t, "values", ix.ListIndexFuncValues(appLabel), []string{})
	// Deleting it works although the index func fails on it.
	must(t, ix.Delete(pod("a", "p1", "3", "app=bad")))
	equalStrings(t, "keys", sortedKeys(ix), []string{})
}

func TestByIndexUnknownIndexIsAnError(t *testing.T) {
	ix := newTestIndexer()
	const missing = "index with name nope does not exist"
	_, err := ix.ByIndex("nope", "x")
	if err == nil || err.Error() != missing {
		t.Fatalf("ByIndex error = %v", err)
	}
	if _, err := ix.IndexKeys("nope", "x"); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("IndexKeys error = %v", err)
	}
	if _, err := ix.Index("nope", pod("a", "p", "1")); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("Index error = %v", err)
	}
	if got := ix.ListIndexFuncValues("nope"); got != nil {
		t.Fatalf("ListIndexFuncValues = %v, want nil", got)
	}
}

func TestIndexReturnsObjectsSharingAValue(t *testing.T) {
	ix := newTestIndexer()
	must(t, ix.Add(pod("a", "p1", "1", appWeb)))
	must(t, ix.Add(pod("b", "p2", "2", appWeb)))
	must(t, ix.Add(pod("b", "p3", "3", "app=db")))
	objs, err := ix.Index(appLabel, pod("z", "probe", "", appWeb))
	must(t, err)
	equalStrings(t, "Index", describeAll(objs), []string{"a/p1@1", "b/p2@2"})
	keys, err := ix.IndexKeys(toolscache.NamespaceIndex, "b")
	must(t, err)
	equalStrings(t, "IndexKeys sorted", keys, []string{"b/p2", "b/p3"})
}

func TestAddIndexersAfterStartBackfills(t *testing.T) {
	ix := NewIndexer(toolscache.MetaNamespaceKeyFunc, nil)
	must(t, ix.Add(pod("a", "p1", "1", "tier=fe")))
	must(t, ix.Add(pod("a", "p2", "2", "tier=be")))
	must(t, ix.AddIndexers(toolscache.Indexers{tierLabel: labelIndex(tierLabel)}))
	equalStrings(t, "tier=fe", byIndex(t, ix, tierLabel, "fe"), []string{"a/p1@1"})
	// Later writes maintain the new index.
	must(t, ix.Add(pod("a", "p3", "3", "tier=fe")))
	equalStrings(t, "tier=fe after add", byIndex(t, ix, tierLabel, "fe"), []string{"a/p1@1", "a/p3@3"})
	if _, ok := ix.GetIndexers()[tierLabel]; !ok {
		t.Fatal("GetIndexers lacks tier")
	}
}

func TestAddIndexersDuplicateNameIsAnError(t *testing.T) {
	ix := newTestIndexer()
	err := ix.AddIndexers(toolscache.Indexers{appLabel: labelIndex(appLabel), "new": labelIndex("x")})
	if err == nil || !strings.Contains(err.Error(), appLabel) {
		t.Fatalf("AddIndexers error = %v, want a conflict on app", err)
	}
	if _, ok := ix.GetIndexers()["new"]; ok {
		t.Fatal("a failed AddIndexers added an index")
	}
}

func TestIndexerReplaceRebuildsAndRecordsRV(t *testing.T) {
	ix := newTestIndexer()
	must(t, ix.Add(pod("a", "old", "1", appWeb)))
	must(t, ix.Replace([]any{pod("a", "p1", "7", "app=db"), pod("b", "p2", "8", appWeb)}, "10"))
	equalStrings(t, "keys", sortedKeys(ix), []string{"a/p1", "b/p2"})
	equalStrings(t, appWeb, byIndex(t, ix, appLabel, "web"), []string{"b/p2@8"})
	equalStrings(t, "app=db", byIndex(t, ix, appLabel, "db"), []string{"a/p1@7"})
	if got := ix.LastStoreSyncResourceVersion(); got != "10" {
		t.Fatalf("RV = %q, want 10", got)
	}
}

func TestIndexerBookmarkNeverGoesBack(t *testing.T) {
	ix := newTestIndexer()
	ix.Bookmark("20")
	ix.Bookmark("15")
	if got := ix.LastStoreSyncResourceVersion(); got != "20" {
		t.Fatalf("RV = %q, want 20", got)
	}
	ix.Bookmark("21")
	if got := ix.LastStoreSyncResourceVersion(); got != "21" {
		t.Fatalf("RV = %q, want 21", got)
	}
}

func TestIndexerReturnedSlicesAreFresh(t *testing.T) {
	ix := newTestIndexer()
	must(t, ix.Add(pod("a", "p1", "1", appWeb)))
	l := ix.List()
	l[0] = nil
	objs, _ := ix.ByIndex(appLabel, "web")
	objs[0] = nil
	keys := ix.ListKeys()
	keys[0] = "x"
	equalStrings(t, "List after caller mutation", describeAll(ix.List()), []string{"a/p1@1"})
	equalStrings(t, "ByIndex after caller mutation", byIndex(t, ix, appLabel, "web"), []string{"a/p1@1"})
}

// TestIndexerConcurrentReadersAndWriter runs under -race: readers and
// AddIndexers race with a writer; at the end the indexes equal a rebuild.
func TestIndexerConcurrentReadersAndWriter(t *testing.T) {
	ix := newTestIndexer()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = ix.List()
				_, _ = ix.ByIndex(appLabel, "web")
				_, _, _ = ix.GetByKey("a/p1")
			}
		})
	}
	for i := range 2000 {
		app := []string{"web", "db", "cache"}[i%3]
		must(t, ix.Update(pod("a", fmt.Sprintf("p%d", i%50), fmt.Sprint(i+1), "app="+app, fmt.Sprintf("tier=t%d", i%4))))
		if i == 1000 {
			must(t, ix.AddIndexers(toolscache.Indexers{tierLabel: labelIndex(tierLabel)}))
		}
		if i%7 == 0 {
			must(t, ix.Delete(pod("a", fmt.Sprintf("p%d", (i+3)%50), "")))
		}
	}
	close(stop)
	wg.Wait()

	fresh := NewIndexer(toolscache.MetaNamespaceKeyFunc, ix.GetIndexers())
	must(t, fresh.Replace(ix.List(), "x"))
	for _, name := range []string{appLabel, tierLabel, toolscache.NamespaceIndex} {
		for _, v := range fresh.ListIndexFuncValues(name) {
			equalStrings(t, name+"="+v, byIndex(t, ix, name, v), byIndex(t, fresh, name, v))
		}
		equalStrings(t, "values of "+name, ix.ListIndexFuncValues(name), fresh.ListIndexFuncValues(name))
	}
}

// TestReadsNeverTakeTheWriterLock pins the structure behind invariant 6 of
// docs/architecture.md: every read completes while the writer's mutex is held, so no
// reader holds anything a writer could wait for. (Throughput under readers:
// test/bench BenchmarkStoreUpdate and `make bench` section B4.)
func TestReadsNeverTakeTheWriterLock(t *testing.T) {
	ix := newTestIndexer()
	for i := range 100 {
		must(t, ix.Add(pod("a", fmt.Sprintf("p%d", i), "1", appWeb)))
	}
	ix.writeMu.Lock()
	defer ix.writeMu.Unlock()
	done := make(chan []string)
	go func() {
		byIndex, _ := ix.ByIndex(appLabel, "web")
		index, _ := ix.Index(appLabel, pod("z", "probe", "", appWeb))
		keys, _ := ix.IndexKeys(toolscache.NamespaceIndex, "a")
		obj, _, _ := ix.GetByKey("a/p7")
		got, _, _ := ix.Get(pod("a", "p8", ""))
		done <- []string{
			fmt.Sprint(len(ix.List()), len(ix.ListKeys()), ix.Len(), len(byIndex), len(index), len(keys)),
			describe(obj), describe(got), fmt.Sprint(ix.ListIndexFuncValues(appLabel)),
			ix.LastStoreSyncResourceVersion(), fmt.Sprint(len(ix.GetIndexers())),
		}
	}()
	select {
	case got := <-done:
		equalStrings(t, "reads", got, []string{"100 100 100 100 100 100", "a/p7@1", "a/p8@1", "[web]", "1", "2"})
	case <-time.After(10 * time.Second):
		t.Fatal("a read waited for the writer's lock")
	}
}

func sortedKeys(ix *Indexer) []string {
	keys := ix.ListKeys()
	out := append([]string(nil), keys...)
	sortStrings(out)
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestIndexerGrowsShardsWhileReadersRead adds enough objects to double the
// segment table several times while readers look up every key already
// written: a write is visible to every read that starts after it returned,
// across growth.
func TestIndexerGrowsShardsWhileReadersRead(t *testing.T) {
	ix := newTestIndexer()
	startBits := ix.table.Load().bits
	var written atomic.Int64
	stop := make(chan struct{})
	misses := make(chan string, 1)
	var wg sync.WaitGroup
	for r := range 3 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				n := written.Load()
				if n == 0 {
					continue
				}
				key := fmt.Sprintf("a/p%d", (int64(i*7+r))%n)
				if _, ok, _ := ix.GetByKey(key); !ok {
					select {
					case misses <- key:
					default:
					}
				}
				if objs, _ := ix.ByIndex(toolscache.NamespaceIndex, "a"); int64(len(objs)) < n {
					select {
					case misses <- fmt.Sprintf("ByIndex: %d < %d", len(objs), n):
					default:
					}
				}
			}
		})
	}
	const total = 3000
	for i := range total {
		must(t, ix.Add(pod("a", fmt.Sprintf("p%d", i), "1", appWeb)))
		written.Store(int64(i + 1))
	}
	close(stop)
	wg.Wait()
	select {
	case m := <-misses:
		t.Fatalf("a reader missed a written object: %s", m)
	default:
	}
	if bits := ix.table.Load().bits; bits <= startBits || total > segmentTarget<<bits {
		t.Fatalf("table has 2^%d shards for %d objects (started with 2^%d)", bits, total, startBits)
	}
	if ix.Len() != total || len(ix.List()) != total || len(byIndex(t, ix, appLabel, "web")) != total {
		t.Fatalf("Len %d, List %d, want %d", ix.Len(), len(ix.List()), total)
	}
	for i := range total {
		if i%2 == 0 {
			must(t, ix.Delete(pod("a", fmt.Sprintf("p%d", i), "")))
		}
	}
	if ix.Len() != total/2 || len(ix.ListKeys()) != total/2 || len(byIndex(t, ix, appLabel, "web")) != total/2 {
		t.Fatalf("after deleting half: Len %d, want %d", ix.Len(), total/2)
	}
}

func TestIndexerReplaceKeepsTheLastOfDuplicateKeys(t *testing.T) {
	ix := newTestIndexer()
	must(t, ix.Replace([]any{pod("a", "p1", "1", appWeb), pod("a", "p2", "2"), pod("a", "p1", "3", "app=db")}, "5"))
	equalStrings(t, "List", describeAll(ix.List()), []string{"a/p1@3", "a/p2@2"})
	equalStrings(t, "app=db", byIndex(t, ix, appLabel, "db"), []string{"a/p1@3"})
	equalStrings(t, "app values", ix.ListIndexFuncValues(appLabel), []string{"db"})
	if ix.Len() != 2 {
		t.Fatalf("Len = %d", ix.Len())
	}
}
