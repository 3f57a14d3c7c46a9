package informer

import (
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/deltacache/deltacache/pkg/informer/informertest"
)

func TestFirstListIsStoredPageByPageAndSyncsOnlyAtItsEnd(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.ScriptList(
		informertest.ListResponse{Items: items(pod("a", "p1", "3"), pod("a", "p2", "5")), ResourceVersion: "10", Continue: "c1"},
		informertest.ListResponse{Items: items(pod("b", "p3", "7")), ResourceVersion: "10"},
	)
	f.ScriptWatch(informertest.WatchResponse{})
	lw := &gatedLW{Fake: f, beforeList: 2, gate: make(chan struct{})} // the second page
	s := newPodInformer(lw, Options{PageSize: 2, DisableWatchList: true})
	rec := newRecorder()
	reg := addHandler(t, s, rec)
	startInformer(t, s)

	// The first page is stored and delivered while the second is held back;
	// neither the informer nor the handler has synced.
	eventually(t, 5*time.Second, "the first page delivered", func() bool { return rec.count() == 2 })
	equalStrings(t, "store after one page", sorted(storeContent(s)), []string{"a/p1@3", "a/p2@5"})
	if s.HasSynced() || reg.HasSynced() {
		t.Fatalf("synced with one page of two listed (informer %v, handler %v)", s.HasSynced(), reg.HasSynced())
	}
	close(lw.gate)
	waitSynced(t, s.HasSyncedChecker())
	waitSynced(t, reg.HasSyncedChecker())
	equalStrings(t, "store", sorted(storeContent(s)), []string{"a/p1@3", "a/p2@5", "b/p3@7"})
	equalStrings(t, "events", sorted(rec.all()), []string{
		"add a/p1@3" + initialSuffix, "add a/p2@5" + initialSuffix, "add b/p3@7" + initialSuffix,
	})
	if rv := s.LastSyncResourceVersion(); rv != "10" {
		t.Fatalf("LastSyncResourceVersion = %q, want the list's 10", rv)
	}
	if st, ok := s.LastListSummary(); !ok || st.Objects != 3 || st.Pages != 2 {
		t.Fatalf("LastListSummary = %+v, %v", st, ok)
	}
}

func TestStreamedListThatFailsIsReplacedByTheNextListWhichDeletesWhatItNoLongerHas(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.ScriptList(
		// The first list streams a page, then fails.
		informertest.ListResponse{Items: items(pod("a", "gone", "3"), pod("a", "kept", "4")), ResourceVersion: "10", Continue: "c1"},
		informertest.ListResponse{Err: informertest.ErrInternal()},
		// The next one is a Replace.
		informertest.ListResponse{Items: items(pod("a", "kept", "4"), pod("b", "new", "11")), ResourceVersion: "12"},
	)
	f.ScriptWatch(informertest.WatchResponse{})
	s := newPodInformer(f, Options{PageSize: 2, DisableWatchList: true})
	rec := newRecorder()
	addHandler(t, s, rec)
	startInformer(t, s)
	waitSynced(t, s.HasSyncedChecker())
	eventually(t, 5*time.Second, "the second list applied", func() bool {
		return slices.Equal(sorted(storeContent(s)), []string{"a/kept@4", "b/new@11"})
	})
	eventually(t, 5*time.Second, "the delete delivered", func() bool {
		evs := rec.forKey("a/gone")
		return len(evs) == 2
	})
	equalStrings(t, "events of a/gone", rec.forKey("a/gone"), []string{
		"add a/gone@3" + initialSuffix, "delete tombstone(a/gone@3)",
	})
	if rv := s.LastSyncResourceVersion(); rv != "12" {
		t.Fatalf("LastSyncResourceVersion = %q, want 12", rv)
	}
}

func TestStreamedWatchListEndsAtItsBookmarkWithEveryObject(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.ServeWatchList(true)
	var want []string
	for i := range streamChunk + 10 { // more than one chunk
		p := f.Create(pod("ns", "p"+strconv.Itoa(i), ""))
		want = append(want, describe(p))
	}
	s := newPodInformer(f, Options{})
	rec := newRecorder()
	reg := addHandler(t, s, rec)
	startInformer(t, s)
	waitSynced(t, reg.HasSyncedChecker())
	equalStrings(t, "store", sorted(storeContent(s)), sorted(want))
	if n := rec.count(); n != len(want) {
		t.Fatalf("%d events, want %d adds", n, len(want))
	}
	if st, ok := s.LastListSummary(); !ok || !st.WatchList || st.Objects != len(want) || st.ResourceVersion != f.ResourceVersion() {
		t.Fatalf("LastListSummary = %+v, %v; want a WatchList of %d at %s", st, ok, len(want), f.ResourceVersion())
	}
}

func TestOnlyAFirstListIntoAnEmptyStoreIsStreamed(t *testing.T) {
	known := NewIndexer(toolscache.MetaNamespaceKeyFunc, nil)
	fifo := newDeltaFIFO(deltaFIFOOptions{KnownObjects: known})
	if !fifo.beginInitialStream() {
		t.Fatal("an empty, never populated FIFO refuses to stream")
	}
	must(t, fifo.appendInitial([]any{pod("a", "x", "1")}))
	if fifo.beginInitialStream() {
		t.Fatal("a FIFO with a streamed key queued accepts another streamed list")
	}
	if fifo.HasSynced() {
		t.Fatal("synced before the streamed list ended")
	}
	fifo.endInitialStream("1")
	if fifo.HasSynced() {
		t.Fatal("synced with the streamed key not popped")
	}
	must(t, fifo.Pop(func(deltaList, bool) error { return nil }))
	if !fifo.HasSynced() {
		t.Fatal("not synced once the streamed list was popped")
	}
	if fifo.beginInitialStream() {
		t.Fatal("a populated FIFO accepts a streamed list")
	}

	// Never populated, but the store holds an object (written around the FIFO).
	known2 := NewIndexer(toolscache.MetaNamespaceKeyFunc, nil)
	must(t, known2.Add(pod("a", "y", "2")))
	if newDeltaFIFO(deltaFIFOOptions{KnownObjects: known2}).beginInitialStream() {
		t.Fatal("a FIFO whose store holds objects accepts a streamed list")
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
