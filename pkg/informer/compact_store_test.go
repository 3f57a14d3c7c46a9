package informer

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/deltacache/deltacache/pkg/informer/codec"
	"github.com/deltacache/deltacache/pkg/informer/informertest"
)

// countingCodec wraps a codec, counts its calls and fails to encode objects
// whose name is in failEncode.
type countingCodec struct {
	StorageCodec
	encodes, decodes atomic.Int64
	failEncode       map[string]bool
}

func (c *countingCodec) Encode(obj any) ([]byte, error) {
	c.encodes.Add(1)
	if m, ok := obj.(metav1.Object); ok && c.failEncode[m.GetName()] {
		return nil, errors.New("cannot represent " + m.GetName())
	}
	return c.StorageCodec.Encode(obj)
}

func (c *countingCodec) Decode(data []byte) (any, error) {
	c.decodes.Add(1)
	return c.StorageCodec.Decode(data)
}

func (c *countingCodec) DecodeInto(data []byte, dst any) error {
	c.decodes.Add(1)
	return c.StorageCodec.(DecoderInto).DecodeInto(data, dst)
}

func podCodec(t testing.TB) *countingCodec {
	t.Helper()
	c, err := codec.NewProtobuf(&corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	return &countingCodec{StorageCodec: c}
}

// fullPod is a pod with most kinds of fields set: maps, slices, pointers,
// quantities, times.
func fullPod(ns, name, rv string) *corev1.Pod {
	p := pod(ns, name, rv, "app=web", "tier=front")
	p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	p.UID = types.UID("0b8c0b1e-1b1a-4d5e-9a47-" + name)
	p.CreationTimestamp = metav1.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	p.Annotations = map[string]string{"note": "x"}
	grace := int64(30)
	p.Spec = corev1.PodSpec{
		NodeName:                      "node-1",
		TerminationGracePeriodSeconds: &grace,
		Containers: []corev1.Container{{
			Name: "c", Image: "registry/app:1.2.3",
			Env: []corev1.EnvVar{{Name: "A", Value: "1"}},
		}},
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}}}
	return p
}

func TestCompactStorageReadsReturnEqualObjectsOfTheirOwn(t *testing.T) {
	codec := podCodec(t)
	ix := NewIndexerWithOptions(toolscache.MetaNamespaceKeyFunc,
		toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc},
		IndexerOptions{Codec: codec})
	in := fullPod("ns", "a", "7")
	must(t, ix.Add(in))
	if !ix.readsCopy() {
		t.Fatal("readsCopy() = false with a codec")
	}

	got, ok, err := ix.GetByKey("ns/a")
	if err != nil || !ok {
		t.Fatalf("GetByKey = %v, %v", ok, err)
	}
	p := got.(*corev1.Pod)
	if p == in {
		t.Fatal("GetByKey returned the pointer given to Add")
	}
	if !apiequality.Semantic.DeepEqual(p, in) {
		t.Fatalf("decoded pod differs:\n got %+v\nwant %+v", p, in)
	}
	if p.GroupVersionKind() != (schema.GroupVersionKind{Version: "v1", Kind: "Pod"}) {
		t.Fatalf("decoded GVK = %v", p.GroupVersionKind())
	}
	// The reader owns what it got: modifying it changes nothing stored.
	p.Labels["app"] = "changed"
	p.Spec.Containers[0].Image = "changed"
	again, _, _ := ix.GetByKey("ns/a")
	if again.(*corev1.Pod).Labels["app"] != "web" || again.(*corev1.Pod).Spec.Containers[0].Image != "registry/app:1.2.3" {
		t.Fatalf("a reader's change reached the store: %+v", again)
	}

	byNS, err := ix.ByIndex(toolscache.NamespaceIndex, "ns")
	must(t, err)
	if len(byNS) != 1 || !apiequality.Semantic.DeepEqual(byNS[0], in) {
		t.Fatalf("ByIndex = %v", describeAll(byNS))
	}
	if l := ix.List(); len(l) != 1 || !apiequality.Semantic.DeepEqual(l[0], in) {
		t.Fatalf("List = %v", describeAll(l))
	}

	data, _ := in.Marshal()
	want := StoredStats{Objects: 1, Encoded: 1, EncodedBytes: int64(len(data))}
	if s := ix.StoredStats(); s != want {
		t.Fatalf("StoredStats = %+v, want %+v", s, want)
	}
	must(t, ix.Delete(in))
	if s := ix.StoredStats(); s != (StoredStats{}) {
		t.Fatalf("StoredStats after delete = %+v", s)
	}
}

