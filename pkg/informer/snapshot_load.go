package informer

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
)

// snapshotSetup returns the informer's snapshot writer state and the
// Reflector's snapshot source; nil, nil when snapshots are off, or cannot
// be used (no compact storage: logged once). The build identity (a hash of
// the executable) is computed later, by the Reflector's load and the
// writer, off the informer's lock.
func (s *SharedIndexInformer) snapshotSetup() (*snapshotWriter, *snapshotSource) {
	cfg := s.opts.Snapshot
	if !cfg.enabled() {
		return nil, nil
	}
	if s.opts.StorageCodec == nil {
		s.log.Info("snapshots are off for this informer: its objects are held decoded (no StorageCodec)", "dir", cfg.Dir)
		return nil, nil
	}
	name := cfg.Name
	if name == "" {
		name = s.name
	}
	w := &snapshotWriter{cfg: cfg, name: snapshotFileName(name), identity: cfg.identityHash()}
	src := &snapshotSource{cfg: cfg, keyOf: s.fifo.KeyOf, load: func(shard *ShardSelector) (*warmSnapshot, error) {
		return s.loadSnapshot(w, shard)
	}}
	return w, src
}

// loadSnapshot reads the informer's snapshot file and starts decoding its
// records into the staging set (see snapshot_resume.go) on other
// goroutines, so that the Reflector opens its catch-up watch meanwhile
// (warmSnapshot.wait waits for them). It returns nil, nil when there is no
// file, and a *snapshotDiscard when it cannot be used, which includes a
// snapshot complete for another shard selector than shard, the Reflector's
// (its resume would miss the objects of the slots it did not hold). Writes
// that were cut short (a process killed while writing) left temporary
// files, removed here: the file itself is then the previous complete one.
func (s *SharedIndexInformer) loadSnapshot(w *snapshotWriter, shard *ShardSelector) (*warmSnapshot, error) {
	removeSnapshotTemps(w.cfg.Dir, w.name)
	build, err := w.cfg.buildHash()
	if err != nil {
		return nil, &snapshotDiscard{reason: discardNoBuild, err: err}
	}
	h, recs, err := readSnapshotFile(w.cfg.Dir, w.name, w.identity, build)
	if err != nil || h == nil {
		return nil, err
	}
	if h.shard != shardHash(shard) {
		return nil, &snapshotDiscard{reason: discardShard, err: fmt.Errorf("the informer's shard is %q", shard.String())}
	}
	if err := s.indexer.restoreCodecState(h.codecState); err != nil {
		return nil, &snapshotDiscard{reason: discardCodecState, err: err}
	}
	ws := &warmSnapshot{header: h, records: len(recs), restored: make(chan struct{})}
	go func() {
		defer close(ws.restored)
		restored, err := s.indexer.restoreAll(recs)
		if err != nil {
			ws.restoreErr = &snapshotDiscard{reason: discardCorrupt, err: err}
			return
		}
		objs := make(map[string]any, len(restored))
		for i, e := range restored {
			objs[e.key] = e
			restored[i] = nil
		}
		ws.objs = objs
	}()
	return ws, nil
}

// restoreCodecState gives the codec the state a snapshot carries, before any
// of its records is decoded. A snapshot with a state for a codec that is not
// a StatefulCodec (another codec wrote it) is refused.
func (ix *Indexer) restoreCodecState(state []byte) error {
	sc, ok := ix.codec.(StatefulCodec)
	switch {
	case ok && state != nil:
		return sc.RestoreState(state)
	case state != nil:
		return fmt.Errorf("a state of %d bytes for %T, which keeps none", len(state), ix.codec)
	}
	return nil
}

// restoreAll runs restoreEncoded on every record, on GOMAXPROCS goroutines
// (each record is decoded once: most of a warm start's CPU), and returns the
// results in the records' order, or the first error met. It clears recs.
func (ix *Indexer) restoreAll(recs []snapshotRecord) ([]*queuedItem, error) {
	out := make([]*queuedItem, len(recs))
	var copies valueCopies
	workers := max(1, min(runtime.GOMAXPROCS(0), len(recs)/restoreChunk))
	var next atomic.Int64
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for failed.Load() == nil {
				from := int(next.Add(restoreChunk)) - restoreChunk
				if from >= len(recs) {
					return
				}
				for i := from; i < min(from+restoreChunk, len(recs)); i++ {
					e, err := ix.restoreEncoded(recs[i].key, recs[i].data, &copies)
					if err != nil {
						failed.CompareAndSwap(nil, &err)
						return
					}
					out[i] = e
					recs[i] = snapshotRecord{}
				}
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		return nil, *err
	}
	return out, nil
}

// restoreChunk is how many records a restoreAll worker takes at a time.
const restoreChunk = 256

// restoreEncoded returns what the DeltaFIFO queues for a listed object, from
// a snapshot record: the stored bytes as they are, and the key,
// resourceVersion, uid, namespace, label print and index values of the
// decoded object (the index functions are the user's: they are run, not
// trusted from the file). The decoded object is let go: the index values are
// copies (copies), and so are the resourceVersion, namespace and uid, which
// the Reflector and the DeltaFIFO keep for a while.
func (ix *Indexer) restoreEncoded(key string, data []byte, copies *valueCopies) (*queuedItem, error) {
	obj, err := ix.codec.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("record %s: %w", key, err)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("record %s: %w", key, err)
	}
	if k, err := ix.keyFunc(obj); err != nil || k != key {
		return nil, fmt.Errorf("record %s holds the object of key %q (%v)", key, k, err)
	}
	vals := ix.table.Load().funcs.compute(obj)
	copies.detach(vals)
	return &queuedItem{key: key, rv: strings.Clone(m.GetResourceVersion()), data: data, vals: vals,
		namespace: copies.of(m.GetNamespace()), uid: types.UID(strings.Clone(string(m.GetUID()))),
		print: printOfLabels(m.GetLabels())}, nil
}
