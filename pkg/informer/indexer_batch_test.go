//nolint:goconst // Test fixtures read better as literals.
package informer

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// readerView is everything a reader of ix sees, rendered.
type readerView struct {
	keys, list, web, db, twoA, ns, appValues []string
	len                                      int
	rv                                       string
}

// get returns key's record as the batch sees it, or nil (the pop loop reads it
// through swap and take instead).
func (b *writeBatch) get(key string) *record {
	h := keyHash(key)
	s := b.segment(b.slotOf(h))
	if i, ok := s.search(h, key); ok {
		return s.slots[i].e.rec.Load()
	}
	return nil
}

func viewOf(t *testing.T, ix *Indexer) readerView {
	t.Helper()
	webKeys, err := ix.IndexKeys(appLabel, "web")
	must(t, err)
	return readerView{
		keys:      sortedKeys(ix),
		list:      describeAll(ix.List()),
		web:       append(byIndex(t, ix, appLabel, "web"), strings.Join(webKeys, "+")),
		db:        byIndex(t, ix, appLabel, "db"),
		twoA:      byIndex(t, ix, appLabel, "two-a"),
		ns:        byIndex(t, ix, toolscache.NamespaceIndex, "a"),
		appValues: ix.ListIndexFuncValues(appLabel),
		len:       ix.Len(),
		rv:        ix.LastStoreSyncResourceVersion(),
	}
}

func checkView(t *testing.T, what string, got, want readerView) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

// newBatchTestIndexer has a namespace index and an "app" label index whose
// value "two" files under two-a and two-b and "bad" fails.
func newBatchTestIndexer() *Indexer {
	return NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{
		toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc,
		appLabel:                  modelLabelIndex(appLabel),
	})
}

// batchGet renders the batch's own view of key.
func batchGet(w *writeBatch, key string) string {
	if r := w.get(key); r != nil {
		return describe(r.obj)
	}
	return "absent"
}

func TestWriteBatchAddsAreInvisibleUntilCommit(t *testing.T) {
	ix := newBatchTestIndexer()
	must(t, ix.Add(pod("a", "p1", "1", appWeb)))
	before := viewOf(t, ix)

	w := ix.beginBatch(2)
	must(t, w.put("a/p2", pod("a", "p2", "2", appWeb)))
	must(t, w.put("a/p3", pod("a", "p3", "3", "app=db")))
	if got := batchGet(w, "a/p2"); got != "a/p2@2" {
		t.Fatalf("the batch's own get = %s, want a/p2@2", got)
	}
	checkView(t, "readers before commit", viewOf(t, ix), before)
	if _, ok, _ := ix.GetByKey("a/p2"); ok {
		t.Fatal("GetByKey found a key added by an uncommitted batch")
	}
	w.commit()
	checkView(t, "readers after commit", viewOf(t, ix), readerView{
		keys:      []string{"a/p1", "a/p2", "a/p3"},
		list:      []string{"a/p1@1", "a/p2@2", "a/p3@3"},
		web:       []string{"a/p1@1", "a/p2@2", "a/p1+a/p2"},
		db:        []string{"a/p3@3"},
		twoA:      []string{},
		ns:        []string{"a/p1@1", "a/p2@2", "a/p3@3"},
		appValues: []string{"db", "web"},
		len:       3,
		rv:        "3",
	})
}

