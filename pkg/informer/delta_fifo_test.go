package informer

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
)

// render shows Deltas as "Type:obj" strings.
func render(ds deltaList) []string {
	out := make([]string, 0, len(ds))
	for _, d := range ds {
		out = append(out, string(d.Type)+":"+describe(d.Object))
	}
	return out
}

// popAll pops until the queue is empty and returns key → rendered deltas, in
// pop order.
func popAll(t *testing.T, f *deltaFIFO) (order []string, got map[string][]string) {
	t.Helper()
	got = map[string][]string{}
	for f.Len() > 0 {
		must(t, f.Pop(func(ds deltaList, _ bool) error {
			k, _ := f.KeyOf(ds)
			order = append(order, k)
			got[k] = render(ds)
			return nil
		}))
	}
	return order, got
}

func newFIFO(known keyListerGetter) *deltaFIFO {
	return newDeltaFIFO(deltaFIFOOptions{KnownObjects: known})
}

func TestDeltaFIFOPopsKeysInFirstQueuedOrder(t *testing.T) {
	f := newFIFO(nil)
	must(t, f.Add(pod("a", "x", "1")))
	must(t, f.Add(pod("a", "y", "2")))
	must(t, f.Update(pod("a", "x", "3")))
	order, got := popAll(t, f)
	equalStrings(t, "order", order, []string{"a/x", "a/y"})
	equalStrings(t, "a/x", got["a/x"], []string{"Added:a/x@3"})
	equalStrings(t, "a/y", got["a/y"], []string{"Added:a/y@2"})
}

func TestDeltaFIFOCoalescesBurstPerKey(t *testing.T) {
	//nolint:goconst // expected values are spelled out so the test reads as its specification
	cases := []struct {
		name string
		ops  func(f *deltaFIFO)
		want []string
	}{
		{"Added+Updated+Updated → Added(latest)", func(f *deltaFIFO) {
			_ = f.Add(pod("a", "x", "1"))
			_ = f.Update(pod("a", "x", "2"))
			_ = f.Update(pod("a", "x", "3"))
		}, []string{"Added:a/x@3"}},
		{"Updated+Updated → Updated(latest)", func(f *deltaFIFO) {
			_ = f.Update(pod("a", "x", "2"))
			_ = f.Update(pod("a", "x", "3"))
		}, []string{"Updated:a/x@3"}},
		{"Updated+Deleted kept as two", func(f *deltaFIFO) {
			_ = f.Update(pod("a", "x", "2"))
			_ = f.Delete(pod("a", "x", "3"))
		}, []string{"Updated:a/x@2", "Deleted:a/x@3"}},
		{"Deleted then Added kept as two", func(f *deltaFIFO) {
			_ = f.Update(pod("a", "x", "2"))
			_ = f.Delete(pod("a", "x", "3"))
			_ = f.Add(pod("a", "x", "4"))
			_ = f.Update(pod("a", "x", "5"))
		}, []string{"Updated:a/x@2", "Deleted:a/x@3", "Added:a/x@5"}},
		{"re-created and deleted again while queued → first delete", func(f *deltaFIFO) {
			_ = f.Update(pod("a", "x", "2"))
			_ = f.Delete(pod("a", "x", "3"))
			_ = f.Add(pod("a", "x", "4"))
			_ = f.Delete(pod("a", "x", "5"))
		}, []string{"Updated:a/x@2", "Deleted:a/x@3"}},
		{"consecutive deletes deduplicated, real delete wins over tombstone", func(f *deltaFIFO) {
			_ = f.Update(pod("a", "x", "2"))
			_ = f.Delete(pod("a", "x", "3"))
			_ = f.Delete(toolscache.DeletedFinalStateUnknown{Key: "a/x", Obj: pod("a", "x", "2")})
		}, []string{"Updated:a/x@2", "Deleted:a/x@3"}},
		{"Replaced+Updated → Updated(latest)", func(f *deltaFIFO) {
			_ = f.Replace([]any{pod("a", "x", "2")}, "2")
			_ = f.Update(pod("a", "x", "3"))
		}, []string{"Updated:a/x@3"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFIFO(nil)
			tc.ops(f)
			_, got := popAll(t, f)
			equalStrings(t, "deltas", got["a/x"], tc.want)
		})
	}
}