func TestCompactStorageStatsFollowReplaceBatchesAndUpdates(t *testing.T) {
	ix := NewIndexerWithOptions(toolscache.MetaNamespaceKeyFunc, nil, IndexerOptions{Codec: podCodec(t)})
	a, b := fullPod("ns", "a", "1"), fullPod("ns", "b", "2")
	must(t, ix.Replace([]any{a, b, a}, "2"))
	size := func(objs ...*corev1.Pod) int64 {
		var n int64
		for _, o := range objs {
			n += int64(o.Size())
		}
		return n
	}
	if s := ix.StoredStats(); s != (StoredStats{Objects: 2, Encoded: 2, EncodedBytes: size(a, b)}) {
		t.Fatalf("after Replace: %+v", s)
	}
	b2 := fullPod("ns", "b", "3")
	b2.Annotations["long"] = strings.Repeat("x", 100)
	w := ix.beginBatch(1)
	must(t, w.put("ns/b", b2))
	w.remove("ns/a")
	w.commit()
	if s := ix.StoredStats(); s != (StoredStats{Objects: 1, Encoded: 1, EncodedBytes: size(b2)}) {
		t.Fatalf("after a batch: %+v", s)
	}
}

func TestCompactStorageKeepsObjectsTheCodecCannotEncodeDecoded(t *testing.T) {
	codec := podCodec(t)
	codec.failEncode = map[string]bool{"bad": true}
	var mu sync.Mutex
	var reported []string
	ix := NewIndexerWithOptions(toolscache.MetaNamespaceKeyFunc, nil, IndexerOptions{Codec: codec,
		OnCodecError: func(key string, err error) {
			mu.Lock()
			defer mu.Unlock()
			reported = append(reported, key+": "+err.Error())
		}})
	bad, good := fullPod("ns", "bad", "1"), fullPod("ns", "good", "2")
	must(t, ix.Add(bad))
	must(t, ix.Add(good))

	got, ok, err := ix.GetByKey("ns/bad")
	if !ok || err != nil {
		t.Fatalf("GetByKey(bad) = %v, %v: the object was dropped", ok, err)
	}
	if got == bad {
		t.Fatal("an object kept decoded is handed out without a copy")
	}
	if !apiequality.Semantic.DeepEqual(got, bad) {
		t.Fatalf("kept object differs: %+v", got)
	}
	if n := len(ix.List()); n != 2 {
		t.Fatalf("List has %d objects, want 2", n)
	}
	if s := ix.StoredStats(); s.Objects != 2 || s.Encoded != 1 {
		t.Fatalf("StoredStats = %+v, want 2 objects, 1 encoded", s)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"ns/bad: encode: cannot represent bad"}; !slices.Equal(reported, want) {
		t.Fatalf("reported %q, want %q", reported, want)
	}
}

func TestCompactStorageAddIndexersFilesDecodedObjects(t *testing.T) {
	ix := NewIndexerWithOptions(toolscache.MetaNamespaceKeyFunc, nil, IndexerOptions{Codec: podCodec(t)})
	must(t, ix.Add(fullPod("ns", "a", "1")))
	must(t, ix.Add(pod("ns", "b", "2", "app=db")))
	must(t, ix.AddIndexers(toolscache.Indexers{"app": func(obj any) ([]string, error) {
		return []string{obj.(*corev1.Pod).Labels["app"]}, nil
	}}))
	got, err := ix.ByIndex("app", "web")
	must(t, err)
	if d := describeAll(got); !slices.Equal(d, []string{"ns/a@1"}) {
		t.Fatalf("ByIndex(app=web) = %v", d)
	}
	if s := ix.StoredStats(); s.Encoded != 2 {
		t.Fatalf("AddIndexers changed the stored form: %+v", s)
	}
}

// oldRecorder records the old objects of updates.
type oldRecorder struct {
	toolscache.ResourceEventHandlerFuncs
	mu   sync.Mutex
	olds []any
}

func newOldRecorder() *oldRecorder {
	r := &oldRecorder{}
	r.UpdateFunc = func(old, _ any) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.olds = append(r.olds, old)
	}
	return r
}

func (r *oldRecorder) got() []any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.olds)
}