// TestWriteBatchUpdatesAndDeletesOfStoredKeysAsDocumented pins what
// writeBatch documents: an update of a stored key that keeps its index
// values and a delete are visible at once; a stored key whose index values
// change is in neither value's ByIndex until commit; Len and the store's RV
// change at commit.
func TestWriteBatchUpdatesAndDeletesOfStoredKeysAsDocumented(t *testing.T) {
	ix := newBatchTestIndexer()
	must(t, ix.Add(pod("a", "same", "1", appWeb)))
	must(t, ix.Add(pod("a", "moves", "2", appWeb)))
	must(t, ix.Add(pod("a", "gone", "3", "app=db")))

	w := ix.beginBatch(0)
	must(t, w.put("a/same", pod("a", "same", "4", appWeb)))
	must(t, w.put("a/moves", pod("a", "moves", "5", "app=two")))
	if !w.remove("a/gone") {
		t.Fatal("remove of a stored key reported absent")
	}
	checkView(t, "readers before commit", viewOf(t, ix), readerView{
		keys:      []string{"a/moves", "a/same"},
		list:      []string{"a/moves@5", "a/same@4"},
		web:       []string{"a/same@4", "a/same"},
		db:        []string{},
		twoA:      []string{},
		ns:        []string{"a/moves@5", "a/same@4"},
		appValues: []string{"db", "web"},
		len:       3,
		rv:        "3",
	})
	w.commit()
	checkView(t, "readers after commit", viewOf(t, ix), readerView{
		keys:      []string{"a/moves", "a/same"},
		list:      []string{"a/moves@5", "a/same@4"},
		web:       []string{"a/same@4", "a/same"},
		db:        []string{},
		twoA:      []string{"a/moves@5"},
		ns:        []string{"a/moves@5", "a/same@4"},
		appValues: []string{"two-a", "two-b", "web"},
		len:       2,
		rv:        "5",
	})
	equalStrings(t, "two-b", byIndex(t, ix, appLabel, "two-b"), []string{"a/moves@5"})
}

func TestWriteBatchMovesIndexEntriesWithinOneBatch(t *testing.T) {
	ix := newBatchTestIndexer()
	must(t, ix.Add(pod("a", "p1", "1", "app=two")))
	must(t, ix.Add(pod("a", "p2", "2", appWeb)))

	w := ix.beginBatch(1)
	must(t, w.put("a/p1", pod("a", "p1", "3", "app=db")))  // two-a, two-b → db
	must(t, w.put("a/p2", pod("a", "p2", "4")))            // web → none
	must(t, w.put("a/p3", pod("a", "p3", "5", appWeb)))    // new under web...
	must(t, w.put("a/p3", pod("a", "p3", "6", "app=two"))) // ...then moved to two-a, two-b
	must(t, w.put("a/p1", pod("a", "p1", "7", appWeb)))    // db → web
	w.commit()
	checkView(t, "after commit", viewOf(t, ix), readerView{
		keys:      []string{"a/p1", "a/p2", "a/p3"},
		list:      []string{"a/p1@7", "a/p2@4", "a/p3@6"},
		web:       []string{"a/p1@7", "a/p1"},
		db:        []string{},
		twoA:      []string{"a/p3@6"},
		ns:        []string{"a/p1@7", "a/p2@4", "a/p3@6"},
		appValues: []string{"two-a", "two-b", "web"},
		len:       3,
		rv:        "7",
	})
	keys, err := ix.IndexKeys(appLabel, "two-b")
	must(t, err)
	equalStrings(t, "two-b keys", keys, []string{"a/p3"})
	objs, err := ix.Index(appLabel, pod("x", "q", "", "app=two"))
	must(t, err)
	equalStrings(t, "Index by an object filed under two-a and two-b", describeAll(objs), []string{"a/p3@6"})
}

func TestWriteBatchDeleteAndReAddOfAKeyInOneBatch(t *testing.T) {
	ix := newBatchTestIndexer()
	must(t, ix.Add(pod("a", "p1", "1", appWeb)))

	w := ix.beginBatch(1)
	if !w.remove("a/p1") {
		t.Fatal("remove of a stored key reported absent")
	}
	if got := batchGet(w, "a/p1"); got != "absent" {
		t.Fatalf("the batch's get after remove = %s", got)
	}
	if w.remove("a/p1") {
		t.Fatal("second remove reported present")
	}
	must(t, w.put("a/p1", pod("a", "p1", "2", "app=db")))
	if got := batchGet(w, "a/p1"); got != "a/p1@2" {
		t.Fatalf("the batch's get after re-add = %s", got)
	}
	// The delete is visible at once, the re-added object only at commit.
	if _, ok, _ := ix.GetByKey("a/p1"); ok {
		t.Fatal("readers see a/p1 between its delete and the commit")
	}
	w.commit()
	checkView(t, "after commit", viewOf(t, ix), readerView{
		keys:      []string{"a/p1"},
		list:      []string{"a/p1@2"},
		web:       []string{""},
		db:        []string{"a/p1@2"},
		twoA:      []string{},
		ns:        []string{"a/p1@2"},
		appValues: []string{"db"},
		len:       1,
		rv:        "2",
	})
}

