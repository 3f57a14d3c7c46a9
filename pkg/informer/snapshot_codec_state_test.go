package informer

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/deltacache/deltacache/pkg/informer/codec"
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
