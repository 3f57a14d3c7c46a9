//nolint:goconst // Test fixtures read better as literals.
package informer

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// renderBatch shows a popped batch as "key[initial]=Type:obj,Type:obj"
// strings, in batch order ("key=..." for keys not in the initial list).
func renderBatch(batch []poppedKey) []string {
	out := make([]string, 0, len(batch))
	for _, p := range batch {
		flag := ""
		if p.initial {
			flag = "[initial]"
		}
		out = append(out, p.key+flag+"="+strings.Join(render(p.deltas), ","))
	}
	return out
}

// popBatchNow pops one batch of up to maxKeys keys from a non-empty queue
// and returns it rendered (inside process: the Deltas are only valid there)
// with the queued count process was given.
func popBatchNow(t *testing.T, f *deltaFIFO, maxKeys int) (got []string, queued int) {
	t.Helper()
	must(t, f.popBatch(maxKeys, func(batch []poppedKey, q int) error {
		got, queued = renderBatch(batch), q
		return nil
	}))
	return got, queued
}

// inFlightBatch is a popBatch blocked inside process.
type inFlightBatch struct {
	batch   []string
	release chan struct{}
	done    chan error
}

// startBatch pops up to maxKeys keys in a goroutine and returns once
// process runs; process waits for release, then applies the batch to store
// (if not nil) through a writeBatch, as the informer's pop loop does.
func startBatch(t *testing.T, f *deltaFIFO, maxKeys int, store *Indexer) *inFlightBatch {
	t.Helper()
	b := &inFlightBatch{release: make(chan struct{}), done: make(chan error, 1)}
	inside := make(chan []string)
	go func() {
		b.done <- f.popBatch(maxKeys, func(batch []poppedKey, _ int) error {
			inside <- renderBatch(batch)
			<-b.release
			if store != nil {
				applyBatch(store, batch)
			}
			return nil
		})
	}()
	select {
	case b.batch = <-inside:
	case <-time.After(5 * time.Second):
		t.Fatal("popBatch did not call process")
	}
	return b
}

