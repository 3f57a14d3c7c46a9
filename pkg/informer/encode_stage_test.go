package informer

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/deltacache/deltacache/pkg/informer/informertest"
)

// rawStore keeps what a Reflector hands to its store, as given.
type rawStore struct {
	mu       sync.Mutex
	replaced [][]any
	added    []any
}

func (s *rawStore) Add(obj any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.added = append(s.added, obj)
	return nil
}
func (s *rawStore) Update(obj any) error { return s.Add(obj) }
func (s *rawStore) Delete(any) error     { return nil }
func (s *rawStore) Replace(list []any, _ string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replaced = append(s.replaced, list)
	return nil
}

func (s *rawStore) snapshot() (replaced [][]any, added []any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]any(nil), s.replaced...), append([]any(nil), s.added...)
}

// stripAnnotations is a transform: the store must hold what it returns.
func stripAnnotations(obj any) (any, error) {
	p := obj.(*corev1.Pod).DeepCopy()
	p.Annotations = nil
	return p, nil
}

func TestEarlyEncodingQueuesListedObjectsAsBytesAndWatchedOnesWithTheirObject(t *testing.T) {
	for _, watchList := range []bool{true, false} {
		t.Run(fmt.Sprintf("watchList=%v", watchList), func(t *testing.T) {
			ix := NewIndexerWithOptions(toolscache.DeletionHandlingMetaNamespaceKeyFunc,
				toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc},
				IndexerOptions{Codec: podCodec(t)})
			f := informertest.New(&corev1.Pod{})
			f.ServeWatchList(watchList)
			listed := []*corev1.Pod{fullPod("a", "p1", ""), fullPod("b", "p2", "")}
			for _, p := range listed {
				f.Create(p)
			}
			store := &rawStore{}
			r := newReflector(f, &corev1.Pod{}, store, reflectorOptions{
				Backoff: fastBackoff, Transform: stripAnnotations, item: ix.itemOf,
			})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); r.Run(ctx) }()
			defer func() { cancel(); <-done }()

			eventually(t, 5*time.Second, "the list replaced", func() bool {
				replaced, _ := store.snapshot()
				return len(replaced) == 1
			})
			replaced, _ := store.snapshot()
			if len(replaced[0]) != len(listed) {
				t.Fatalf("replaced %d objects, want %d", len(replaced[0]), len(listed))
			}
			for _, o := range replaced[0] {
				e, ok := o.(*queuedItem)
				if !ok {
					t.Fatalf("listed object queued as %T, want *queuedItem", o)
				}
				if e.obj != nil {
					t.Fatalf("listed %s keeps its decoded object", e.key)
				}
				want, _ := f.Get(e.key)
				wantT, _ := stripAnnotations(want)
				got, err := ix.decode(e.key, e.data)
				must(t, err)
				if !apiequality.Semantic.DeepEqual(got, wantT) {
					t.Fatalf("%s encodes\n%+v\nwant the transformed object\n%+v", e.key, got, wantT)
				}
				if e.rv != wantT.(*corev1.Pod).ResourceVersion {
					t.Fatalf("%s queued at rv %q, want %q", e.key, e.rv, wantT.(*corev1.Pod).ResourceVersion)
				}
				// The namespace index is keyed: no value computed, the store
				// derives it from the key.
				if ns := e.vals.filed(0); !e.vals.funcs.keyed[0] || ns != nil {
					t.Fatalf("%s namespace index values %q (keyed: %v), want none", e.key, ns, e.vals.funcs.keyed[0])
				}
			}

			upd := fullPod("a", "p1", "")
			upd.Labels["v"] = "2"
			f.Update(upd)
			eventually(t, 5*time.Second, "the watch event queued", func() bool {
				_, added := store.snapshot()
				return len(added) == 1
			})
			_, added := store.snapshot()
			e, ok := added[0].(*queuedItem)
			if !ok || e.obj == nil {
				t.Fatalf("watched object queued as %#v, want an *queuedItem keeping its object", added[0])
			}
			if e.obj.(*corev1.Pod).Annotations != nil || e.obj.(*corev1.Pod).Labels["v"] != "2" {
				t.Fatalf("watched object kept is not the transformed update: %+v", e.obj)
			}
			got, err := ix.decode(e.key, e.data)
			must(t, err)
			if !apiequality.Semantic.DeepEqual(got, e.obj) {
				t.Fatalf("watched object's encoding differs from its object")
			}
		})
	}
}