// TestDeltaFIFOBoundedByDistinctKeys: a long random burst of changes over a
// few keys never holds more than three deltas per key, and the last delta of
// every key is the last change made to it.
func TestDeltaFIFOBoundedByDistinctKeys(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	f := newFIFO(nil)
	exists := map[string]bool{}
	last := map[string]string{}
	for i := range 20000 {
		name := fmt.Sprintf("p%d", rng.IntN(10))
		key := "a/" + name
		rv := fmt.Sprint(i + 1)
		switch {
		case !exists[key]:
			must(t, f.Add(pod("a", name, rv)))
			exists[key] = true
			last[key] = "Added:" + key + "@" + rv
		case rng.IntN(4) == 0:
			must(t, f.Delete(pod("a", name, rv)))
			exists[key] = false
			last[key] = "Deleted:" + key + "@" + rv
		default:
			must(t, f.Update(pod("a", name, rv)))
			last[key] = "Updated:" + key + "@" + rv
		}
		f.mu.Lock()
		for k, ds := range f.items {
			if len(ds) > 3 {
				f.mu.Unlock()
				t.Fatalf("key %s holds %d deltas: %v", k, len(ds), render(ds))
			}
		}
		if len(f.queue) > 10 {
			f.mu.Unlock()
			t.Fatalf("queue holds %d keys for 10 distinct keys", len(f.queue))
		}
		f.mu.Unlock()
	}
	_, got := popAll(t, f)
	// addedForUpdate: the newest delta adds the object the model last updated.
	addedForUpdate := func(final, last string) bool {
		return final[:6] == "Added:" && last[:8] == "Updated:" && final[6:] == last[8:]
	}
	for k, ds := range got {
		// The newest delta reflects the final state: deleted keys end in a
		// delete, existing keys in their newest object.
		final := ds[len(ds)-1]
		if exists[k] && final != last[k] && !addedForUpdate(final, last[k]) {
			t.Errorf("key %s ends with %s, want newest state %s", k, final, last[k])
		}
		if !exists[k] && final[:8] != "Deleted:" {
			t.Errorf("deleted key %s ends with %s", k, final)
		}
	}
}

func TestReplaceEmitsReplacedAndTombstonesForKnownKeysAbsentFromList(t *testing.T) {
	known := newTestIndexer()
	must(t, known.Add(pod("a", "stays", "1")))
	must(t, known.Add(pod("a", "gone", "2")))
	f := newFIFO(known)
	must(t, f.Replace([]any{pod("a", "stays", "5"), pod("a", "new", "6")}, "10"))
	order, got := popAll(t, f)
	equalStrings(t, "order", order, []string{"a/stays", "a/new", "a/gone"})
	equalStrings(t, "stays", got["a/stays"], []string{"Replaced:a/stays@5"})
	equalStrings(t, "new", got["a/new"], []string{"Replaced:a/new@6"})
	equalStrings(t, "gone", got["a/gone"], []string{"Deleted:tombstone(a/gone@2)"})
}

func TestReplaceEmitsTombstoneForQueuedKeyAbsentFromList(t *testing.T) {
	f := newFIFO(newTestIndexer())
	must(t, f.Add(pod("a", "queued", "3"))) // never reached the store
	must(t, f.Replace([]any{pod("a", "other", "4")}, "10"))
	_, got := popAll(t, f)
	equalStrings(t, "queued", got["a/queued"], []string{"Added:a/queued@3", "Deleted:tombstone(a/queued@3)"})
	equalStrings(t, "other", got["a/other"], []string{"Replaced:a/other@4"})
}

func TestReplaceDoesNotTombstoneQueuedDelete(t *testing.T) {
	known := newTestIndexer()
	must(t, known.Add(pod("a", "x", "1")))
	f := newFIFO(known)
	must(t, f.Delete(pod("a", "x", "2")))
	must(t, f.Replace(nil, "10"))
	_, got := popAll(t, f)
	equalStrings(t, "x", got["a/x"], []string{"Deleted:a/x@2"})
}

func TestDeltaFIFODeleteOfUnknownKeyIsDropped(t *testing.T) {
	f := newFIFO(newTestIndexer())
	must(t, f.Delete(pod("a", "ghost", "1")))
	if f.Len() != 0 {
		t.Fatalf("queue length %d, want 0", f.Len())
	}
}

func TestDeltaFIFOHasSyncedAfterFirstReplacePopped(t *testing.T) {
	f := newFIFO(newTestIndexer())
	if f.HasSynced() {
		t.Fatal("synced before Replace")
	}
	must(t, f.Replace([]any{pod("a", "x", "1"), pod("a", "y", "2")}, "2"))
	must(t, f.Add(pod("a", "z", "3"))) // after the list: not part of the initial population
	var initial []bool
	pop := func() {
		must(t, f.Pop(func(ds deltaList, isInitial bool) error {
			initial = append(initial, isInitial)
			if isInitial && f.HasSynced() {
				t.Error("synced while the last initial item is being processed")
			}
			return nil
		}))
	}
	pop()
	if f.HasSynced() {
		t.Fatal("synced after 1 of 2 initial items")
	}
	pop()
	if !f.HasSynced() {
		t.Fatal("not synced after both initial items")
	}
	waitClosed(t, f.Synced(), time.Second, "Synced channel")
	pop()
	if fmt.Sprint(initial) != "[true true false]" {
		t.Fatalf("isInInitialList per pop = %v", initial)
	}
}