func TestCompactStorageDecodesAnUpdatesOldObjectOnceAndOnlyForHandlers(t *testing.T) {
	codec := podCodec(t)
	fake := informertest.New(&corev1.Pod{})
	fake.Create(fullPod("ns", "a", ""))
	s := newPodInformer(fake, Options{StorageCodec: codec})
	startInformer(t, s)
	waitSynced(t, s.HasSyncedChecker())

	// No handler: an update stores the new encoding and decodes nothing.
	before := codec.decodes.Load()
	upd := fullPod("ns", "a", "")
	upd.Labels["v"] = "2"
	fake.Update(upd)
	eventually(t, 5*time.Second, "update stored", func() bool {
		return s.GetIndexer().(*Indexer).LastStoreSyncResourceVersion() == fake.ResourceVersion()
	})
	if n := codec.decodes.Load() - before; n != 0 {
		t.Fatalf("%d decodes for an update without handlers, want 0", n)
	}

	// Two handlers: the old object is decoded once and shared.
	h1, h2 := newOldRecorder(), newOldRecorder()
	waitSynced(t, addHandler(t, s, h1).HasSyncedChecker())
	waitSynced(t, addHandler(t, s, h2).HasSyncedChecker())
	before = codec.decodes.Load()
	upd = fullPod("ns", "a", "")
	upd.Labels["v"] = "3"
	fake.Update(upd)
	eventually(t, 5*time.Second, "both handlers updated", func() bool { return len(h1.got()) == 1 && len(h2.got()) == 1 })
	o1, o2 := h1.got()[0], h2.got()[0]
	if o1.(*corev1.Pod).Labels["v"] != "2" {
		t.Fatalf("old object has labels %v, want v=2", o1.(*corev1.Pod).Labels)
	}
	if o1 != o2 {
		t.Fatal("the two handlers got different decodes of the old object")
	}
	if n := codec.decodes.Load() - before; n != 1 {
		t.Fatalf("%d decodes for one update with two handlers, want 1", n)
	}
}

func TestCompactStorageHandlerAddedAfterStartGetsDecodedReplay(t *testing.T) {
	fake := informertest.New(&corev1.Pod{})
	fake.Create(fullPod("ns", "a", ""))
	fake.Create(fullPod("ns", "b", ""))
	s := newPodInformer(fake, Options{StorageCodec: podCodec(t)})
	startInformer(t, s)
	waitSynced(t, s.HasSyncedChecker())
	rec := newRecorder()
	waitSynced(t, addHandler(t, s, rec).HasSyncedChecker())
	got := rec.all()
	slices.Sort(got)
	var want []string
	for _, o := range fake.Objects() {
		want = append(want, "add "+describe(o)+initialSuffix)
	}
	slices.Sort(want)
	if len(want) != 2 || !slices.Equal(got, want) {
		t.Fatalf("replay = %q, want %q", got, want)
	}
}

func TestCompactStorageRelistOfTheSameObjectsIsAResyncOnly(t *testing.T) {
	fake := informertest.New(&corev1.Pod{})
	fake.Create(fullPod("ns", "a", ""))
	s := newPodInformer(fake, Options{StorageCodec: podCodec(t), DisableWatchList: true})
	startInformer(t, s)
	h := newOldRecorder()
	waitSynced(t, addHandler(t, s, h).HasSyncedChecker())
	// A relist of the same state: Replaced deltas of the same
	// resourceVersion, which go to no handler (none is due for resync).
	fake.Compact()
	fake.CloseWatches()
	if _, err := fake.WaitFor(testCtx(t), func(reqs []informertest.Request) bool {
		return len(fake.RequestsOf("list")) >= 2 && len(fake.Watches()) >= 2
	}); err != nil {
		t.Fatal(err)
	}
	upd := fullPod("ns", "a", "")
	upd.Labels["v"] = "2"
	fake.Update(upd)
	eventually(t, 5*time.Second, "the update", func() bool { return len(h.got()) > 0 })
	if n := len(h.got()); n != 1 {
		t.Fatalf("%d updates, want 1 (the relist of an unchanged object is not one)", n)
	}
}