func TestWriteBatchAddThenDeleteOfANewKeyLeavesNoTrace(t *testing.T) {
	ix := newBatchTestIndexer()
	must(t, ix.Add(pod("a", "p1", "1", appWeb)))
	before := viewOf(t, ix)
	w := ix.beginBatch(1)
	must(t, w.put("a/tmp", pod("a", "tmp", "1", "app=two")))
	if !w.remove("a/tmp") {
		t.Fatal("remove of a key added in the batch reported absent")
	}
	if w.remove("a/never") {
		t.Fatal("remove of an absent key reported present")
	}
	w.commit()
	checkView(t, "after commit", viewOf(t, ix), before)
}

func TestWriteBatchAddingAKeyTwiceKeepsTheLast(t *testing.T) {
	ix := newBatchTestIndexer()
	w := ix.beginBatch(2)
	must(t, w.put("a/n", pod("a", "n", "1", appWeb)))
	last := pod("a", "n", "2", "app=db")
	must(t, w.put("a/n", last))
	w.commit()
	checkView(t, "after commit", viewOf(t, ix), readerView{
		keys: []string{"a/n"}, list: []string{"a/n@2"}, web: []string{""}, db: []string{"a/n@2"},
		twoA: []string{}, ns: []string{"a/n@2"}, appValues: []string{"db"}, len: 1, rv: "2",
	})
	if got, _, _ := ix.GetByKey("a/n"); got != last {
		t.Fatal("GetByKey does not return the object last put")
	}
}

func TestWriteBatchPutReportsIndexErrorsAsIndexerAdd(t *testing.T) {
	ix := newBatchTestIndexer()
	w := ix.beginBatch(1)
	err := w.put("a/b", pod("a", "b", "1", "app=bad"))
	w.commit()
	want := `index "app" of key "a/b": bad label`
	if err == nil || err.Error() != want {
		t.Fatalf("put error = %v, want %q", err, want)
	}
	if err := ix.Add(pod("a", "c", "2", "app=bad")); err == nil || err.Error() != `index "app" of key "a/c": bad label` {
		t.Fatalf("Indexer.Add error = %v", err)
	}
	// Stored, filed in the namespace index, not in app.
	equalStrings(t, "ns", byIndex(t, ix, toolscache.NamespaceIndex, "a"), []string{"a/b@1", "a/c@2"})
	equalStrings(t, "app values", ix.ListIndexFuncValues(appLabel), []string{})
}

func TestWriteBatchStoreRVIsTheNewestPutAtCommit(t *testing.T) {
	ix := newBatchTestIndexer()
	must(t, ix.Add(pod("a", "p", "10")))
	w := ix.beginBatch(2)
	must(t, w.put("a/q", pod("a", "q", "12")))
	must(t, w.put("a/r", pod("a", "r", "11"))) // older: does not lower it
	w.remove("a/p")                            // a remove carries no RV
	if got := ix.LastStoreSyncResourceVersion(); got != "10" {
		t.Fatalf("store RV before commit = %q, want 10", got)
	}
	w.commit()
	if got := ix.LastStoreSyncResourceVersion(); got != "12" {
		t.Fatalf("store RV after commit = %q, want 12", got)
	}
}

// renderIndexes renders an index set: name → value → sorted keys, the
// records as the entries' current records (for value filing only the
// bucket membership counts).
func renderIndexes(funcs *indexFuncs, set *indexSet) string {
	var b strings.Builder
	for i, name := range funcs.names {
		set.byName[i].each(func(v indexValue, bk bucket) bool {
			var keys []string
			bk.each(func(e *cell) bool { keys = append(keys, e.key); return true })
			slices.Sort(keys)
			fmt.Fprintf(&b, "%s=%s:%v;", name, v, keys)
			return true
		})
	}
	parts := strings.Split(b.String(), ";")
	slices.Sort(parts)
	return strings.Join(parts, ";")
}

