package informer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/deltacache/deltacache/pkg/informer/informertest"
)

// changeWhileStopped makes the changes a stopped informer misses: pod-1
// updated, pod-2 deleted, pod-3 deleted and re-created under its name with
// a new uid, pod-new created.
func changeWhileStopped(srv *snapshotServer) {
	p1, _ := srv.Get(ns1 + "/pod-1")
	u := p1.DeepCopyObject().(*corev1.Pod)
	u.Labels = map[string]string{appLabel: "changed"}
	srv.Update(u)
	p2, _ := srv.Get(ns1 + "/pod-2")
	srv.Delete(p2)
	p3, _ := srv.Get(ns1 + "/pod-3")
	srv.Delete(p3)
	srv.createPod("pod-3", "uid-3-again")
	srv.createPod("pod-new", "uid-new")
}

// populate creates pods pod-0 … pod-(n-1) with uids uid-0 ….
func populate(srv *snapshotServer, n int) {
	for i := range n {
		srv.createPod(fmt.Sprintf("pod-%d", i), fmt.Sprintf("uid-%d", i), "app=web")
	}
}

// writeFirstSnapshot runs an informer on srv until synced and stops it,
// which writes its snapshot to dir.
func writeFirstSnapshot(t *testing.T, srv *snapshotServer, dir string, cfg Snapshot) {
	t.Helper()
	first := runSnapshotInformer(t, srv, dir, cfg)
	first.stop(t)
	if _, err := os.Stat(filepath.Join(dir, snapshotFileName(podSnapshotName))); err != nil {
		t.Fatalf("no snapshot written at stop: %v", err)
	}
}

const podSnapshotName = "pods"

func TestSnapshotWarmStartResumesByWatchAndHandlersSeeOneAddPerFinalObject(t *testing.T) {
	srv := newSnapshotServer()
	populate(srv, 5)
	dir := t.TempDir()
	cfg := Snapshot{Name: podSnapshotName}
	writeFirstSnapshot(t, srv, dir, cfg)
	changeWhileStopped(srv)
	listsBefore := len(srv.RequestsOf(informertest.VerbList))

	second := runSnapshotInformer(t, srv, dir, cfg)
	want := srv.state()
	equalStrings(t, "store after a warm start", storeState(second.s), want)
	rep, ok := second.s.startReport()
	if !ok || rep != (startReport{Start: startResumed, Loaded: 5}) {
		t.Fatalf("start report = %+v (ok %v), want resumed with 5 loaded", rep, ok)
	}
	eventually(t, 5*time.Second, "one add per object", func() bool { return second.rec.count() >= len(want) })
	equalStrings(t, "handler calls", sortedEvents(second.rec), initialAdds(want))
	if got := second.rec.forKey(ns1 + "/pod-2"); len(got) != 0 {
		t.Fatalf("the pod deleted while stopped was delivered: %q", got)
	}
	// The only LIST of the second run is the one-object read of the server's RV.
	lists := srv.RequestsOf(informertest.VerbList)[listsBefore:]
	if len(lists) != 1 || lists[0].Limit != 1 {
		t.Fatalf("LIST requests of the warm start = %+v, want one with Limit 1", lists)
	}
	if got := srv.gotten(); len(got) != 0 {
		t.Fatalf("a resumed start sent Gets: %q", got)
	}
	// The synced line is logged just after HasSynced turns true.
	eventually(t, 5*time.Second, "the synced log line", func() bool { return len(second.logs.with("informer synced")) > 0 })
	if got := second.logs.with("informer synced", `"start"="resumed"`, `"loaded"=5`); len(got) != 1 {
		t.Fatalf("synced log lines naming the resumed start: %q", got)
	}
}

