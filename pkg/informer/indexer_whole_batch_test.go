package informer

import (
	"fmt"
	"testing"
)

// TestWholeBatchIsInvisibleUntilCommit: readers see nothing of a whole
// batch before its commit — not an update that keeps the index values, not
// a delete, not a move or an add — and all of it after; a reader still
// holding the table loaded before the commit keeps seeing the old store.
func TestWholeBatchIsInvisibleUntilCommit(t *testing.T) {
	ix := newBatchTestIndexer()
	must(t, ix.Add(pod("a", "same", "1", appWeb)))
	must(t, ix.Add(pod("a", "moves", "2", appWeb)))
	must(t, ix.Add(pod("a", "gone", "3", "app=db")))
	before := viewOf(t, ix)
	old := ix.table.Load()

	w := ix.beginWholeBatch(1)
	must(t, w.put("a/same", pod("a", "same", "4", appWeb)))
	must(t, w.put("a/moves", pod("a", "moves", "5", "app=two")))
	if !w.remove("a/gone") {
		t.Fatal("remove of a stored key reported absent")
	}
	must(t, w.put("a/new", pod("a", "new", "6", "app=db")))
	got := batchGet(w, "a/same") + " " + batchGet(w, "a/gone") + " " + batchGet(w, "a/new")
	if got != "a/same@4 absent a/new@6" {
		t.Fatalf("the batch's own gets = %s", got)
	}
	checkView(t, "readers before commit", viewOf(t, ix), before)
	w.commit()
	after := readerView{
		keys:      []string{"a/moves", "a/new", "a/same"},
		list:      []string{"a/moves@5", "a/new@6", "a/same@4"},
		web:       []string{"a/same@4", "a/same"},
		db:        []string{"a/new@6"},
		twoA:      []string{"a/moves@5"},
		ns:        []string{"a/moves@5", "a/new@6", "a/same@4"},
		appValues: []string{"db", "two-a", "two-b", "web"},
		len:       3,
		rv:        "6",
	}
	checkView(t, "readers after commit", viewOf(t, ix), after)

	// The table loaded before the commit still holds the old store.
	held := &Indexer{keyFunc: ix.keyFunc}
	held.table.Store(old)
	checkView(t, "a reader holding the old table", viewOf(t, held), before)

	// A whole batch that adds enough keys to grow the table publishes the
	// grown table, indexed, at once.
	w = ix.beginWholeBatch(0)
	for i := range 1000 {
		must(t, w.put(fmt.Sprintf("a/g%d", i), pod("a", fmt.Sprintf("g%d", i), "7", appWeb)))
	}
	checkView(t, "readers before the growing batch's commit", viewOf(t, ix), after)
	w.commit()
	if n, bits := ix.Len(), ix.table.Load().bits; n != 1003 || n > segmentTarget<<bits {
		t.Fatalf("after the growing batch: %d keys in %d shards", n, 1<<bits)
	}
	if web := byIndex(t, ix, appLabel, "web"); len(web) != 1001 {
		t.Fatalf("ByIndex(app, web) after the growing batch: %d objects, want 1001", len(web))
	}
}