// TestWriteBatchLeavesPublishedIndexesAndShardsUntouched: a batch copies
// before it changes; the index tries and segments published before it (which
// readers may hold) are never changed in place, however many writes the
// batch makes to the same nodes.
func TestWriteBatchLeavesPublishedIndexesAndShardsUntouched(t *testing.T) {
	ix := newBatchTestIndexer()
	apps := []string{"web", "db", "two", "x", "y"}
	for i := range 3000 {
		must(t, ix.Add(pod("a", fmt.Sprintf("p%d", i), "1", "app="+apps[i%len(apps)])))
	}
	tbl := ix.table.Load()
	oldIdx := tbl.indices.Load()
	wantIdx := renderIndexes(tbl.funcs, oldIdx)
	oldShards := make([]*segment, len(tbl.segments))
	wantShards := make([]string, 0, len(tbl.segments))
	for i := range tbl.segments {
		oldShards[i] = tbl.segments[i].Load()
		wantShards = append(wantShards, fmt.Sprint(oldShards[i].slots))
	}

	w := ix.beginBatch(0) // no growth: 3000 + 500 keys fit the table
	for i := range 3000 {
		switch i % 3 {
		case 0:
			must(t, w.put(fmt.Sprintf("a/p%d", i), pod("a", fmt.Sprintf("p%d", i), "2", "app="+apps[(i+1)%len(apps)])))
		case 1:
			w.remove(fmt.Sprintf("a/p%d", i))
		}
	}
	for i := range 500 {
		must(t, w.put(fmt.Sprintf("a/n%d", i), pod("a", fmt.Sprintf("n%d", i), "3", "app=web")))
	}
	w.commit()
	if ix.table.Load() != tbl {
		t.Fatal("the table was replaced: grow the store less")
	}
	if got := renderIndexes(tbl.funcs, oldIdx); got != wantIdx {
		t.Fatal("the index set published before the batch changed")
	}
	for i := range oldShards {
		if got := fmt.Sprint(oldShards[i].slots); got != wantShards[i] {
			t.Fatalf("shard %d published before the batch changed", i)
		}
	}
	if ix.Len() != 3000-1000+500 {
		t.Fatalf("Len = %d, want %d", ix.Len(), 3000-1000+500)
	}
	web, err := ix.IndexKeys(appLabel, "web")
	must(t, err)
	// web: p%5==0 kept as web unless moved (i%3==0 → db) or removed (i%3==1),
	// plus p%5==4 moved to web (i%3==0: y → web), plus the 500 new ones.
	want := 500
	for i := range 3000 {
		if (i%5 == 0 && i%3 == 2) || (i%5 == 4 && i%3 == 0) {
			want++
		}
	}
	if len(web) != want {
		t.Fatalf("web holds %d keys, want %d", len(web), want)
	}
}