func TestSnapshotWarmStartServesNothingUntilCaughtUp(t *testing.T) {
	srv := newSnapshotServer()
	populate(srv, 4)
	dir := t.TempDir()
	cfg := Snapshot{Name: podSnapshotName}
	writeFirstSnapshot(t, srv, dir, cfg)
	changeWhileStopped(srv)
	// The server's RV, as the warm start reads it, is one ahead of every
	// change: the replayed changes do not reach it, and the informer must
	// stay unsynced, its store empty, until a change at that RV comes.
	srv.ServeBookmarks(false)
	current, _ := parseRV(srv.ResourceVersion())
	srv.ScriptList(informertest.ListResponse{ResourceVersion: fmt.Sprint(current + 1)})
	s := newPodInformer(srv, Options{StorageCodec: podCodec(t), Metrics: NewMetrics(), DisableWatchList: true,
		Snapshot: Snapshot{Dir: dir, Name: podSnapshotName, Identity: "pods", Version: "test"}})
	startInformer(t, s)
	if _, err := srv.WaitForWatch(testCtx(t), 1); err != nil { // watch 0 was the first run's
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if s.HasSynced() || len(s.GetStore().List()) != 0 {
		t.Fatalf("synced %v with %d objects before the catch-up reached the server's RV", s.HasSynced(), len(s.GetStore().List()))
	}
	srv.createPod("pod-late", "uid-late")
	eventually(t, 5*time.Second, "sync after the change at the server's RV", s.HasSynced)
	equalStrings(t, "store", storeState(s), srv.state())
}

func TestSnapshotWarmStartAfter410DiffsByMetadataAndFetchesOnlyTheChanged(t *testing.T) {
	for _, tc := range []struct {
		name    string
		compact bool
		maxAge  time.Duration
		maxPage int
		pages   int
	}{
		{name: "410", compact: true, pages: 1},
		{name: "older than MaxAge", maxAge: time.Nanosecond, pages: 1},
		{name: "410, pages of 7", compact: true, maxPage: 7, pages: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newSnapshotServer()
			populate(srv, 20)
			srv.maxPage = tc.maxPage
			dir := t.TempDir()
			writeFirstSnapshot(t, srv, dir, Snapshot{Name: podSnapshotName})
			changeWhileStopped(srv)
			if tc.compact {
				srv.Compact()
			}
			cfg := Snapshot{Name: podSnapshotName, MaxAge: tc.maxAge}
			second := runSnapshotInformer(t, srv, dir, cfg)
			want := srv.state()
			equalStrings(t, "store after a diffed start", storeState(second.s), want)
			rep, _ := second.s.startReport()
			if rep != (startReport{Start: startDiffed, Loaded: 20, Fetched: 3}) {
				t.Fatalf("start report = %+v, want diffed, 20 loaded, 3 fetched; log: %q", rep, second.logs.with("warm start"))
			}
			equalStrings(t, "Gets", srv.gotten(), []string{ns1 + "/pod-1", ns1 + "/pod-3", ns1 + "/pod-new"})
			// Each Get asks for an object not older than the metadata list (the
			// server's RV: nothing changed after it), which a watch cache serves.
			rv := srv.ResourceVersion()
			equalStrings(t, "the Gets' resourceVersions", srv.getResourceVersions(), []string{rv, rv, rv})
			limits := srv.metadataLimits()
			if len(limits) != tc.pages || slices.ContainsFunc(limits, func(l int64) bool { return l != defaultPageSize*diffPageFactor }) {
				t.Fatalf("metadata LIST limits %v, want %d pages of %d", limits, tc.pages, defaultPageSize*diffPageFactor)
			}
			logged := second.logs.with("snapshot compared with a metadata list")
			if len(logged) != 1 || !strings.Contains(logged[0], fmt.Sprintf(`"listed"=%d "pages"=%d "fetched"=3`, len(want), tc.pages)) {
				t.Fatalf("diff log lines %q, want one with %d listed in %d pages, 3 fetched", logged, len(want), tc.pages)
			}
			eventually(t, 5*time.Second, "one add per object", func() bool { return second.rec.count() >= len(want) })
			equalStrings(t, "handler calls", sortedEvents(second.rec), initialAdds(want))
		})
	}
}

func TestSnapshotAheadOfTheServerIsDiffedNotResumed(t *testing.T) {
	// A snapshot whose RV the server has not reached (another history: etcd
	// restored from a backup) must not count as caught up.
	srv := newSnapshotServer()
	populate(srv, 20)
	dir := t.TempDir()
	writeFirstSnapshot(t, srv, dir, Snapshot{Name: podSnapshotName})
	h, recs, err := readSnapshotFile(dir, podSnapshotName, Snapshot{Identity: "pods"}.identityHash(), mustBuild(t, "test"))
	must(t, err)
	h.resourceVersion = "1000000"
	_, err = writeSnapshotFile(t.Context(), dir, podSnapshotName, *h, recs, snapshotPace{})
	must(t, err)
	changeWhileStopped(srv)
	second := runSnapshotInformer(t, srv, dir, Snapshot{Name: podSnapshotName})
	equalStrings(t, "store", storeState(second.s), srv.state())
	if rep, _ := second.s.startReport(); rep != (startReport{Start: startDiffed, Loaded: 20, Fetched: 3}) {
		t.Fatalf("start report = %+v, want diffed with 3 fetched", rep)
	}
}

