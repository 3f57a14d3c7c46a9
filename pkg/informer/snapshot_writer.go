package informer

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// The snapshot writer: a goroutine of the informer that, once the informer
// synced, writes the store to its snapshot file every Snapshot.Interval and
// once more when the informer stops. It reads the store as any reader does
// (the segment table, without a lock): it never takes the DeltaFIFO's or the
// Indexer writer's mutex, so the pop loop and readers go on while it writes.

// Results of a snapshot write (the "result" label of
// deltacache_snapshot_writes_total).
const (
	snapshotResultWritten = "written"
	// snapshotResultSkipped: a record is held decoded (its codec refused it), the
	// store has no resourceVersion yet, or its shard selector is changing;
	// nothing was written this round.
	snapshotResultSkipped = "skipped"
	snapshotResultFailed  = "failed"
)

// errSnapshotDecodedRecord skips a write: a record is held decoded.
var errSnapshotDecodedRecord = errors.New("a record is held decoded (its codec refused it)")

// errSnapshotNoRV skips a write: the store has applied no resourceVersion yet.
var errSnapshotNoRV = errors.New("the store has no resourceVersion yet")

// errSnapshotShardMoving skips a write: the shard selector changed and the
// store has not applied the list of the new one yet (or it changed while the
// records were read), so the records are complete for no selector.
var errSnapshotShardMoving = errors.New("the shard selector is changing")

// snapshotWriter is an informer's writer state.
type snapshotWriter struct {
	cfg      Snapshot
	name     string
	identity [32]byte
	// loggedDecoded is set once a skip for a decoded record was logged.
	loggedDecoded atomic.Bool
}

// snapshotLoop writes the store every interval once synced, and once more,
// within snapshotStopTimeout, when ctx ends (if it synced).
func (s *SharedIndexInformer) snapshotLoop(ctx context.Context, w *snapshotWriter) {
	select {
	case <-s.fifo.Synced():
	case <-ctx.Done():
		if s.fifo.HasSynced() { // both were ready
			s.writeSnapshotAtStop(ctx, w)
		}
		return
	}
	t := s.clock.NewTicker(w.cfg.interval())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			s.writeSnapshotAtStop(ctx, w)
			return
		case <-t.C():
			s.writeSnapshot(ctx, w, periodicPace)
		}
	}
}

// writeSnapshotAtStop writes the store once more when the informer stops,
// within snapshotStopTimeout; the pop loop is ending too, and the store is
// read as it is then.
func (s *SharedIndexInformer) writeSnapshotAtStop(ctx context.Context, w *snapshotWriter) {
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), snapshotStopTimeout)
	defer cancel()
	s.writeSnapshot(stopCtx, w, snapshotPace{})
}

// writeSnapshot writes the store once, counts the result and logs failures
// (a skip for a decoded record once per informer).
func (s *SharedIndexInformer) writeSnapshot(ctx context.Context, w *snapshotWriter, pace snapshotPace) {
	start := s.clock.Now()
	n, records, err := s.writeSnapshotFile(ctx, w, pace)
	im := s.obs.Load()
	switch {
	case err == nil:
		im.snapshotWritten(n, s.clock.Since(start))
		s.log.V(1).Info("snapshot written", "records", records, "bytes", n,
			"seconds", s.clock.Since(start).Seconds())
	case errors.Is(err, errSnapshotDecodedRecord):
		im.snapshotResult(snapshotResultSkipped)
		if w.loggedDecoded.CompareAndSwap(false, true) {
			s.log.Info("snapshot not written: "+err.Error()+"; retried every interval", "dir", w.cfg.Dir)
		}
	case errors.Is(err, errSnapshotNoRV), errors.Is(err, errSnapshotShardMoving):
		im.snapshotResult(snapshotResultSkipped)
	default:
		im.snapshotResult(snapshotResultFailed)
		s.log.Error(err, "snapshot not written", "dir", w.cfg.Dir, "file", w.name)
	}
}

// writeSnapshotFile collects the store's records and writes them: the RV
// first (the DeltaFIFO's drained RV: every event up to it is applied, so
// every record read afterwards is at least as new), then the records
// (stored bytes are immutable: the file is written from them directly). The
// header names the shard selector the records are complete for: the current
// one, once the store has applied the list made with it (a write while a
// new shard's list is pending, or during which the selector changed, is
// skipped), because a resume replays only changes and would never bring
// back the objects of a shard gained.
func (s *SharedIndexInformer) writeSnapshotFile(ctx context.Context, w *snapshotWriter, pace snapshotPace) (int64, int, error) {
	sel, listRV, settled := s.settledShardList()
	if !settled {
		return 0, 0, errSnapshotShardMoving
	}
	rvp := s.fifo.drainedRV.Load()
	if rvp == nil || *rvp == "" {
		return 0, 0, errSnapshotNoRV
	}
	if rvOlder(*rvp, listRV) {
		return 0, 0, errSnapshotShardMoving
	}
	t := s.indexer.table.Load()
	recs := make([]snapshotRecord, 0, t.size.Load())
	var err error
	t.each(func(key string, r *record) bool {
		if r.data == nil {
			err = errSnapshotDecodedRecord
			return false
		}
		recs = append(recs, snapshotRecord{key: key, data: r.data})
		return true
	})
	if err != nil {
		return 0, 0, err
	}
	if s.shard.Load() != sel {
		return 0, 0, errSnapshotShardMoving
	}
	build, err := w.cfg.buildHash()
	if err != nil {
		return 0, 0, err
	}
	h := snapshotHeader{identity: w.identity, build: build, shard: shardHash(sel), written: time.Now(),
		resourceVersion: *rvp}
	if sc, ok := s.indexer.codec.(StatefulCodec); ok {
		// After the records were collected: the state covers each of them.
		h.codecState = sc.AppendState(nil)
	}
	n, err := writeSnapshotFile(ctx, w.cfg.Dir, w.name, h, recs, pace)
	return n, len(recs), err
}