// TestWriteBatchMatchesModel applies random batches (puts of new and stored
// keys with changing, multi-valued and failing index values, removes, hints
// too small and too large; a third of them whole) interleaved with single
// writes (Add, Delete, Bookmark), Replace and AddIndexers, and compares every read with the model
// after each commit. Before each commit, readers must see only stored keys,
// each as stored before the batch or as the batch last wrote it, and ByIndex
// only objects filed under the value asked; before a whole batch's commit,
// exactly the store as it was before the batch.
func TestWriteBatchMatchesModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	ix := newBatchTestIndexer()
	m := &indexerModel{objs: map[string]*corev1.Pod{},
		indexed: map[string]bool{toolscache.NamespaceIndex: true, appLabel: true}}
	apps := []string{"web", "db", badLabelValue, "two", ""}
	tiers := []string{"fe", "be", badLabelValue}
	rv := 0
	newPod := func() (*corev1.Pod, string) {
		rv++
		ns, name := fmt.Sprintf("ns%d", rng.IntN(3)), fmt.Sprintf("p%d", rng.IntN(400))
		p := pod(ns, name, strconv.Itoa(rv))
		p.Labels = map[string]string{tierLabel: tiers[rng.IntN(len(tiers))]}
		if a := apps[rng.IntN(len(apps))]; a != "" {
			p.Labels[appLabel] = a
		}
		return p, ns + "/" + name
	}
	for step := range 300 {
		switch r := rng.IntN(20); {
		case r == 0:
			p, key := newPod()
			_ = ix.Add(p)
			m.objs[key] = p
			m.observe(p.ResourceVersion)
		case r == 3:
			p, key := newPod()
			must(t, ix.Delete(p))
			delete(m.objs, key)
			m.observe(p.ResourceVersion)
		case r == 4:
			rv++
			bm := strconv.Itoa(rv - rng.IntN(3)) // possibly older than the store's
			ix.Bookmark(bm)
			m.observe(bm)
		case r == 1 && !m.indexed[tierLabel]:
			_ = ix.AddIndexers(toolscache.Indexers{tierLabel: modelLabelIndex(tierLabel)})
			m.indexed[tierLabel] = true
		case r == 2:
			keep := map[string]*corev1.Pod{}
			var list []any
			for _, k := range slices.Sorted(maps.Keys(m.objs)) {
				if rng.IntN(2) == 0 {
					keep[k] = m.objs[k]
					list = append(list, m.objs[k])
				}
			}
			rv++
			_ = ix.Replace(list, strconv.Itoa(rv))
			m.objs, m.rv = keep, strconv.Itoa(rv)
		default:
			before := &indexerModel{objs: maps.Clone(m.objs), indexed: m.indexed, rv: m.rv}
			ops := rng.IntN(200)
			whole := rng.IntN(3) == 0
			begin := ix.beginBatch
			if whole {
				begin = ix.beginWholeBatch
			}
			w := begin(rng.IntN(ops + 1))
			for range ops {
				if p, key := newPod(); rng.IntN(4) > 0 {
					_ = w.put(key, p)
					m.objs[key] = p
					m.observe(p.ResourceVersion)
				} else {
					_, present := m.objs[key]
					if w.remove(key) != present {
						t.Fatalf("step %d: remove(%s) = %v, want %v", step, key, !present, present)
					}
					delete(m.objs, key)
				}
			}
			if whole {
				before.check(t, ix, step)
			} else {
				checkDuringBatch(t, ix, step, before.objs, m.objs)
			}
			w.commit()
			if n, bits := ix.Len(), ix.table.Load().bits; n > segmentTarget<<bits {
				t.Fatalf("step %d: %d keys in %d shards after commit", step, n, 1<<bits)
			}
		}
		m.check(t, ix, step)
	}
}

// checkDuringBatch checks what readers see while a batch is open: stored
// keys only (before), each as before or as the batch wrote it (after), and
// ByIndex returning only objects whose index values hold the value.
func checkDuringBatch(t *testing.T, ix *Indexer, step int, before, after map[string]*corev1.Pod) {
	t.Helper()
	for _, obj := range ix.List() {
		key := keyOfObj(obj)
		if obj != before[key] && obj != after[key] {
			t.Fatalf("step %d: before commit, List returned %s, neither stored nor the batch's last write", step, describe(obj))
		}
		if _, ok := before[key]; !ok {
			t.Fatalf("step %d: before commit, List returned %s, added by the batch", step, describe(obj))
		}
	}
	for _, v := range []string{"web", "db", "two-a", "two-b"} {
		objs, err := ix.ByIndex(appLabel, v)
		must(t, err)
		for _, obj := range objs {
			vals, _ := modelLabelIndex(appLabel)(obj)
			if !slices.Contains(vals, v) {
				t.Fatalf("step %d: before commit, ByIndex(app, %s) returned %s filed under %v", step, v, describe(obj), vals)
			}
		}
	}
}

