package informer

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/deltacache/deltacache/pkg/informer/codec"
	"github.com/deltacache/deltacache/pkg/informer/informertest"
)

var (
	_ StatefulCodec    = (*codec.Compressed)(nil)
	_ CompressingCodec = (*codec.Compressed)(nil)
	_ DecoderInto      = (*codec.Compressed)(nil)
	_ LabelReader      = (*codec.Compressed)(nil)
)

func compressedPodCodec(t *testing.T) *codec.Compressed {
	t.Helper()
	inner, err := codec.NewProtobuf(&corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := codec.NewCompressed(inner, codec.CompressedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// populateVaried creates n pods of a few shapes (more than a Compressed
// codec's first sample, so that most are stored compressed).
func populateVaried(srv *snapshotServer, n int) {
	for i := range n {
		srv.createPod(fmt.Sprintf("pod-%d", i), fmt.Sprintf("uid-%d", i),
			fmt.Sprintf("app=web-%d", i%7), fmt.Sprintf("tier=tier-%d", i%3))
	}
}

// The records of a compressing codec decode only with its dictionaries: the
// snapshot carries them, and an informer whose new codec has made none resumes
// from it, with every object readable and equal to the server's.
func TestSnapshotOfCompressedRecordsCarriesTheDictionaries(t *testing.T) {
	srv := newSnapshotServer()
	populateVaried(srv, 600)
	dir := t.TempDir()
	cfg := Snapshot{Name: podSnapshotName}
	firstCodec := compressedPodCodec(t)
	first := runSnapshotInformerWith(t, srv, dir, cfg, firstCodec)
	first.stop(t)
	if n := firstCodec.Stats().Dictionaries; n == 0 {
		t.Fatal("the first informer's codec made no dictionary: the test would not cover one")
	}
	changeWhileStopped(srv)

	c := compressedPodCodec(t)
	second := runSnapshotInformerWith(t, srv, dir, cfg, c)
	rep, ok := second.s.startReport()
	if !ok || rep.Start != startResumed || rep.Loaded != 600 {
		t.Fatalf("start report = %+v (ok %v), want resumed with 600 loaded", rep, ok)
	}
	if got, want := c.Stats().Dictionaries, firstCodec.Stats().Dictionaries; got != want {
		t.Fatalf("the loading codec holds %d dictionaries, want the snapshot's %d", got, want)
	}
	equalStrings(t, "store after a warm start", storeState(second.s), srv.state())
	// Pods the server did not change while stopped come from the snapshot's
	// compressed records: their labels are the ones created.
	for _, o := range second.s.GetStore().List() {
		p := o.(*corev1.Pod)
		var i int
		if _, err := fmt.Sscanf(p.Name, "pod-%d", &i); err != nil || i < 4 {
			continue
		}
		if want := fmt.Sprintf("web-%d", i%7); p.Labels["app"] != want || p.Labels["tier"] != fmt.Sprintf("tier-%d", i%3) {
			t.Fatalf("pod %s decoded with labels %v", p.Name, p.Labels)
		}
	}
	// The second run's stop writes again, with the dictionaries it restored.
	second.stop(t)
	third := runSnapshotInformerWith(t, srv, dir, cfg, compressedPodCodec(t))
	if rep, _ := third.s.startReport(); rep.Start != startResumed {
		t.Fatalf("third start %+v, want resumed", rep)
	}
	equalStrings(t, "store after the third start", storeState(third.s), srv.state())
}

// A snapshot with a codec state is discarded by an informer whose codec keeps
// none (its records would not decode), with the reason logged, and it lists.
func TestSnapshotWithACodecStateForACodecWithoutIsDiscarded(t *testing.T) {
	srv := newSnapshotServer()
	populateVaried(srv, 300)
	dir := t.TempDir()
	cfg := Snapshot{Name: podSnapshotName}
	runSnapshotInformerWith(t, srv, dir, cfg, compressedPodCodec(t)).stop(t)

	second := runSnapshotInformer(t, srv, dir, cfg)
	if rep, _ := second.s.startReport(); rep.Start == startResumed || rep.Start == startDiffed {
		t.Fatalf("start %+v from a snapshot of another codec's records", rep)
	}
	if got := second.logs.with("snapshot discarded", discardCodecState); len(got) != 1 {
		t.Fatalf("discard log lines naming the codec state: %q", got)
	}
	equalStrings(t, "store after a cold start", storeState(second.s), srv.state())
}

// A relist brings back objects that did not change, but a compressing codec
// may encode them into other bytes (here: the first pods were stored as they
// are, before the first dictionary; the relist compresses them): they are still
// the same objects, so handlers not due for a resync receive nothing for them.
func TestRelistOfUnchangedCompressedObjectsDeliversNoUpdate(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	for i := range 400 {
		f.Create(pod("ns", fmt.Sprintf("pod-%03d", i), "", fmt.Sprintf("app=web-%d", i%5), "tier=front"))
	}
	c := compressedPodCodec(t)
	s := newPodInformer(f, Options{StorageCodec: c})
	rec := newRecorder()
	reg := addHandler(t, s, rec)
	startInformer(t, s)
	waitSynced(t, reg.HasSyncedChecker())
	if c.Stats().AsIs < 200 || c.Stats().Dictionaries != 1 {
		t.Fatalf("codec after the list: %+v, want the first pods stored as they are and one dictionary", c.Stats())
	}
	added := rec.count()
	lists := len(f.RequestsOf(informertest.VerbList))
	s.getReflector().RequestRelist("test")
	eventually(t, 10*time.Second, "the relist", func() bool { return len(f.RequestsOf(informertest.VerbList)) > lists })
	// A pod created after the relist is delivered after what the relist delivered.
	f.Create(pod("ns", "after-relist", ""))
	eventually(t, 10*time.Second, "the pod created after the relist", func() bool {
		return len(rec.forKey("ns/after-relist")) == 1
	})
	if got := rec.count() - added; got != 1 {
		t.Fatalf("%d notifications after the relist, want only the new pod's add: %q", got, rec.all()[added:])
	}
}

// A stored record whose bytes were damaged is never decoded into a wrong
// object: the read fails (the checksum), and the informer relists, which
// replaces the record with the server's object encoded anew, readable again.
func TestCorruptRecordIsRefusedAndReplacedByARelist(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	for i := range 300 {
		f.Create(pod("ns", fmt.Sprintf("pod-%03d", i), "", "app=web"))
	}
	s := newPodInformer(f, Options{StorageCodec: compressedPodCodec(t), Metrics: NewMetrics()})
	reg := addHandler(t, s, newRecorder())
	startInformer(t, s)
	waitSynced(t, reg.HasSyncedChecker())
	const key = "ns/pod-290"
	rec := s.indexer.table.Load().get(key)
	if rec == nil || rec.data == nil || rec.data[0] == 0 {
		t.Fatalf("record of %s: %+v, want a compressed one", key, rec)
	}
	lists := len(f.RequestsOf(informertest.VerbList))
	rec.data[len(rec.data)/2] ^= 0x55 // damaged in memory

	if obj, exists, err := s.GetIndexer().GetByKey(key); err == nil || obj != nil {
		t.Fatalf("read of a damaged record: %v, exists %v, error %v; want an error and no object", obj, exists, err)
	}
	eventually(t, 10*time.Second, "a relist", func() bool { return len(f.RequestsOf(informertest.VerbList)) > lists })
	eventually(t, 10*time.Second, "the object readable again", func() bool {
		obj, _, err := s.GetIndexer().GetByKey(key)
		return err == nil && obj != nil && obj.(*corev1.Pod).Name == "pod-290"
	})
	// A second damaged record within the minute is refused as well, but relists no more.
	lists = len(f.RequestsOf(informertest.VerbList))
	rec = s.indexer.table.Load().get("ns/pod-291")
	rec.data[len(rec.data)/2] ^= 0x55
	if _, _, err := s.GetIndexer().GetByKey("ns/pod-291"); err == nil {
		t.Fatal("read of a second damaged record succeeded")
	}
	time.Sleep(200 * time.Millisecond)
	if got := len(f.RequestsOf(informertest.VerbList)); got != lists {
		t.Fatalf("%d more LISTs within the minute after the first relist, want none", got-lists)
	}
}