// pagedSnapshotServer returns a server of n pods listed in pages of at most
// maxPage, and the directory of the snapshot a first informer wrote of them.
func pagedSnapshotServer(t *testing.T, n, maxPage int) (*snapshotServer, string) {
	t.Helper()
	srv := newSnapshotServer()
	populate(srv, n)
	srv.maxPage = maxPage
	dir := t.TempDir()
	writeFirstSnapshot(t, srv, dir, Snapshot{Name: podSnapshotName})
	return srv, dir
}

func TestSnapshotDiffWithTooManyChangedGivesUpMidListAndListsCold(t *testing.T) {
	// 70 of 100 pods change: past diffGetFloor (64) and 1/maxDiffShare of
	// those listed, which the diff sees after the 7th page of 10 and gives up
	// there for a cold list, not after the whole metadata list.
	srv, dir := pagedSnapshotServer(t, 100, 10)
	for _, o := range srv.Objects() {
		p := o.DeepCopyObject().(*corev1.Pod)
		var i int
		if _, err := fmt.Sscanf(p.Name, "pod-%d", &i); err != nil || i >= 70 {
			continue
		}
		p.Labels = map[string]string{appLabel: "changed"}
		srv.Update(p)
	}
	srv.Compact()
	second := runSnapshotInformer(t, srv, dir, Snapshot{Name: podSnapshotName})
	want := srv.state()
	equalStrings(t, "store after a cold fallback", storeState(second.s), want)
	rep, _ := second.s.startReport()
	if rep.Start != startCold || rep.Reason == "" || rep.Loaded != 100 {
		t.Fatalf("start report = %+v, want cold with a reason and 100 loaded", rep)
	}
	if pages := len(srv.metadataLimits()); pages != 7 {
		t.Fatalf("metadata LIST pages = %d, want 7 (the diff gives up at the page that passes the share)", pages)
	}
	if got := second.logs.with("warm start given up"); len(got) != 1 || !strings.Contains(got[0], "68 of the first 70 objects listed") {
		t.Fatalf("log lines %q, want one saying 68 of the first 70 listed changed (in key order the 7th page ends at pod-69, with pod-7 and pod-8 not yet listed)", got)
	}
	eventually(t, 5*time.Second, "one add per object", func() bool { return second.rec.count() >= len(want) })
	equalStrings(t, "handler calls", sortedEvents(second.rec), initialAdds(want))
}

func TestSnapshotDiffGetsWhileItListsTheNextPages(t *testing.T) {
	// The metadata LIST's last page is held until a Get of a changed object
	// of the first page has arrived: a diff that fetched only after the whole
	// list would wait here until the hold gives up.
	srv, dir := pagedSnapshotServer(t, 20, 10)
	changeWhileStopped(srv)
	srv.Compact()
	var heldTooLong atomic.Bool
	cfg := Snapshot{Name: podSnapshotName, ListMetadata: func(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
		if opts.Continue != "" {
			deadline := time.Now().Add(5 * time.Second)
			for len(srv.gotten()) == 0 {
				if time.Now().After(deadline) {
					heldTooLong.Store(true)
					break
				}
				time.Sleep(time.Millisecond)
			}
		}
		return srv.listMetadata(ctx, opts)
	}}
	second := runSnapshotInformer(t, srv, dir, cfg)
	if heldTooLong.Load() {
		t.Fatal("no Get arrived while the metadata LIST's second page was held: the Gets wait for the whole list")
	}
	equalStrings(t, "store after a diffed start", storeState(second.s), srv.state())
	if rep, _ := second.s.startReport(); rep != (startReport{Start: startDiffed, Loaded: 20, Fetched: 3}) {
		t.Fatalf("start report = %+v, want diffed, 20 loaded, 3 fetched", rep)
	}
}