func TestEarlyEncodedObjectsAreStoredIndexedAndDeliveredDecoded(t *testing.T) {
	codec := podCodec(t)
	f := informertest.New(&corev1.Pod{})
	f.ServeWatchList(true)
	for i := range 20 {
		f.Create(fullPod(fmt.Sprintf("ns-%d", i%3), fmt.Sprintf("p%02d", i), ""))
	}
	s := newPodInformer(f, Options{StorageCodec: codec, Transform: stripAnnotations,
		Indexers: toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}})
	rec := newRecorder()
	addHandler(t, s, rec)
	startInformer(t, s)
	waitSynced(t, s.HasSyncedChecker())
	eventually(t, 5*time.Second, "20 adds delivered", func() bool { return rec.count() == 20 })
	before := codec.encodes.Load()

	byNS, err := s.GetIndexer().ByIndex(toolscache.NamespaceIndex, "ns-1")
	must(t, err)
	if len(byNS) != 7 {
		t.Fatalf("ByIndex(ns-1) = %d objects, want 7", len(byNS))
	}
	for _, o := range f.Objects() {
		key, _ := toolscache.MetaNamespaceKeyFunc(o)
		want, _ := stripAnnotations(o)
		got, ok, err := s.GetStore().GetByKey(key)
		if err != nil || !ok || !apiequality.Semantic.DeepEqual(got, want) {
			t.Fatalf("GetByKey(%s) = %v, %v, %v; want the transformed object", key, got, ok, err)
		}
		if evs := rec.forKey(key); len(evs) != 1 || evs[0] != "add "+describe(want)+initialSuffix {
			t.Fatalf("events of %s = %q", key, evs)
		}
	}
	if st := s.Indexer().StoredStats(); st.Objects != 20 || st.Encoded != 20 {
		t.Fatalf("StoredStats = %+v, want 20 objects, all encoded", st)
	}

	// A watched update and delete: delivered with objects, each encoded once
	// (by the Reflector, not again by the pop loop).
	upd := fullPod("ns-0", "p00", "")
	upd.Labels["v"] = "2"
	f.Update(upd)
	f.Delete(fullPod("ns-1", "p01", ""))
	eventually(t, 5*time.Second, "update and delete delivered", func() bool { return rec.count() == 22 })
	if n := codec.encodes.Load() - before; n != 1 {
		t.Fatalf("%d encodes for one watched update, want 1", n)
	}
	cur, _ := f.Get("ns-0/p00")
	want, _ := stripAnnotations(cur)
	evs := rec.forKey("ns-0/p00")
	if last := evs[len(evs)-1]; !strings.HasPrefix(last, "update "+describe(want)+" from ") {
		t.Fatalf("last event of ns-0/p00 = %q, want the update to %s", last, describe(want))
	}
	if evs := rec.forKey("ns-1/p01"); !strings.HasPrefix(evs[len(evs)-1], "delete ns-1/p01") {
		t.Fatalf("events of ns-1/p01 = %q, want a delete last", evs)
	}
}