func TestDeltaFIFOSyncedAtOnceForEmptyListOrEventsBeforeReplace(t *testing.T) {
	f := newFIFO(nil)
	must(t, f.Replace(nil, "1"))
	if !f.HasSynced() {
		t.Fatal("empty initial list: not synced")
	}
	g := newFIFO(nil)
	must(t, g.Add(pod("a", "x", "1")))
	if !g.HasSynced() {
		t.Fatal("Add before Replace: not synced")
	}
}

func TestResyncEmitsSyncForKnownKeysNotQueued(t *testing.T) {
	known := newTestIndexer()
	must(t, known.Add(pod("a", "x", "1")))
	must(t, known.Add(pod("a", "y", "2")))
	f := newFIFO(known)
	must(t, f.Update(pod("a", "y", "3")))
	must(t, f.Resync())
	_, got := popAll(t, f)
	equalStrings(t, "x", got["a/x"], []string{"Sync:a/x@1"})
	equalStrings(t, "y (queued: no stale Sync)", got["a/y"], []string{"Updated:a/y@3"})
}

func TestPopDoesNotHoldQueueLockWhileProcessing(t *testing.T) {
	f := newFIFO(nil)
	must(t, f.Add(pod("a", "x", "1")))
	inside := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error)
	go func() {
		done <- f.Pop(func(deltaList, bool) error {
			close(inside)
			<-release
			return nil
		})
	}()
	<-inside
	// While processing, the producer can still queue (even for the same key).
	added := make(chan struct{})
	go func() {
		_ = f.Add(pod("a", "y", "2"))
		_ = f.Update(pod("a", "x", "3"))
		close(added)
	}()
	waitClosed(t, added, 5*time.Second, "Add while Pop processes")
	if f.Len() != 2 {
		t.Fatalf("queue length %d, want 2", f.Len())
	}
	close(release)
	must(t, <-done)
}

func TestReplaceWaitsForInFlightKey(t *testing.T) {
	known := newTestIndexer()
	f := newFIFO(known)
	must(t, f.Add(pod("a", "x", "1")))
	inside := make(chan struct{})
	release := make(chan struct{})
	go func() {
		_ = f.Pop(func(ds deltaList, _ bool) error {
			close(inside)
			<-release
			return known.Add(ds.Newest().Object) // the consumer stores it
		})
	}()
	<-inside
	replaced := make(chan struct{})
	go func() {
		_ = f.Replace(nil, "5") // x is gone on the server
		close(replaced)
	}()
	select {
	case <-replaced:
		t.Fatal("Replace did not wait for the in-flight key")
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	waitClosed(t, replaced, 5*time.Second, "Replace")
	_, got := popAll(t, f)
	equalStrings(t, "x tombstoned", got["a/x"], []string{"Deleted:tombstone(a/x@1)"})
}

func TestDeltaFIFODeleteOfInFlightKeyIsKept(t *testing.T) {
	f := newFIFO(newTestIndexer())
	must(t, f.Add(pod("a", "x", "1")))
	inside := make(chan struct{})
	release := make(chan struct{})
	go func() {
		_ = f.Pop(func(deltaList, bool) error { close(inside); <-release; return nil })
	}()
	<-inside
	must(t, f.Delete(pod("a", "x", "2")))
	close(release)
	eventually(t, 5*time.Second, "pop finished", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return !f.processing
	})
	_, got := popAll(t, f)
	equalStrings(t, "x", got["a/x"], []string{"Deleted:a/x@2"})
}

func TestCloseUnblocksPop(t *testing.T) {
	f := newFIFO(nil)
	done := make(chan error)
	go func() { done <- f.Pop(func(deltaList, bool) error { return nil }) }()
	f.Close()
	select {
	case err := <-done:
		if !errors.Is(err, errFIFOClosed) {
			t.Fatalf("Pop = %v, want ErrFIFOClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Pop still blocked after Close")
	}
}

func TestDeltaFIFOBookmarksStoreWhenDrained(t *testing.T) {
	known := newTestIndexer()
	f := newFIFO(known)
	must(t, f.Replace([]any{pod("a", "x", "5")}, "10"))
	if got := known.LastStoreSyncResourceVersion(); got != "" {
		t.Fatalf("store RV before the list was applied = %q", got)
	}
	_, _ = popAll(t, f)
	if got := known.LastStoreSyncResourceVersion(); got != "10" {
		t.Fatalf("store RV after drain = %q, want 10", got)
	}
	f.Bookmark("12")
	if got := known.LastStoreSyncResourceVersion(); got != "12" {
		t.Fatalf("store RV after bookmark on empty queue = %q, want 12", got)
	}
	must(t, f.Add(pod("a", "y", "13")))
	f.Bookmark("14")
	if got := known.LastStoreSyncResourceVersion(); got != "12" {
		t.Fatalf("store RV with y queued = %q, want 12", got)
	}
	_, _ = popAll(t, f)
	if got := known.LastStoreSyncResourceVersion(); got != "14" {
		t.Fatalf("store RV after drain = %q, want 14", got)
	}
}