func TestSnapshotWarmStartKeepsAKeyFromMovingBackwards(t *testing.T) {
	// The snapshot holds pod-0 at a newer RV than its header (written after
	// the header's RV was read); the catch-up watch replays an older change
	// of pod-0, which must not replace the newer record.
	srv := newSnapshotServer()
	populate(srv, 2)
	dir := t.TempDir()
	writeFirstSnapshot(t, srv, dir, Snapshot{Name: podSnapshotName})
	h, recs, err := readSnapshotFile(dir, podSnapshotName, Snapshot{Identity: "pods"}.identityHash(), mustBuild(t, "test"))
	must(t, err)
	p0, _ := srv.Get(ns1 + "/pod-0")
	change := p0.DeepCopyObject().(*corev1.Pod)
	change.Labels = map[string]string{appLabel: "older"}
	older := srv.Update(change)
	change.Labels = map[string]string{appLabel: "newer"}
	newer := srv.Update(change)
	data, err := podCodec(t).Encode(newer)
	must(t, err)
	for i := range recs {
		if recs[i].key == ns1+"/pod-0" {
			recs[i].data = data
		}
	}
	_, err = writeSnapshotFile(t.Context(), dir, podSnapshotName, *h, recs, snapshotPace{})
	must(t, err)
	srv.ScriptWatch(informertest.WatchResponse{Events: []watch.Event{
		{Type: watch.Modified, Object: older},
		informertest.BookmarkEvent(&corev1.Pod{}, srv.ResourceVersion()),
	}})
	second := runSnapshotInformer(t, srv, dir, Snapshot{Name: podSnapshotName})
	equalStrings(t, "store", storeState(second.s), srv.state())
	obj, _, err := second.s.GetStore().GetByKey(ns1 + "/pod-0")
	must(t, err)
	if got := obj.(*corev1.Pod).Labels[appLabel]; got != "newer" {
		t.Fatalf("pod-0 has label %q, want the newer record kept", got)
	}
}

func mustBuild(t *testing.T, version string) [32]byte {
	t.Helper()
	b, err := Snapshot{Version: version}.buildHash()
	must(t, err)
	return b
}

func TestSnapshotUnusableFilesAreDiscardedLoggedAndTheInformerListsCold(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spoil  func(t *testing.T, path string)
		cfg    Snapshot
		reason string
	}{
		{name: "truncated", reason: discardChecksum, spoil: func(t *testing.T, path string) {
			b, err := os.ReadFile(path)
			must(t, err)
			must(t, os.WriteFile(path, b[:len(b)*2/3], 0o600))
		}},
		{name: "flipped byte", reason: discardChecksum, spoil: func(t *testing.T, path string) {
			b, err := os.ReadFile(path)
			must(t, err)
			b[len(b)/2] ^= 0x10
			must(t, os.WriteFile(path, b, 0o600))
		}},
		{name: "header only", reason: discardTruncated, spoil: func(t *testing.T, path string) {
			must(t, os.WriteFile(path, []byte(snapshotMagic), 0o600))
		}},
		{name: "other identity", reason: discardIdentity, cfg: Snapshot{Identity: "pods in another namespace"}},
		{name: "other build", reason: discardBuild, cfg: Snapshot{Version: "next"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newSnapshotServer()
			populate(srv, 4)
			dir := t.TempDir()
			writeFirstSnapshot(t, srv, dir, Snapshot{Name: podSnapshotName})
			if tc.spoil != nil {
				tc.spoil(t, filepath.Join(dir, podSnapshotName))
			}
			changeWhileStopped(srv)
			listsBefore := len(srv.RequestsOf(informertest.VerbList))
			cfg := tc.cfg
			cfg.Name = podSnapshotName
			second := runSnapshotInformer(t, srv, dir, cfg)
			want := srv.state()
			equalStrings(t, "store after a cold start", storeState(second.s), want)
			rep, _ := second.s.startReport()
			if rep != (startReport{Start: startDiscarded, Reason: tc.reason}) {
				t.Fatalf("start report = %+v, want discarded (%s)", rep, tc.reason)
			}
			if got := second.logs.with("snapshot discarded"); len(got) != 1 || !strings.Contains(got[0], tc.reason) {
				t.Fatalf("discard log lines = %q, want one naming %q", got, tc.reason)
			}
			lists := srv.RequestsOf(informertest.VerbList)[listsBefore:]
			if len(lists) == 0 || lists[0].Limit == 1 {
				t.Fatalf("LIST requests = %+v, want a full list", lists)
			}
			eventually(t, 5*time.Second, "one add per object", func() bool { return second.rec.count() >= len(want) })
			equalStrings(t, "handler calls", sortedEvents(second.rec), initialAdds(want))
		})
	}
}