func TestEarlyEncodedObjectIsRefiledWhenIndexersChangeBeforeItIsApplied(t *testing.T) {
	ix := NewIndexerWithOptions(toolscache.MetaNamespaceKeyFunc, nil, IndexerOptions{Codec: podCodec(t)})
	early := ix.itemOf(fullPod("ns", "a", "3"), admitListed)
	kept := ix.itemOf(fullPod("ns", "b", "4"), admitWatched)
	must(t, ix.AddIndexers(toolscache.Indexers{"app": func(obj any) ([]string, error) {
		return []string{obj.(metav1.Object).GetLabels()["app"]}, nil
	}}))
	w := ix.beginBatch(2)
	for _, o := range []any{early, kept} {
		e := o.(*queuedItem)
		if _, _, err := w.swap(e.key, o); err != nil {
			t.Fatal(err)
		}
	}
	w.commit()
	got, err := ix.ByIndex("app", "web")
	must(t, err)
	if names := describeAll(got); len(names) != 2 {
		t.Fatalf("ByIndex(app=web) = %q, want both objects encoded before the index existed", names)
	}
	if rv := ix.LastStoreSyncResourceVersion(); rv != "4" {
		t.Fatalf("store RV = %q, want 4 (the newest queued object's)", rv)
	}
}

func TestEarlyEncodingOfAnObjectTheCodecRefusesKeepsItDecodedAndReportsOnce(t *testing.T) {
	codec := podCodec(t)
	codec.failEncode = map[string]bool{"bad": true}
	var reported []string
	ix := NewIndexerWithOptions(toolscache.MetaNamespaceKeyFunc, nil, IndexerOptions{Codec: codec,
		OnCodecError: func(key string, err error) { reported = append(reported, key) }})
	bad := fullPod("ns", "bad", "5")
	o := ix.itemOf(bad, admitListed)
	e := o.(*queuedItem)
	if e.data != nil || e.obj != bad {
		t.Fatalf("refused object queued with data %v, obj %p; want no data and the object %p", e.data, e.obj, bad)
	}
	w := ix.beginBatch(1)
	_, _, err := w.swap(e.key, o)
	must(t, err)
	w.commit()
	if len(reported) != 1 || codec.encodes.Load() != 1 {
		t.Fatalf("reported %q after %d encodes, want one report of one encode", reported, codec.encodes.Load())
	}
	got, ok, err := ix.GetByKey("ns/bad")
	if err != nil || !ok || got == any(bad) || !apiequality.Semantic.DeepEqual(got, bad) {
		t.Fatalf("GetByKey = %p, %v, %v; want a copy of the object kept decoded", got, ok, err)
	}
	if st := ix.StoredStats(); st.Objects != 1 || st.Encoded != 0 {
		t.Fatalf("StoredStats = %+v", st)
	}
}

func TestHandlerViewOfQueuedTombstoneHoldsTheDecodedObject(t *testing.T) {
	ix := NewIndexerWithOptions(toolscache.MetaNamespaceKeyFunc, nil, IndexerOptions{Codec: podCodec(t)})
	p := fullPod("ns", "a", "3")
	e := ix.itemOf(p, admitListed)
	view := ix.handlerView(toolscache.DeletedFinalStateUnknown{Key: "ns/a", Obj: e})
	got := resolveObject(view).(toolscache.DeletedFinalStateUnknown)
	if got.Key != "ns/a" || !apiequality.Semantic.DeepEqual(got.Obj, runtime.Object(p)) {
		t.Fatalf("tombstone delivered as %#v, want key ns/a with the decoded pod", got)
	}
}

func TestShardFilterEvictsQueuedEarlyEncodedObjectsByTheirUID(t *testing.T) {
	ix := NewIndexerWithOptions(toolscache.MetaNamespaceKeyFunc, nil, IndexerOptions{Codec: podCodec(t)})
	fifo := newDeltaFIFO(deltaFIFOOptions{KeyFunction: toolscache.MetaNamespaceKeyFunc, KnownObjects: ix})
	in, out := fullPod("ns", "in", "3"), fullPod("ns", "out", "4")
	hIn := ShardHash(string(in.UID))
	if hIn == ShardHash(string(out.UID)) {
		t.Fatal("test pods hash alike")
	}
	must(t, fifo.Add(ix.itemOf(in, admitListed)))
	must(t, fifo.Add(ix.itemOf(out, admitWatched)))
	sel := &ShardSelector{Field: ShardByUID, Ranges: []HashRange{{First: hIn, Last: hIn}}}
	evicted := fifo.SetFilter(sel)
	if len(evicted) != 1 || evicted[0] != "ns/out" {
		t.Fatalf("evicted %q, want [ns/out]", evicted)
	}
	// A later object outside the shard is not queued at all.
	late := fullPod("ns", "late", "5")
	must(t, fifo.Add(ix.itemOf(late, admitListed)))
	if n := fifo.Len(); n != 2 {
		t.Fatalf("%d keys queued, want 2 (ns/in and the eviction of ns/out)", n)
	}
}