func TestCompactStorageCodecErrorsAreLoggedOncePerKeyAndCounted(t *testing.T) {
	codec := podCodec(t)
	codec.failEncode = map[string]bool{"bad": true}
	var mu sync.Mutex
	var lines []string
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{})
	fake := informertest.New(&corev1.Pod{})
	fake.Create(fullPod("ns", "bad", ""))
	metrics, reg := newMetricsRegistry(t)
	s := newPodInformer(fake, Options{StorageCodec: codec, Logger: log, Metrics: metrics})
	startInformer(t, s)
	waitSynced(t, s.HasSyncedChecker())
	for i := range 3 {
		upd := fullPod("ns", "bad", "")
		upd.Labels["v"] = fmt.Sprint(i)
		fake.Update(upd)
		eventually(t, 5*time.Second, "update stored", func() bool {
			return s.GetIndexer().(*Indexer).LastStoreSyncResourceVersion() == fake.ResourceVersion()
		})
	}
	mu.Lock()
	var codecLines []string
	for _, l := range lines {
		if strings.Contains(l, "compact storage") {
			codecLines = append(codecLines, l)
		}
	}
	mu.Unlock()
	if len(codecLines) != 1 || !strings.Contains(codecLines[0], `"key"="ns/bad"`) {
		t.Fatalf("codec error log lines = %q, want one naming ns/bad", codecLines)
	}
	mu.Lock()
	var synced []string
	for _, l := range lines {
		if strings.Contains(l, `"msg"="informer synced"`) {
			synced = append(synced, l)
		}
	}
	mu.Unlock()
	if len(synced) != 1 || !strings.Contains(synced[0], `"encoded"=0`) || !strings.Contains(synced[0], `"storedBytes"=0`) {
		t.Errorf("sync lines %q, want one with encoded=0 and storedBytes=0", synced)
	}
	series := gathered(t, reg, podLabels)
	if n := series["deltacache_informer_storage_codec_errors_total{op=encode}"]; n != 4 {
		t.Fatalf("encode errors counted = %v, want 4; series %v", n, series)
	}
	if n := series["deltacache_informer_stored_objects{form=decoded}"]; n != 1 {
		t.Fatalf("decoded objects gauge = %v, want 1", n)
	}
	if n := series["deltacache_informer_stored_bytes"]; n != 0 {
		t.Fatalf("stored bytes = %v, want 0 (nothing encoded)", n)
	}
}

// FuzzCompactStoreRoundTrip stores pods built from the fuzzer's values and
// checks that a read returns an equal pod.
func FuzzCompactStoreRoundTrip(f *testing.F) {
	f.Add("ns", "a", "1", "app", "web", "img:1", int64(30), []byte("x"))
	f.Add("", "b", "", "", "", "", int64(-1), []byte(nil))
	f.Add("n\x00s", "ü", "99999999999", "k/v", "\xff", "i", int64(1<<62), []byte{0, 1})
	f.Fuzz(func(t *testing.T, ns, name, rv, lk, lv, image string, grace int64, raw []byte) {
		in := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv,
			Labels: map[string]string{lk: lv}}}
		in.Spec.Containers = []corev1.Container{{Name: name, Image: image}}
		in.Spec.TerminationGracePeriodSeconds = &grace
		in.Annotations = map[string]string{"raw": string(raw)}
		codec := podCodec(t)
		ix := NewIndexerWithOptions(func(obj any) (string, error) { return ns + "/" + name, nil }, nil,
			IndexerOptions{Codec: codec})
		must(t, ix.Add(in))
		got, ok, err := ix.GetByKey(ns + "/" + name)
		if err != nil || !ok {
			t.Fatalf("GetByKey = %v, %v", ok, err)
		}
		// Protobuf carries strings as bytes: what went in comes out.
		if !apiequality.Semantic.DeepEqual(got, in) {
			t.Fatalf("round trip differs:\n got %#v\nwant %#v", got, in)
		}
		if s := ix.StoredStats(); s.Encoded != 1 {
			t.Fatalf("not stored encoded: %+v", s)
		}
	})
}

func TestCompactStorageGetIntoDecodesIntoTheCallersObject(t *testing.T) {
	codec := podCodec(t)
	codec.failEncode = map[string]bool{"bad": true}
	ix := NewIndexerWithOptions(toolscache.MetaNamespaceKeyFunc, nil, IndexerOptions{Codec: codec})
	in := fullPod("ns", "a", "7")
	must(t, ix.Add(in))
	must(t, ix.Add(fullPod("ns", "bad", "8")))

	dst := pod("other", "stale", "1", "leftover=x")
	exists, done, err := ix.GetInto("ns/a", dst)
	if !exists || !done || err != nil {
		t.Fatalf("GetInto = %v, %v, %v", exists, done, err)
	}
	if !apiequality.Semantic.DeepEqual(dst, in) {
		t.Fatalf("GetInto gave %+v, want %+v (no leftover of dst)", dst, in)
	}
	kept := pod("x", "y", "1")
	if exists, done, _ := ix.GetInto("ns/bad", kept); !exists || done || kept.Name != "y" {
		t.Fatalf("GetInto of an object held decoded = %v, %v and dst %s, want true, false and dst untouched",
			exists, done, kept.Name)
	}
	if exists, done, _ := ix.GetInto("ns/none", kept); exists || done {
		t.Fatalf("GetInto of an absent key = %v, %v", exists, done)
	}
}