func TestSnapshotWriteCutShortLeavesThePreviousSnapshot(t *testing.T) {
	srv := newSnapshotServer()
	populate(srv, 4)
	dir := t.TempDir()
	writeFirstSnapshot(t, srv, dir, Snapshot{Name: podSnapshotName})
	// A later write killed half way: its temporary file holds half a
	// snapshot; the file itself is the previous complete one.
	full, err := os.ReadFile(filepath.Join(dir, podSnapshotName))
	must(t, err)
	temp := filepath.Join(dir, podSnapshotName+snapshotTempInfix+"12345")
	must(t, os.WriteFile(temp, full[:len(full)/2], 0o600))
	changeWhileStopped(srv)
	second := runSnapshotInformer(t, srv, dir, Snapshot{Name: podSnapshotName})
	equalStrings(t, "store", storeState(second.s), srv.state())
	if rep, _ := second.s.startReport(); rep.Start != startResumed || rep.Loaded != 4 {
		t.Fatalf("start report = %+v, want resumed from the previous snapshot's 4 objects", rep)
	}
	if _, err := os.Stat(temp); !os.IsNotExist(err) {
		t.Fatalf("the cut-short temporary file is still there: %v", err)
	}
}

func TestSnapshotFilesAreWrittenWithPrivateModes(t *testing.T) {
	srv := newSnapshotServer()
	populate(srv, 2)
	dir := filepath.Join(t.TempDir(), "snapshots")
	writeFirstSnapshot(t, srv, dir, Snapshot{Name: podSnapshotName})
	for path, want := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, filepath.Join(dir, podSnapshotName): 0o600} {
		st, err := os.Stat(path)
		must(t, err)
		if st.Mode() != want {
			t.Errorf("%s: mode %v, want %v", path, st.Mode(), want)
		}
	}
	entries, err := os.ReadDir(dir)
	must(t, err)
	if len(entries) != 1 {
		t.Fatalf("dir holds %d entries, want only the snapshot", len(entries))
	}
}

func TestSnapshotOffWithoutCompactStorageLogsOnceAndWritesNothing(t *testing.T) {
	srv := newSnapshotServer()
	populate(srv, 2)
	dir := t.TempDir()
	logs := &logLines{}
	s := newPodInformer(srv, Options{Metrics: NewMetrics(), Logger: logs.logger(),
		Snapshot: Snapshot{Dir: dir, Name: podSnapshotName, Identity: "pods", Version: "test"}})
	run := startInformer(t, s)
	eventually(t, 5*time.Second, "sync", s.HasSynced)
	run.stop(t)
	if got := logs.with("snapshots are off"); len(got) != 1 {
		t.Fatalf("log lines saying snapshots are off: %q", got)
	}
	entries, err := os.ReadDir(dir)
	must(t, err)
	if len(entries) != 0 {
		t.Fatalf("a decoded informer wrote %d files", len(entries))
	}
}

func TestSnapshotWriterSkipsARoundWithARecordHeldDecoded(t *testing.T) {
	srv := newSnapshotServer()
	populate(srv, 2)
	dir := t.TempDir()
	logs := &logLines{}
	s := newPodInformer(srv, Options{StorageCodec: podCodec(t), Metrics: NewMetrics(), Logger: logs.logger(),
		Snapshot: Snapshot{Dir: dir, Name: podSnapshotName, Identity: "pods", Version: "test"}})
	run := startInformer(t, s)
	eventually(t, 5*time.Second, "sync", s.HasSynced)
	// HasSynced can come before the DeltaFIFO records its drained RV, and a
	// write without it is skipped for that reason, not the decoded record.
	eventuallyDrainedAt(t, s, srv.ResourceVersion())
	// A record the codec refused is held decoded (here: put there directly).
	b := s.indexer.beginBatch(1)
	_, _, _ = b.write("ns1/decoded", &corev1.Pod{}, prepared{obj: &corev1.Pod{}, vals: s.indexer.table.Load().funcs.compute(&corev1.Pod{})})
	b.commit()
	w, _ := s.snapshotSetup()
	s.writeSnapshot(t.Context(), w, snapshotPace{})
	s.writeSnapshot(t.Context(), w, snapshotPace{})
	if got := logs.with("held decoded"); len(got) != 1 {
		t.Fatalf("log lines of the skipped writes: %q, want one", got)
	}
	entries, err := os.ReadDir(dir)
	must(t, err)
	if len(entries) != 0 {
		t.Fatalf("%d files written with a record held decoded", len(entries))
	}
	run.stop(t)
}