// TestTheDeltaFIFOAndTheWriterReadTheItemsFields: with compact storage the
// Reflector's item carries its key and resourceVersion, which the DeltaFIFO
// and the batch writer read without calling the key function or decoding;
// decoded storage and deleted objects hand on the object itself (as
// client-go's Reflector does), keyed by the key function and indexed when
// stored.
func TestTheDeltaFIFOAndTheWriterReadTheItemsFields(t *testing.T) {
	for _, compact := range []bool{true, false} {
		t.Run(fmt.Sprintf("compact=%v", compact), func(t *testing.T) {
			var indexed []string
			opts := IndexerOptions{}
			if compact {
				opts.Codec = podCodec(t)
			}
			ix := NewIndexerWithOptions(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{"app": func(obj any) ([]string, error) {
				p := obj.(*corev1.Pod)
				indexed = append(indexed, p.Name)
				return []string{p.Labels["app"]}, nil
			}}, opts)
			p := fullPod("ns", "a", "7")
			queued := ix.itemOf(p, admitWatched)
			if deleted := ix.itemOf(fullPod("ns", "b", "8"), admitDeleted); deleted.(*corev1.Pod).Name != "b" {
				t.Fatalf("deleted object queued as %T, want the object itself", deleted)
			}
			e, isItem := queued.(*queuedItem)
			switch {
			case compact && (!isItem || e.obj != any(p) || e.data == nil || e.key != "ns/a" || e.rv != "7"):
				t.Fatalf("compact: queued %#v, want an item of ns/a at RV 7 with its encoding and the pod", queued)
			case compact && len(indexed) != 1:
				t.Fatalf("compact: index function ran for %q, want once, when the item was made", indexed)
			case !compact && queued != any(p):
				t.Fatalf("decoded storage: queued %T, want the pod itself", queued)
			case !compact && len(indexed) != 0:
				t.Fatalf("decoded storage: index function ran for %q before the object was stored", indexed)
			}

			keyCalls := 0
			fifo := newDeltaFIFO(deltaFIFOOptions{KnownObjects: ix, KeyFunction: func(obj any) (string, error) {
				keyCalls++
				return toolscache.MetaNamespaceKeyFunc(obj)
			}})
			must(t, fifo.Update(queued))
			if want := map[bool]int{true: 0, false: 1}[compact]; keyCalls != want {
				t.Fatalf("the DeltaFIFO called its key function %d times, want %d", keyCalls, want)
			}
			must(t, fifo.Pop(func(ds deltaList, _ bool) error {
				w := ix.beginBatch(1)
				defer w.commit()
				_, _, err := w.swap("ns/a", ds.Newest().Object)
				return err
			}))
			if len(indexed) != 1 || indexed[0] != "a" {
				t.Fatalf("index function ran for %q, want once for a", indexed)
			}
			got, ok, err := ix.GetByKey("ns/a")
			if err != nil || !ok || !apiequality.Semantic.DeepEqual(got, any(p)) || (got == any(p)) == compact {
				t.Fatalf("GetByKey = %p, %v, %v; want the pod (a decode of it with compact storage)", got, ok, err)
			}
			if byApp, _ := ix.ByIndex("app", p.Labels["app"]); len(byApp) != 1 {
				t.Fatalf("ByIndex(app) = %d objects, want 1", len(byApp))
			}
			if rv := ix.LastStoreSyncResourceVersion(); rv != "7" {
				t.Fatalf("store RV = %q, want 7", rv)
			}
		})
	}
}
