package informer

import (
	"fmt"
	"strconv"
	"testing"
)

// popBatchApplied pops one batch of up to maxKeys keys, applies it to store
// and returns it rendered, with "relist " before each key marked relist.
func popBatchApplied(t *testing.T, f *deltaFIFO, maxKeys int, store *Indexer) []string {
	t.Helper()
	var got []string
	must(t, f.popBatch(maxKeys, func(batch []poppedKey, _ int) error {
		got = renderBatch(batch)
		for i, p := range batch {
			if p.relist {
				got[i] = "relist " + got[i]
			}
		}
		applyBatch(store, batch)
		return nil
	}))
	return got
}

// TestPopBatchTakesARelistWhole: after a Replace that is not the first (a
// relist), the next popBatch takes every key the relist queued, whatever
// maxKeys: its Replaced deltas, its tombstones, and the keys that watch
// events had queued before it (merged with what the relist queued for them);
// keys queued after the relist come in batches of maxKeys again. The first
// Replace is popped in batches of maxKeys.
func TestPopBatchTakesARelistWhole(t *testing.T) {
	store := newTestIndexer()
	f := newFIFO(sortedKnown{store})
	list := make([]any, 0, 5)
	for i := range 5 {
		list = append(list, pod("a", fmt.Sprintf("p%d", i), strconv.Itoa(i+1)))
	}
	must(t, f.Replace(list, "5"))
	for _, want := range [][]string{
		{"a/p0[initial]=Replaced:a/p0@1", "a/p1[initial]=Replaced:a/p1@2"},
		{"a/p2[initial]=Replaced:a/p2@3", "a/p3[initial]=Replaced:a/p3@4"},
		{"a/p4[initial]=Replaced:a/p4@5"},
	} {
		equalStrings(t, "initial list batch", popBatchApplied(t, f, 2, store), want)
	}

	// Watch events before the relist, then the relist: p0 unchanged, p1
	// updated, p2 deleted at the server, w (only ever queued) gone too, p5
	// created.
	must(t, f.Update(pod("a", "p1", "6")))
	must(t, f.Add(pod("a", "w", "7")))
	must(t, f.Replace([]any{pod("a", "p0", "1"), pod("a", "p1", "8"), pod("a", "p3", "4"),
		pod("a", "p4", "5"), pod("a", "p5", "9")}, "10"))
	must(t, f.Add(pod("a", "late", "11")))
	must(t, f.Add(pod("a", "later", "12")))
	must(t, f.Add(pod("a", "latest", "13")))
	equalStrings(t, "the relist's batch", popBatchApplied(t, f, 2, store), []string{
		"relist a/p1=Updated:a/p1@8",
		"relist a/w=Added:a/w@7,Deleted:tombstone(a/w@7)",
		"relist a/p0=Replaced:a/p0@1",
		"relist a/p3=Replaced:a/p3@4",
		"relist a/p4=Replaced:a/p4@5",
		"relist a/p5=Replaced:a/p5@9",
		"relist a/p2=Deleted:tombstone(a/p2@3)",
	})
	equalStrings(t, "the batch after the relist", popBatchApplied(t, f, 2, store),
		[]string{"a/late=Added:a/late@11", "a/later=Added:a/later@12"})
	equalStrings(t, "the last batch", popBatchApplied(t, f, 2, store), []string{"a/latest=Added:a/latest@13"})
	equalStrings(t, "store", describeAll(store.List()),
		[]string{"a/late@11", "a/later@12", "a/latest@13", "a/p0@1", "a/p1@8", "a/p3@4", "a/p4@5", "a/p5@9"})

	// Two relists before a pop: one batch holds both; a Pop of one key in
	// between takes one key of it (Pop is key by key), popBatch the rest.
	must(t, f.Replace([]any{pod("a", "p0", "1"), pod("a", "p1", "14")}, "14"))
	must(t, f.Replace([]any{pod("a", "p0", "1"), pod("a", "p6", "15")}, "15"))
	if f.Len() != 9 {
		t.Fatalf("Len after two relists = %d, want 9", f.Len())
	}
	must(t, f.Pop(func(ds deltaList, _ bool) error {
		equalStrings(t, "Pop", render(ds), []string{"Replaced:a/p0@1"})
		applyBatch(store, []poppedKey{{key: "a/p0", deltas: ds}})
		return nil
	}))
	must(t, f.Add(pod("a", "after", "16")))
	got := popBatchApplied(t, f, 1, store)
	if len(got) != 8 || got[0] != "relist a/p1=Replaced:a/p1@14,Deleted:tombstone(a/p1@14)" ||
		got[1] != "relist a/late=Deleted:tombstone(a/late@11)" || got[7] != "relist a/p6=Replaced:a/p6@15" {
		t.Fatalf("batch of two relists after a Pop: %q", got)
	}
	equalStrings(t, "store after two relists", describeAll(store.List()), []string{"a/p0@1", "a/p6@15"})
	equalStrings(t, "after them", popBatchApplied(t, f, 1, store), []string{"a/after=Added:a/after@16"})
}

// TestPopBatchTakesARelistOfTheUnpoppedInitialListWhole: a relist while
// keys of the initial list are still queued takes them whole too, still
// marked initial (the informer has not synced: they are still adds of the
// initial list).
func TestPopBatchTakesARelistOfTheUnpoppedInitialListWhole(t *testing.T) {
	store := newTestIndexer()
	f := newFIFO(sortedKnown{store})
	must(t, f.Replace([]any{pod("a", "p0", "1"), pod("a", "p1", "2"), pod("a", "p2", "3")}, "3"))
	equalStrings(t, "first batch", popBatchApplied(t, f, 1, store), []string{"a/p0[initial]=Replaced:a/p0@1"})
	must(t, f.Replace([]any{pod("a", "p1", "2"), pod("a", "p2", "4"), pod("a", "p3", "5")}, "5"))
	equalStrings(t, "the relist's batch", popBatchApplied(t, f, 1, store), []string{
		"relist a/p1[initial]=Replaced:a/p1@2",
		"relist a/p2[initial]=Replaced:a/p2@4",
		"relist a/p3=Replaced:a/p3@5",
		"relist a/p0=Deleted:tombstone(a/p0@1)",
	})
	if !f.HasSynced() {
		t.Fatal("not synced after the batch holding the rest of the initial list")
	}
}