// TestWriteBatchHoldsOffOtherWritersUntilCommit: a batch holds the writer
// mutex, so AddIndexers, Replace and single writes started meanwhile run
// after its commit and see its writes (AddIndexers back-fills them, Replace
// discards them).
func TestWriteBatchHoldsOffOtherWritersUntilCommit(t *testing.T) {
	ix := newBatchTestIndexer()
	must(t, ix.Add(pod("a", "old", "1", "tier=be")))
	w := ix.beginBatch(1)
	must(t, w.put("a/new", pod("a", "new", "2", "tier=fe")))
	added := make(chan error, 1)
	go func() { added <- ix.AddIndexers(toolscache.Indexers{tierLabel: modelLabelIndex(tierLabel)}) }()
	stored := make(chan error, 1)
	go func() { stored <- ix.Add(pod("a", "single", "3", "tier=fe")) }()
	select {
	case <-added:
		t.Fatal("AddIndexers ran while a batch was open")
	case <-stored:
		t.Fatal("Add ran while a batch was open")
	case <-time.After(20 * time.Millisecond):
	}
	must(t, w.put("a/late", pod("a", "late", "4", "tier=fe")))
	w.commit()
	must(t, <-added)
	must(t, <-stored)
	equalStrings(t, "tier=fe", byIndex(t, ix, tierLabel, "fe"), []string{"a/late@4", "a/new@2", "a/single@3"})
	equalStrings(t, "tier=be", byIndex(t, ix, tierLabel, "be"), []string{"a/old@1"})

	// A batch after AddIndexers files in the new index too, and moves.
	w = ix.beginBatch(1)
	must(t, w.put("a/new", pod("a", "new", "5", "tier=be")))
	w.commit()
	equalStrings(t, "tier=be after the next batch", byIndex(t, ix, tierLabel, "be"), []string{"a/new@5", "a/old@1"})

	w = ix.beginBatch(1)
	must(t, w.put("a/doomed", pod("a", "doomed", "6")))
	replaced := make(chan error, 1)
	go func() { replaced <- ix.Replace([]any{pod("a", "r", "7", "tier=fe")}, "9") }()
	select {
	case <-replaced:
		t.Fatal("Replace ran while a batch was open")
	case <-time.After(20 * time.Millisecond):
	}
	w.commit()
	must(t, <-replaced)
	equalStrings(t, "store after Replace", describeAll(ix.List()), []string{"a/r@7"})
	equalStrings(t, "tier=fe after Replace", byIndex(t, ix, tierLabel, "fe"), []string{"a/r@7"})
	if got := ix.LastStoreSyncResourceVersion(); got != "9" {
		t.Fatalf("store RV after Replace = %q, want 9", got)
	}
	// A batch after Replace starts from the replaced content.
	w = ix.beginBatch(0)
	if got := batchGet(w, "a/r"); got != "a/r@7" {
		t.Fatalf("batch after Replace sees a/r as %s", got)
	}
	if got := batchGet(w, "a/doomed"); got != "absent" {
		t.Fatalf("batch after Replace sees a/doomed as %s", got)
	}
	w.commit()
}

// TestWriteBatchConcurrentReadersSeeNoTornObjects runs readers against a
// writer that moves objects between index values in batches (with -race
// this also checks the publication is race-free). Every object a reader gets
// is filed under the value it asked for, GetByKey returns the key's object,
// and a key's resourceVersion never goes back for a reader.
func TestWriteBatchConcurrentReadersSeeNoTornObjects(t *testing.T) {
	ix := newBatchTestIndexer()
	const keys = 300
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for r := range 3 {
		wg.Go(func() {
			lastRV := map[string]int{}
			for n := 0; !stop.Load(); n++ {
				for _, v := range []string{"web", "db", "two-a"} {
					objs, _ := ix.ByIndex(appLabel, v)
					for _, obj := range objs {
						if vals, _ := modelLabelIndex(appLabel)(obj); !slices.Contains(vals, v) {
							errs <- fmt.Sprintf("reader %d: ByIndex(app, %s) returned %s filed under %v", r, v, describe(obj), vals)
							return
						}
					}
				}
				key := fmt.Sprintf("a/p%d", n%keys)
				if obj, ok, _ := ix.GetByKey(key); ok {
					if keyOfObj(obj) != key {
						errs <- fmt.Sprintf("reader %d: GetByKey(%s) returned %s", r, key, describe(obj))
						return
					}
					rv, _ := strconv.Atoi(obj.(*corev1.Pod).ResourceVersion)
					if rv < lastRV[key] {
						errs <- fmt.Sprintf("reader %d: %s went back from RV %d to %d", r, key, lastRV[key], rv)
						return
					}
					lastRV[key] = rv
				}
			}
		})
	}
	apps := []string{"web", "db", "two"}
	rv := 0
	for round := range 200 {
		w := ix.beginBatch(keys)
		for i := range keys {
			rv++
			key := fmt.Sprintf("a/p%d", i)
			if (i+round)%7 == 0 {
				w.remove(key)
				continue
			}
			must(t, w.put(key, pod("a", fmt.Sprintf("p%d", i), strconv.Itoa(rv), "app="+apps[(i+round)%3])))
		}
		w.commit()
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