func TestSnapshotWrittenEveryIntervalAtTheDrainedRVAndCounted(t *testing.T) {
	srv := newSnapshotServer()
	populate(srv, 3)
	dir := t.TempDir()
	fc := clocktesting.NewFakeClock(time.Now())
	m, reg := newMetricsRegistry(t)
	cfg := Snapshot{Dir: dir, Name: podSnapshotName, Identity: "pods", Version: "test", Interval: time.Minute}
	s := newPodInformer(srv, Options{StorageCodec: podCodec(t), Metrics: m, Clock: fc, Snapshot: cfg})
	run := startInformer(t, s)
	eventually(t, 5*time.Second, "sync", s.HasSynced)
	if _, err := os.Stat(filepath.Join(dir, podSnapshotName)); !os.IsNotExist(err) {
		t.Fatalf("a snapshot was written before its interval passed: %v", err)
	}
	written := func() float64 { return gathered(t, reg, podLabels)["deltacache_snapshot_writes_total{result=written}"] }
	tick := func(want float64) {
		t.Helper()
		eventually(t, 5*time.Second, "a write per interval", func() bool {
			if written() >= want {
				return true
			}
			fc.Step(time.Minute / 10) // the ticker may not exist yet: step until it fires
			return false
		})
	}
	tick(1)
	header := func() *snapshotHeader {
		h, _, err := readSnapshotFile(dir, podSnapshotName, cfg.identityHash(), mustBuild(t, "test"))
		must(t, err)
		return h
	}
	if got, want := header().resourceVersion, srv.ResourceVersion(); got != want {
		t.Fatalf("snapshot RV = %s, want the server's %s", got, want)
	}
	srv.createPod("pod-later", "uid-later")
	eventually(t, 5*time.Second, "the new pod stored", func() bool { return len(s.GetStore().List()) == 4 })
	eventuallyDrainedAt(t, s, srv.ResourceVersion())
	tick(2)
	if got, want := header(), srv.ResourceVersion(); got.resourceVersion != want || got.records != 4 {
		t.Fatalf("second snapshot: RV %s with %d records, want %s with 4", got.resourceVersion, got.records, want)
	}
	series := gathered(t, reg, podLabels)
	if series["deltacache_informer_starts_total{reason=,start=cold}"] != 1 || series["deltacache_snapshot_written_bytes_total"] <= 0 {
		t.Fatalf("start and bytes series: %v", series)
	}
	run.stop(t)
}

func TestSnapshotOfAShardedInformerResumesAndDiffsWithinItsShard(t *testing.T) {
	for _, compact := range []bool{false, true} {
		t.Run(fmt.Sprintf("410=%t", compact), func(t *testing.T) {
			srv := newSnapshotServer()
			populate(srv, 40)
			dir := t.TempDir()
			cfg := Snapshot{Dir: dir, Name: podSnapshotName, Identity: "pods lower half", Version: "test",
				ListMetadata: srv.listMetadata, Get: srv.get}
			start := func() (*SharedIndexInformer, *informerRun) {
				s := newPodInformer(srv, Options{StorageCodec: podCodec(t), Metrics: NewMetrics(), DisableWatchList: true,
					ShardSelector: lowerHalf, Snapshot: cfg})
				run := startInformer(t, s)
				eventually(t, 10*time.Second, "sync", s.HasSynced)
				return s, run
			}
			inShard := func() []string { return inShardOf(srv, lowerHalf) }
			first, firstRun := start()
			equalStrings(t, "first store", storeState(first), inShard())
			firstRun.stop(t) // its snapshot holds its shard only
			changeWhileStopped(srv)
			if compact {
				srv.Compact()
			}
			second, _ := start()
			equalStrings(t, "store after a warm start", storeState(second), inShard())
			rep, _ := second.startReport()
			want := startResumed
			if compact {
				want = startDiffed
			}
			if rep.Start != want || rep.Loaded != len(storeState(first)) {
				t.Fatalf("start report = %+v, want %s with %d loaded", rep, want, len(storeState(first)))
			}
		})
	}
}

// eventuallyDrainedAt waits until the informer's DeltaFIFO has recorded rv as
// drained: HasSynced can come first, and a snapshot write skips until then.
func eventuallyDrainedAt(t *testing.T, s *SharedIndexInformer, rv string) {
	t.Helper()
	eventually(t, 5*time.Second, "the DeltaFIFO drained at "+rv, func() bool {
		got := s.fifo.drainedRV.Load()
		return got != nil && *got == rv
	})
}
