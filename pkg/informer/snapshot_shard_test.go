package informer

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// A snapshot holds the shard selector its records are complete for: an
// informer with another selector discards it ("other shard") and lists cold,
// since a resume would never bring back the objects of the slots it did not
// hold; one with the same selector resumes it.
func TestSnapshotOfAnotherShardIsDiscardedAndOfTheSameResumed(t *testing.T) {
	srv := newSnapshotServer()
	populate(srv, 40)
	dir := t.TempDir()
	cfg := Snapshot{Dir: dir, Name: podSnapshotName, Identity: "pods", Version: "test",
		ListMetadata: srv.listMetadata, Get: srv.get}
	start := func(sel *ShardSelector) (*SharedIndexInformer, *informerRun, *logLines) {
		logs := &logLines{}
		s := newPodInformer(srv, Options{StorageCodec: podCodec(t), Metrics: NewMetrics(), DisableWatchList: true,
			ShardSelector: sel, Snapshot: cfg, Logger: logs.logger()})
		run := startInformer(t, s)
		eventually(t, 10*time.Second, "sync", s.HasSynced)
		return s, run, logs
	}
	_, run, _ := start(lowerHalf)
	run.stop(t) // its snapshot: the lower half, complete
	for _, tc := range []struct {
		name string
		sel  *ShardSelector
		want startReport
	}{
		// Each case resumes or discards the snapshot the one before wrote at its stop.
		{"the same half", lowerHalf, startReport{Start: startResumed, Loaded: len(inShardOf(srv, lowerHalf))}},
		{"whole hash space", nil, startReport{Start: startDiscarded, Reason: discardShard}},
		{"an empty shard", &ShardSelector{Field: ShardByUID}, startReport{Start: startDiscarded, Reason: discardShard}},
	} {
		s, run, logs := start(tc.sel)
		rep, _ := s.startReport()
		if rep != tc.want {
			t.Errorf("%s: start report %+v, want %+v", tc.name, rep, tc.want)
		}
		equalStrings(t, tc.name+": store", storeState(s), inShardOf(srv, tc.sel))
		if tc.want.Start == startDiscarded && len(logs.with("snapshot discarded; starting cold", discardShard)) != 1 {
			t.Errorf("%s: no discard log line naming the shard", tc.name)
		}
		run.stop(t) // writes its own snapshot: the next case's starting point
	}
}

// inShardOf renders the server's objects that sel selects (nil: all) as state does.
func inShardOf(srv *snapshotServer, sel *ShardSelector) []string {
	if sel == nil {
		return srv.state()
	}
	var out []string
	for _, o := range srv.Objects() {
		if sel.Matches(o) {
			out = append(out, uidRV(o))
		}
	}
	slices.Sort(out)
	return out
}

// While the shard selector has moved and the store has not applied the list
// of the new one, a write is skipped: its records are complete for neither.
func TestSnapshotWriteIsSkippedWhileTheShardMoves(t *testing.T) {
	srv := newSnapshotServer()
	populate(srv, 10)
	dir := t.TempDir()
	s := newPodInformer(srv, Options{StorageCodec: podCodec(t), Metrics: NewMetrics(), DisableWatchList: true,
		ShardSelector: lowerHalf, Snapshot: Snapshot{Dir: dir, Name: podSnapshotName, Identity: "pods", Version: "test"}})
	run := startInformer(t, s)
	defer run.stop(t)
	eventually(t, 10*time.Second, "sync", s.HasSynced)
	eventuallyDrainedAt(t, s, srv.ResourceVersion())
	w, _ := s.snapshotSetup()
	if _, _, err := s.writeSnapshotFile(t.Context(), w, snapshotPace{}); err != nil {
		t.Fatalf("a settled shard: %v", err)
	}
	// The selector moved (as SetShardSelector's first step) with its list not installed.
	s.shard.Store(&ShardSelector{Field: ShardByUID, Ranges: lowerHalf.Ranges[:0]})
	if _, _, err := s.writeSnapshotFile(t.Context(), w, snapshotPace{}); !errors.Is(err, errSnapshotShardMoving) {
		t.Fatalf("a moving shard: %v, want the write skipped", err)
	}
}
