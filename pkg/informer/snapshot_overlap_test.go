package informer

import (
	"errors"
	"testing"
	"time"

	"github.com/deltacache/deltacache/pkg/informer/informertest"
)

// gatedCodec is a StorageCodec whose Decode waits for release once closed
// (nil: never waits), and fails when fail is set.
type gatedCodec struct {
	StorageCodec
	release chan struct{}
	fail    bool
}

func (c *gatedCodec) Decode(data []byte) (any, error) {
	if c.release != nil {
		<-c.release
	}
	if c.fail {
		return nil, errors.New("gated codec: cannot decode")
	}
	return c.StorageCodec.Decode(data)
}

// startGated starts a snapshotting pod informer on srv with codec (not
// waiting for it to sync).
func startGated(t *testing.T, srv *snapshotServer, dir string, codec StorageCodec) (*informerRun, *logLines) {
	t.Helper()
	logs := &logLines{}
	cfg := Snapshot{Dir: dir, Name: podSnapshotName, Identity: "pods", Version: "test",
		ListMetadata: srv.listMetadata, Get: srv.get}
	s := newPodInformer(srv, Options{StorageCodec: codec, Snapshot: cfg, Logger: logs.logger(), Metrics: NewMetrics(),
		DisableWatchList: true})
	return startInformer(t, s), logs
}

// The catch-up watch opens while the snapshot's records are still being
// decoded: the two overlap, and the store is the server's once both end.
func TestSnapshotCatchUpWatchOpensWhileTheRecordsDecode(t *testing.T) {
	srv := newSnapshotServer()
	populate(srv, 600)
	dir := t.TempDir()
	writeFirstSnapshot(t, srv, dir, Snapshot{Name: podSnapshotName})
	changeWhileStopped(srv)
	watchesBefore := len(srv.RequestsOf(informertest.VerbWatch))

	gate := &gatedCodec{StorageCodec: podCodec(t).StorageCodec, release: make(chan struct{})}
	run, _ := startGated(t, srv, dir, gate)
	eventually(t, 10*time.Second, "a catch-up watch opened while no record is decoded", func() bool {
		return len(srv.RequestsOf(informertest.VerbWatch)) > watchesBefore
	})
	if run.s.HasSynced() {
		t.Fatal("synced before the snapshot's records were decoded")
	}
	close(gate.release)
	eventually(t, 10*time.Second, "informer to sync", run.s.HasSynced)
	equalStrings(t, "store after the warm start", storeState(run.s), srv.state())
	if rep, ok := run.s.startReport(); !ok || rep.Start != startResumed || rep.Loaded != 600 {
		t.Fatalf("start report %+v (ok %v), want resumed with 600 loaded", rep, ok)
	}
}

// Records that do not decode (the file itself sound) are found once the
// watch has opened: the snapshot is discarded as corrupt, logged, and the
// informer lists cold.
func TestSnapshotWhoseRecordsDoNotDecodeIsDiscardedAfterTheWatchOpened(t *testing.T) {
	srv := newSnapshotServer()
	populate(srv, 20)
	dir := t.TempDir()
	writeFirstSnapshot(t, srv, dir, Snapshot{Name: podSnapshotName})
	changeWhileStopped(srv)

	run, logs := startGated(t, srv, dir, &gatedCodec{StorageCodec: podCodec(t).StorageCodec, fail: true})
	eventually(t, 10*time.Second, "a start report", func() bool { _, ok := run.s.startReport(); return ok })
	if rep, _ := run.s.startReport(); rep != (startReport{Start: startDiscarded, Reason: discardCorrupt}) {
		t.Fatalf("start report %+v, want discarded as corrupt", rep)
	}
	if got := logs.with("snapshot discarded; starting cold", discardCorrupt); len(got) != 1 {
		t.Fatalf("discard log lines %q, want one", got)
	}
}