// finish releases the batch and waits for popBatch to return.
func (b *inFlightBatch) finish(t *testing.T) {
	t.Helper()
	close(b.release)
	select {
	case err := <-b.done:
		must(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("popBatch did not return")
	}
}

// applyBatch applies popped Deltas to store as one writeBatch, as
// SharedIndexInformer.handleBatch does (without handlers).
func applyBatch(store *Indexer, batch []poppedKey) {
	w := store.beginBatch(len(batch))
	for _, p := range batch {
		for _, d := range p.deltas {
			if d.Type == deltaDeleted {
				w.remove(p.key)
				continue
			}
			_ = w.put(p.key, d.Object)
		}
	}
	w.commit()
}

func TestPopBatchTakesUpToMaxKeysInQueueOrderWithTheirDeltas(t *testing.T) {
	f := newFIFO(nil)
	x3 := pod("a", "x", "3")
	must(t, f.Add(pod("a", "x", "1")))
	must(t, f.Add(pod("a", "y", "2")))
	must(t, f.Update(x3))
	must(t, f.Delete(pod("a", "y", "4")))
	must(t, f.Add(pod("a", "z", "5")))
	must(t, f.Add(pod("a", "w", "6")))
	must(t, f.Add(pod("a", "v", "7")))

	var same bool
	must(t, f.popBatch(2, func(batch []poppedKey, queued int) error {
		equalStrings(t, "first batch", renderBatch(batch), []string{"a/x=Added:a/x@3", "a/y=Added:a/y@2,Deleted:a/y@4"})
		if queued != 3 {
			t.Errorf("queued = %d, want 3", queued)
		}
		same = batch[0].deltas[0].Object == x3 // the very object that was queued
		return nil
	}))
	if !same {
		t.Error("the popped delta does not carry the queued object")
	}
	if f.Len() != 3 {
		t.Fatalf("Len after first batch = %d, want 3", f.Len())
	}
	got, queued := popBatchNow(t, f, 2)
	equalStrings(t, "second batch", got, []string{"a/z=Added:a/z@5", "a/w=Added:a/w@6"})
	if queued != 1 {
		t.Fatalf("queued = %d, want 1", queued)
	}
	got, queued = popBatchNow(t, f, 2)
	equalStrings(t, "last batch (fewer keys than max)", got, []string{"a/v=Added:a/v@7"})
	if queued != 0 || f.Len() != 0 {
		t.Fatalf("queued = %d, Len = %d, want 0, 0", queued, f.Len())
	}
}

func TestPopBatchWaitsForAKeyAndReturnsErrFIFOClosedOnClose(t *testing.T) {
	f := newFIFO(nil)
	done := make(chan []string, 1)
	go func() {
		var got []string
		_ = f.popBatch(10, func(batch []poppedKey, _ int) error { got = renderBatch(batch); return nil })
		done <- got
	}()
	must(t, f.Add(pod("a", "x", "1")))
	select {
	case got := <-done:
		equalStrings(t, "batch", got, []string{"a/x=Added:a/x@1"})
	case <-time.After(5 * time.Second):
		t.Fatal("popBatch did not wake up for an Add")
	}

	errc := make(chan error, 1)
	go func() { errc <- f.popBatch(10, func([]poppedKey, int) error { return errors.New("process called") }) }()
	f.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, errFIFOClosed) {
			t.Fatalf("blocked popBatch after Close = %v, want ErrFIFOClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("popBatch still blocked after Close")
	}
	must(t, f.Add(pod("a", "y", "2")))
	err := f.popBatch(10, func([]poppedKey, int) error { return errors.New("process called") })
	if !errors.Is(err, errFIFOClosed) {
		t.Fatalf("popBatch on a closed queue holding a key = %v, want ErrFIFOClosed", err)
	}
}

func TestPopBatchReturnsProcessErrorAndDropsTheKeys(t *testing.T) {
	f := newFIFO(newTestIndexer())
	must(t, f.Add(pod("a", "x", "1")))
	boom := errors.New("boom")
	if err := f.popBatch(10, func([]poppedKey, int) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("popBatch = %v, want the process error", err)
	}
	// As Pop: the keys are not queued again, and no longer in flight, so a
	// Delete of x (never stored) is dropped.
	must(t, f.Delete(pod("a", "x", "2")))
	if f.Len() != 0 {
		t.Fatalf("Len = %d, want 0", f.Len())
	}
}

// TestPopBatchDeleteOfInFlightKeyIsKept is TestDeltaFIFODeleteOfInFlightKeyIsKept
// for every key of a batch, not only the first.
func TestPopBatchDeleteOfInFlightKeyIsKept(t *testing.T) {
	f := newFIFO(newTestIndexer()) // nothing stored: only in-flight keys are known
	for i, n := range []string{"x", "y", "w", "z"} {
		must(t, f.Add(pod("a", n, strconv.Itoa(i+1))))
	}
	b := startBatch(t, f, 3, nil)
	equalStrings(t, "in flight", b.batch, []string{"a/x=Added:a/x@1", "a/y=Added:a/y@2", "a/w=Added:a/w@3"})
	must(t, f.Delete(pod("a", "x", "5")))
	must(t, f.Delete(pod("a", "y", "6")))
	must(t, f.Delete(pod("a", "ghost", "7"))) // neither queued, in flight nor stored
	if f.Len() != 3 {
		t.Fatalf("Len while the batch is in flight = %d, want 3 (z, x, y)", f.Len())
	}
	b.finish(t)
	// The batch stored nothing: w is no longer known, its delete is dropped.
	must(t, f.Delete(pod("a", "w", "8")))
	order, got := popAll(t, f)
	equalStrings(t, "order", order, []string{"a/z", "a/x", "a/y"})
	equalStrings(t, "x", got["a/x"], []string{"Deleted:a/x@5"})
	equalStrings(t, "y", got["a/y"], []string{"Deleted:a/y@6"})
	equalStrings(t, "z", got["a/z"], []string{"Added:a/z@4"})
}

// TestPopBatchReplaceWaitsForInFlightBatch is TestReplaceWaitsForInFlightKey
// for a batch: Replace sees the store the batch wrote, so it tombstones
// both of the batch's keys the list no longer has, with their stored state.
func TestPopBatchReplaceWaitsForInFlightBatch(t *testing.T) {
	known := newTestIndexer()
	f := newFIFO(known)
	must(t, f.Add(pod("a", "x", "1")))
	must(t, f.Add(pod("a", "y", "2")))
	b := startBatch(t, f, 2, known)
	replaced := make(chan struct{})
	go func() {
		_ = f.Replace([]any{pod("a", "new", "8")}, "9") // x and y are gone on the server
		close(replaced)
	}()
	select {
	case <-replaced:
		t.Fatal("Replace did not wait for the in-flight batch")
	case <-time.After(20 * time.Millisecond):
	}
	b.finish(t)
	waitClosed(t, replaced, 5*time.Second, "Replace")
	order, got := popAll(t, f)
	slices.Sort(order[1:]) // tombstones of stored keys come in the store's key order
	equalStrings(t, "order", order, []string{"a/new", "a/x", "a/y"})
	equalStrings(t, "x", got["a/x"], []string{"Deleted:tombstone(a/x@1)"})
	equalStrings(t, "y", got["a/y"], []string{"Deleted:tombstone(a/y@2)"})
	equalStrings(t, "new", got["a/new"], []string{"Replaced:a/new@8"})
}

// TestPopBatchResyncSkipsInFlightKeys is TestResyncEmitsSyncForKnownKeysNotQueued
// with keys in flight: as for Pop's single key, an in-flight key gets no
// Sync delta (the store is being changed for it), a queued key neither.
func TestPopBatchResyncWaitsForInFlightKeysAndSyncsThemToo(t *testing.T) {
	known := newTestIndexer()
	for _, n := range []string{"a", "b", "c", "d"} {
		must(t, known.Add(pod("a", n, "1")))
	}
	f := newFIFO(known)
	must(t, f.Update(pod("a", "a", "2")))
	must(t, f.Update(pod("a", "b", "3")))
	must(t, f.Update(pod("a", "c", "4")))
	b := startBatch(t, f, 2, known)
	equalStrings(t, "in flight", b.batch, []string{"a/a=Updated:a/a@2", "a/b=Updated:a/b@3"})
	resynced := make(chan error, 1)
	go func() { resynced <- f.Resync() }()
	select {
	case err := <-resynced:
		t.Fatalf("Resync returned (%v) while a batch was in flight", err)
	case <-time.After(100 * time.Millisecond):
	}
	b.finish(t)
	select {
	case err := <-resynced:
		must(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Resync did not return after the batch")
	}
	order, got := popAll(t, f)
	if len(order) != 4 || order[0] != "a/c" {
		t.Fatalf("pop order %v, want a/c (queued first), then the three resynced keys", order)
	}
	equalStrings(t, "c (queued)", got["a/c"], []string{"Updated:a/c@4"})
	equalStrings(t, "a (stored by the batch)", got["a/a"], []string{"Sync:a/a@2"})
	equalStrings(t, "b (stored by the batch)", got["a/b"], []string{"Sync:a/b@3"})
	equalStrings(t, "d (stored, idle)", got["a/d"], []string{"Sync:a/d@1"})
	equalStrings(t, "store", describeAll(known.List()), []string{"a/a@2", "a/b@3", "a/c@1", "a/d@1"})
}

func TestPopBatchHasSyncedOnlyAfterInitialListProcessed(t *testing.T) {
	f := newFIFO(newTestIndexer())
	list := make([]any, 0, 5)
	for i := range 5 {
		list = append(list, pod("a", fmt.Sprintf("p%d", i), strconv.Itoa(i+1)))
	}
	must(t, f.Replace(list, "5"))
	must(t, f.Add(pod("a", "late", "6"))) // after the list: not initial
	must(t, f.Update(pod("a", "p1", "7")))

	type step struct {
		batch       []string
		syncedAfter bool
	}
	var steps []step
	for f.Len() > 0 {
		var got []string
		must(t, f.popBatch(2, func(batch []poppedKey, _ int) error {
			got = renderBatch(batch)
			if f.HasSynced() {
				t.Errorf("HasSynced while processing %v", got)
			}
			return nil
		}))
		steps = append(steps, step{got, f.HasSynced()})
	}
	want := []step{
		{[]string{"a/p0[initial]=Replaced:a/p0@1", "a/p1[initial]=Updated:a/p1@7"}, false},
		{[]string{"a/p2[initial]=Replaced:a/p2@3", "a/p3[initial]=Replaced:a/p3@4"}, false},
		{[]string{"a/p4[initial]=Replaced:a/p4@5", "a/late=Added:a/late@6"}, true},
	}
	if fmt.Sprint(steps) != fmt.Sprint(want) {
		t.Fatalf("batches and HasSynced after each:\n got %v\nwant %v", steps, want)
	}
	waitClosed(t, f.Synced(), time.Second, "Synced channel")
}

func TestPopBatchHasSyncedWhenOneBatchHoldsTheWholeInitialList(t *testing.T) {
	f := newFIFO(nil)
	must(t, f.Replace([]any{pod("a", "x", "1"), pod("a", "y", "2")}, "2"))
	must(t, f.Add(pod("a", "z", "3")))
	must(t, f.popBatch(10, func(batch []poppedKey, _ int) error {
		equalStrings(t, "batch", renderBatch(batch),
			[]string{"a/x[initial]=Replaced:a/x@1", "a/y[initial]=Replaced:a/y@2", "a/z=Added:a/z@3"})
		select {
		case <-f.Synced():
			t.Error("Synced closed while the initial list is being processed")
		default:
		}
		return nil
	}))
	if !f.HasSynced() {
		t.Fatal("not synced after the batch holding the initial list")
	}

	// Events before any Replace: synced at once, nothing initial.
	g := newFIFO(nil)
	must(t, g.Add(pod("a", "x", "1")))
	got, _ := popBatchNow(t, g, 10)
	equalStrings(t, "batch before any Replace", got, []string{"a/x=Added:a/x@1"})
	if !g.HasSynced() {
		t.Fatal("Add before Replace: not synced")
	}
}

// TestPopBatchBookmarksStoreOnlyWhenDrainedAndIdle: the store gets the
// newest RV when nothing is queued and no batch is in flight.
func TestPopBatchBookmarksStoreOnlyWhenDrainedAndIdle(t *testing.T) {
	known := newTestIndexer()
	f := newFIFO(known)
	must(t, f.Replace([]any{pod("a", "x", "5"), pod("a", "y", "6")}, "10"))
	must(t, f.popBatch(1, func([]poppedKey, int) error { return nil }))
	if got := known.LastStoreSyncResourceVersion(); got != "" {
		t.Fatalf("store RV with y queued = %q, want \"\"", got)
	}
	b := startBatch(t, f, 1, known)
	f.Bookmark("12") // queue empty, but y in flight
	if got := known.LastStoreSyncResourceVersion(); got != "" {
		t.Fatalf("store RV with y in flight = %q, want \"\"", got)
	}
	b.finish(t)
	if got := known.LastStoreSyncResourceVersion(); got != "12" {
		t.Fatalf("store RV after the last batch = %q, want 12", got)
	}
}

// sortedKnown lists the keys of its Indexer sorted, so that the Sync deltas
// of Resync and the tombstones of stored keys in Replace are queued in the
// same order by two DeltaFIFOs over equal stores.
type sortedKnown struct{ *Indexer }

func (k sortedKnown) ListKeys() []string { return slices.Sorted(slices.Values(k.Indexer.ListKeys())) }

// TestPopBatchMatchesPop drives two DeltaFIFOs with the same random
// operations; one is drained with Pop, the other with popBatch of random
// sizes (each consumer applies to its own store, popBatch's through a
// writeBatch). Both must hand out the same keys, Deltas and initial flags
// in the same order, and leave equal stores and HasSynced; popBatch takes
// a relist (a Replace after the first, or after a watch event) whole.
func TestPopBatchMatchesPop(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for round := range 40 {
		single, batched := newTestIndexer(), newTestIndexer()
		fs, fb := newFIFO(sortedKnown{single}), newFIFO(sortedKnown{batched})
		server := map[string]*corev1.Pod{}
		rv := 0
		var popsS, popsB []string
		// The model of the relist span: populated by a Replace, Add, Update
		// or Delete (not Resync), then every Replace is a relist spanning
		// the whole queue.
		populated, span := false, 0
		popBatched := func(k int) int {
			n := 0
			must(t, fb.popBatch(k, func(batch []poppedKey, _ int) error {
				if want := max(k, span); len(batch) != min(want, fb.Len()+len(batch)) {
					t.Fatalf("round %d: popBatch(%d) took %d keys with a relist span of %d", round, k, len(batch), span)
				}
				for i, p := range batch {
					if p.relist != (i < span) {
						t.Fatalf("round %d: key %d of a batch (span %d) has relist %v", round, i, span, p.relist)
					}
				}
				n = len(batch)
				span -= min(n, span)
				popsB = append(popsB, renderBatch(batch)...)
				applyBatch(batched, batch)
				return nil
			}))
			return n
		}
		popSingle := func(n int) {
			for range n {
				must(t, fs.Pop(func(ds deltaList, initial bool) error {
					key, _ := fs.KeyOf(ds)
					flag := ""
					if initial {
						flag = "[initial]"
					}
					popsS = append(popsS, key+flag+"="+strings.Join(render(ds), ","))
					for _, d := range ds {
						if d.Type == deltaDeleted {
							single.remove(key)
						} else {
							_ = single.put(key, d.Object)
						}
					}
					return nil
				}))
			}
		}
		both := func(op func(f *deltaFIFO) error) {
			must(t, op(fs))
			must(t, op(fb))
		}
		if round%2 == 0 { // half the rounds start with an initial list
			list := make([]any, 0, 12)
			for i := range 4 + rng.IntN(8) {
				rv++
				p := pod("a", fmt.Sprintf("p%d", i), strconv.Itoa(rv))
				server["a/"+p.Name] = p
				list = append(list, p)
			}
			both(func(f *deltaFIFO) error { return f.Replace(list, strconv.Itoa(rv)) })
			populated = true
		}
		for step := range 60 {
			name := fmt.Sprintf("p%d", rng.IntN(12))
			key := "a/" + name
			switch r := rng.IntN(10); {
			case r < 4: // watch event: add or update
				rv++
				p := pod("a", name, strconv.Itoa(rv), "app=v"+strconv.Itoa(rng.IntN(3)))
				_, exists := server[key]
				server[key] = p
				if exists {
					both(func(f *deltaFIFO) error { return f.Update(p) })
				} else {
					both(func(f *deltaFIFO) error { return f.Add(p) })
				}
				populated = true
			case r < 5: // watch event: delete
				if old, ok := server[key]; ok {
					delete(server, key)
					both(func(f *deltaFIFO) error { return f.Delete(old) })
					populated = true
				}
			case r < 6: // relist: some objects changed, at most one gone, maybe one new
				// (one tombstone at most: Replace emits several in map order)
				rv++
				next := map[string]*corev1.Pod{}
				for k, p := range server {
					if rng.IntN(3) == 0 {
						p = pod("a", p.Name, strconv.Itoa(rv))
					}
					next[k] = p
				}
				if keys := slices.Sorted(maps.Keys(next)); len(keys) > 0 && rng.IntN(2) == 0 {
					delete(next, keys[rng.IntN(len(keys))])
				}
				if _, ok := next[key]; !ok && rng.IntN(2) == 0 {
					next[key] = pod("a", name, strconv.Itoa(rv))
				}
				list := make([]any, 0, len(next))
				for _, k := range slices.Sorted(maps.Keys(next)) {
					list = append(list, next[k])
				}
				server = next
				both(func(f *deltaFIFO) error { return f.Replace(list, strconv.Itoa(rv)) })
				if populated {
					span = fb.Len()
				}
				populated = true
			case r < 7:
				both(func(f *deltaFIFO) error { return f.Resync() })
			default: // pop k keys from each
				k := min(1+rng.IntN(5), fs.Len())
				if fs.Len() != fb.Len() {
					t.Fatalf("round %d step %d: Len %d (Pop) vs %d (popBatch)", round, step, fs.Len(), fb.Len())
				}
				if k == 0 {
					continue
				}
				popSingle(popBatched(k))
			}
			equalStrings(t, fmt.Sprintf("round %d step %d: popped", round, step), popsB, popsS)
			equalStrings(t, fmt.Sprintf("round %d step %d: store", round, step),
				describeAll(batched.List()), describeAll(single.List()))
			if fs.HasSynced() != fb.HasSynced() {
				t.Fatalf("round %d step %d: HasSynced %v (Pop) vs %v (popBatch)", round, step, fs.HasSynced(), fb.HasSynced())
			}
		}
		popSingle(fs.Len())
		for fb.Len() > 0 {
			popBatched(1 + rng.IntN(5))
		}
		equalStrings(t, fmt.Sprintf("round %d drained: popped", round), popsB, popsS)
		want := make([]any, 0, len(server))
		for _, p := range server {
			want = append(want, p)
		}
		equalStrings(t, fmt.Sprintf("round %d drained: store = server", round),
			describeAll(batched.List()), describeAll(want))
		equalStrings(t, fmt.Sprintf("round %d drained: app index", round),
			byIndex(t, batched, appLabel, "v1"), byIndex(t, single, appLabel, "v1"))
		if fs.HasSynced() != fb.HasSynced() {
			t.Fatalf("round %d drained: HasSynced %v (Pop) vs %v (popBatch)", round, fs.HasSynced(), fb.HasSynced())
		}
		if fs.Len()+fb.Len() != 0 || !slices.Equal(fs.queue, fb.queue) {
			t.Fatalf("round %d: queues not drained", round)
		}
	}
}

// TestPopBatchTombstoneCarriesStoredStateAfterBatch: a relist after a
// batch that deleted and re-created a key tombstones the re-created object
// the store holds (the batch's last write), not the deleted one.
func TestPopBatchTombstoneCarriesStoredStateAfterBatch(t *testing.T) {
	known := newTestIndexer()
	must(t, known.Add(pod("a", "x", "1")))
	f := newFIFO(known)
	must(t, f.Delete(pod("a", "x", "2")))
	must(t, f.Add(pod("a", "x", "3")))
	b := startBatch(t, f, 10, known)
	equalStrings(t, "in flight", b.batch, []string{"a/x=Deleted:a/x@2,Added:a/x@3"})
	b.finish(t)
	must(t, f.Replace(nil, "4"))
	_, got := popAll(t, f)
	tomb := toolscache.DeletedFinalStateUnknown{Key: "a/x", Obj: pod("a", "x", "3")}
	equalStrings(t, "x", got["a/x"], []string{"Deleted:" + describe(tomb)})
}

// awaitNotInFlight waits while a batch holding the key is being processed
// (the store may already show its write) and reports that it waited; a key
// only queued, or unknown, is not waited for. A sharded Get that missed a key
// whose delete was being applied reads again after it (pkg/cache): before,
// it answered ErrNotInShard instead of NotFound in that window.
func TestAwaitNotInFlightWaitsForTheBatchHoldingTheKey(t *testing.T) {
	f := newDeltaFIFO(deltaFIFOOptions{KeyFunction: toolscache.MetaNamespaceKeyFunc})
	must(t, f.Add(pod("a", "x", "1")))
	must(t, f.Add(pod("a", "y", "2")))
	b := startBatch(t, f, 1, nil) // a/x in flight, a/y queued
	if f.awaitNotInFlight("a/y", time.Second) {
		t.Error("waited for a/y, which is only queued")
	}
	if f.awaitNotInFlight("a/z", time.Second) {
		t.Error("waited for a/z, which is unknown")
	}
	released := make(chan time.Time, 1)
	go func() {
		time.Sleep(50 * time.Millisecond)
		released <- time.Now()
		close(b.release)
	}()
	if !f.awaitNotInFlight("a/x", 5*time.Second) {
		t.Fatal("did not wait for a/x, in flight")
	}
	returned := time.Now()
	if at := <-released; returned.Before(at) {
		t.Errorf("returned %v before the batch was released", at.Sub(returned))
	}
	must(t, <-b.done)
	if f.pending("a/x") {
		t.Error("a/x pending after the wait")
	}
	// Bounded: a batch that never ends is waited for at most the timeout.
	c := startBatch(t, f, 1, nil) // a/y
	start := time.Now()
	if !f.awaitNotInFlight("a/y", 30*time.Millisecond) || time.Since(start) > 2*time.Second {
		t.Errorf("wait for a batch held in process: %v", time.Since(start))
	}
	c.finish(t)
}
