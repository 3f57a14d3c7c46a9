package informer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// Background index changes: BuildIndex adds an index and RemoveIndex drops
// one while an informer writes to the store, holding the writer mutex only
// for a short catch-up. AddIndexers, by contrast, computes every value under
// the writer mutex.
//
// A rebuild goes in three steps:
//
//  1. Under the writer mutex: take the current table t0 as the snapshot and
//     start a changeLog, in which every later write notes its key (the
//     writer calls changeLog.note from writeBatch.write and take; Replace
//     and AddIndexers mark it reset).
//  2. Without any lock: build a private table of t0's records with the new
//     index functions (for BuildIndex: the new index's values, decoding
//     compact records with BuildIndexOptions.objectOf), its segments and its
//     indexes. Then catch-up rounds: take the keys noted so far (a moment
//     under the writer mutex) and redo them from the current table, until
//     few are left.
//  3. Under the writer mutex: redo the last keys noted, give the private
//     table the current RV and publish it. Readers see the change, complete,
//     from that instant on, as with AddIndexers.
//
// A Replace or AddIndexers during a rebuild changes every record or the
// index functions: the rebuild starts again from step 1 (at most
// maxRebuildAttempts times). Rebuilds of one Indexer run one at a time.

// BuildIndexOptions configure Indexer.BuildIndex; the zero value decodes
// compact records in full and files every value.
type BuildIndexOptions struct {
	// Observe gets the new index's values of each stored object as the
	// build computes them (from one goroutine; not for the objects the
	// catch-up redoes); an error abandons the build (BuildIndex returns it,
	// the store unchanged), e.g. for values unique per object.
	Observe func(values []string) error
	// LabelsOnly: fn reads only an object's namespace, name and labels, so
	// with a LabelReader codec each compact record is given to fn as a
	// *metav1.PartialObjectMetadata of those three, without a decode.
	LabelsOnly bool
	// objectOf returns the object the index function runs on for a record
	// held encoded, stored under key, during the build (the writer computes
	// the values of later writes from the objects it receives, as for every
	// index): a reader cheaper than a full decode, safe for concurrent use
	// (the tests gate builds with it). An error leaves the object unfiled
	// and is returned by BuildIndex. nil: the Indexer's codec decodes (or
	// reads labels, see LabelsOnly).
	objectOf func(key string, data []byte) (any, error)
}

// maxRebuildAttempts is how often a rebuild starts again after a Replace or
// AddIndexers invalidated it before it gives up.
const maxRebuildAttempts = 3

// catchUpRounds is the most catch-up rounds a rebuild runs without the
// writer mutex; finalCatchUp is the number of noted keys at or under which
// it redoes them under the mutex and publishes at once.
const (
	catchUpRounds = 8
	finalCatchUp  = 64
)

// changeLog is the set of keys written since a rebuild's snapshot (guarded
// by the writer mutex). reset: the whole content or the index functions
// changed (Replace, AddIndexers).
type changeLog struct {
	keys  map[string]struct{}
	reset bool
}

// note records that key was written; a nil log (no rebuild running) is a
// no-op, the writer's only cost.
func (l *changeLog) note(key string) {
	if l != nil {
		l.keys[key] = struct{}{}
	}
}

// invalidate marks l reset; nil is a no-op.
func (l *changeLog) invalidate() {
	if l != nil {
		l.reset = true
	}
}

// tableChange turns records filed for the index functions from into records
// filed for to.
type tableChange struct {
	from, to *indexFuncs
	// vals returns r's values for every index of to, and for BuildIndex the
	// new index's values (for Observe) and the error of computing them.
	vals func(key string, r *record) (v indexValues, added []string, err error)
}

// BuildIndex adds the index name, computed by fn, and files every stored
// object in it; readers never block, the writer only for a catch-up of the
// writes made meanwhile. Readers see the complete index from one instant on
// (ByIndex errors before), and it then behaves as one given to AddIndexers.
// It returns an error, the store unchanged, when name exists, ctx ends,
// opts.Observe abandons, or the store was replaced (Replace, AddIndexers)
// during 3 builds in a row; errors of fn on stored objects come after the
// index was added (those objects unfiled), as in AddIndexers.
func (ix *Indexer) BuildIndex(ctx context.Context, name string, fn toolscache.IndexFunc, opts BuildIndexOptions) error {
	objectOf := opts.objectOf
	if objectOf == nil {
		objectOf = ix.decode
		if lr, ok := ix.codec.(LabelReader); ok && opts.LabelsOnly {
			objectOf = labelsObjectOf(lr, ix.decode)
		}
	}
	return ix.rebuild(ctx, func(from *indexFuncs) (*tableChange, error) {
		return addChange(from, name, fn, objectOf, ix.scoped)
	}, opts.Observe)
}

// RemoveIndex drops the index name (any index) as BuildIndex adds one, with
// the same errors (no such index, ctx, a store replaced again and again);
// readers see the index until one instant, not after.
func (ix *Indexer) RemoveIndex(ctx context.Context, name string) error {
	return ix.rebuild(ctx, func(from *indexFuncs) (*tableChange, error) {
		return removeChange(from, name)
	}, nil)
}

// addChange is the tableChange of BuildIndex.
func addChange(from *indexFuncs, name string, fn toolscache.IndexFunc,
	objectOf func(string, []byte) (any, error), scoped func(string) bool) (*tableChange, error) {
	if _, ok := slices.BinarySearch(from.names, name); ok {
		return nil, fmt.Errorf("indexer conflict: [%s]", name)
	}
	all := indexersOf(from)
	all[name] = fn
	to := newIndexFuncs(all, from.scopedOr(scoped), from.nsKeys)
	pos, _ := slices.BinarySearch(to.names, name)
	var copies valueCopies
	return &tableChange{from: from, to: to, vals: func(key string, r *record) (indexValues, []string, error) {
		v := indexValues{funcs: to, values: make([][]string, len(to.names))}
		for i := range to.names {
			switch {
			case to.keyed[i]: // not kept in records
			case i < pos:
				v.values[i] = from.storedFiled(r, i)
			case i > pos:
				v.values[i] = from.storedFiled(r, i-1)
			}
		}
		obj := r.obj
		if r.data != nil {
			var err error
			if obj, err = objectOf(key, r.data); err != nil {
				return v, nil, fmt.Errorf("index %q of key %q: %w", name, key, err)
			}
		}
		added, err := fn(obj)
		if err != nil {
			return v, nil, fmt.Errorf("index %q of key %q: %w", name, key, err)
		}
		if r.data != nil {
			copies.detachAll(added) // decoded from the record: see valueCopies
		}
		if len(added) > 0 {
			v.values[pos] = added
		}
		return v, added, nil
	}}, nil
}

// removeChange is the tableChange of RemoveIndex.
func removeChange(from *indexFuncs, name string) (*tableChange, error) {
	pos, ok := slices.BinarySearch(from.names, name)
	if !ok {
		return nil, errNoIndex(name)
	}
	all := indexersOf(from)
	delete(all, name)
	to := newIndexFuncs(all, from.scopedOr(nil), from.nsKeys)
	return &tableChange{from: from, to: to, vals: func(_ string, r *record) (indexValues, []string, error) {
		v := indexValues{funcs: to, values: make([][]string, len(to.names))}
		for i := range to.names {
			if to.keyed[i] {
				continue // not kept in records
			}
			if i < pos {
				v.values[i] = from.storedFiled(r, i)
			} else {
				v.values[i] = from.storedFiled(r, i+1)
			}
		}
		return v, nil, nil
	}}, nil
}

// errStoreReplaced ends a rebuild whose snapshot a Replace or AddIndexers
// invalidated maxRebuildAttempts times in a row.
var errStoreReplaced = errors.New("the store was replaced or re-indexed during every attempt")

// rebuild applies the change mk makes for the current index functions as
// the comment at the top of this file describes.
func (ix *Indexer) rebuild(ctx context.Context, mk func(from *indexFuncs) (*tableChange, error),
	observe func([]string) error) error {
	ix.rebuildMu.Lock()
	defer ix.rebuildMu.Unlock()
	for range maxRebuildAttempts {
		ix.writeMu.Lock()
		t0 := ix.table.Load()
		ch, err := mk(t0.funcs)
		if err != nil {
			ix.writeMu.Unlock()
			return err
		}
		log := &changeLog{keys: map[string]struct{}{}}
		ix.changes = log
		ix.writeMu.Unlock()

		rb := &rebuildState{ix: ix, ch: ch, errs: map[string]error{}, ed: &edit{}}
		done, err := rb.run(ctx, t0, log, observe)
		if done || err != nil {
			return err
		}
	}
	return errStoreReplaced
}

// rebuildState is one attempt of a rebuild: its private table and the
// errors of the values computed so far, by key.
type rebuildState struct {
	ix   *Indexer
	ch   *tableChange
	next *segmentTable
	errs map[string]error
	// ed owns the catch-up's changes to next's indexes.
	ed *edit
}

// run builds from t0, catches up with log and publishes; done is false when
// the attempt was invalidated (start again). The change log is stopped on
// every return.
func (rb *rebuildState) run(ctx context.Context, t0 *segmentTable, log *changeLog,
	observe func([]string) error) (done bool, err error) {
	ix := rb.ix
	stop := func() {
		ix.writeMu.Lock()
		ix.changes = nil
		ix.writeMu.Unlock()
	}
	if err := rb.fill(ctx, t0, observe); err != nil {
		stop()
		return false, err
	}
	for round := 0; ; round++ {
		if err := ctx.Err(); err != nil {
			stop()
			return false, err
		}
		ix.writeMu.Lock()
		keys, reset := log.keys, log.reset
		log.keys = map[string]struct{}{}
		cur := ix.table.Load()
		if reset || cur.funcs != rb.ch.from {
			ix.changes = nil
			ix.writeMu.Unlock()
			return false, nil
		}
		if len(keys) <= finalCatchUp || round >= catchUpRounds {
			rb.apply(cur, keys)
			rb.publish(cur)
			ix.changes = nil
			ix.writeMu.Unlock()
			return true, rb.err()
		}
		ix.writeMu.Unlock()
		// Outside the mutex: a key written again meanwhile is noted again.
		rb.apply(ix.table.Load(), keys)
	}
}

// fill builds rb.next from t0's records (no lock held).
func (rb *rebuildState) fill(ctx context.Context, t0 *segmentTable, observe func([]string) error) error {
	next := newSegmentTable(rb.ch.to, int(t0.size.Load()), "")
	n := 0
	for i := range t0.segments {
		for _, se := range t0.segments[i].Load().slots {
			r := se.e.rec.Load()
			if r == nil {
				continue // deleted meanwhile: noted
			}
			v, added, err := rb.ch.vals(se.e.key, r)
			if err != nil {
				rb.errs[se.e.key] = err
			}
			if observe != nil {
				if err := observe(added); err != nil {
					return err
				}
			}
			rec, _ := newRecord(r.obj, r.data, nil, v, nil)
			next.fill(se.e.key, rec, labelPrint(se.e.print.Load()))
			if n++; n%256 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
		}
	}
	next.sortSegments()
	next.indexAll()
	rb.next = next
	return nil
}

// apply redoes keys in rb.next from their records in cur (none: deleted).
// If cur's index functions are not the change's, it does nothing: the
// caller's next round starts the rebuild again.
func (rb *rebuildState) apply(cur *segmentTable, keys map[string]struct{}) {
	if cur.funcs != rb.ch.from {
		return
	}
	for key := range keys {
		var r *record
		var print labelPrint
		if e := cur.cellOf(key); e != nil {
			print = labelPrint(e.print.Load())
			r = e.rec.Load()
		}
		if r == nil {
			rb.next.removePrivate(key, rb.ed)
			delete(rb.errs, key)
			continue
		}
		v, _, err := rb.ch.vals(key, r)
		if err != nil {
			rb.errs[key] = err
		} else {
			delete(rb.errs, key)
		}
		rec, _ := newRecord(r.obj, r.data, nil, v, nil)
		rb.next.putPrivate(key, rec, print, rb.ed)
	}
}

// publish makes rb.next the Indexer's table with cur's RV (writer mutex
// held).
func (rb *rebuildState) publish(cur *segmentTable) {
	rb.ed.trim()
	rb.next.rv.Store(cur.rv.Load())
	rb.ix.table.Store(rb.next)
}

// err joins the errors of the values filed, in key order.
func (rb *rebuildState) err() error {
	keys := slices.Sorted(maps.Keys(rb.errs))
	errs := make([]error, 0, len(keys))
	for _, key := range keys {
		errs = append(errs, rb.errs[key])
	}
	return errors.Join(errs...)
}

// putPrivate stores rec under key in t, which no reader sees yet, changing
// its segments and indexes in place (index nodes under ed).
func (t *segmentTable) putPrivate(key string, rec *record, print labelPrint, ed *edit) {
	h := keyHash(key)
	slot := t.segmentOf(h)
	s := slot.Load()
	var e *cell
	var old *record
	if i, ok := s.search(h, key); ok {
		e = s.slots[i].e
		old = e.rec.Load()
	} else {
		e = &cell{key: key}
		if s == emptySegment {
			s = &segment{}
			slot.Store(s)
		}
		s.slots = append(s.slots, segmentSlot{hash: h, e: e})
		t.size.Add(1)
	}
	e.print.Store(uint64(print))
	e.rec.Store(rec)
	t.account(old, rec)
	t.refilePrivate(e, old, rec, ed)
}

// removePrivate deletes key from t, which no reader sees yet.
func (t *segmentTable) removePrivate(key string, ed *edit) {
	h := keyHash(key)
	slot := t.segmentOf(h)
	s := slot.Load()
	i, ok := s.search(h, key)
	if !ok {
		return
	}
	e := s.slots[i].e
	old := e.rec.Load()
	e.rec.Store(nil)
	s.slots = slices.Delete(s.slots, i, i+1)
	t.size.Add(-1)
	t.account(old, nil)
	t.refilePrivate(e, old, nil, ed)
}

// refilePrivate moves e in t's indexes from old's values to rec's, in place.
func (t *segmentTable) refilePrivate(e *cell, old, rec *record, ed *edit) {
	t.funcs.refileCell(ed, t.indices.Load().byName, e, old, rec)
}

// IndexStats returns the index name's number of distinct values and of
// (value, object) entries as stored, ok false if there is no such index.
func (ix *Indexer) IndexStats(name string) (values, entries int, ok bool) {
	_, idx, ok := ix.table.Load().index(name)
	if !ok {
		return 0, 0, false
	}
	idx.each(func(_ indexValue, b bucket) bool {
		entries += b.Len()
		return true
	})
	return idx.Len(), entries, true
}

// IndexCount returns how many objects are filed under value in the index name
// (0 if none) without reading them: an upper bound while a write moving an
// object between values is in flight ("<ns>/<v>" of a scoped index: v's in ns).
func (ix *Indexer) IndexCount(name, value string) int {
	t := ix.table.Load()
	i, idx, ok := t.index(name)
	if !ok {
		return 0
	}
	l, ok := t.funcs.lookupOf(i, value)
	if !ok {
		return 0
	}
	b, _ := idx.get(indexValue(l.value))
	if l.namespace == "" {
		return b.Len()
	}
	n := 0
	b.each(func(e *cell) bool {
		if inNamespace(e.key, l.namespace) {
			n++
		}
		return true
	})
	return n
}

// labelsObjectOf returns an objectOf that reads a record's labels with lr
// into a PartialObjectMetadata named after its key, and decodes with decode
// the records whose labels lr cannot read.
func labelsObjectOf(lr LabelReader, decode func(key string, data []byte) (any, error)) func(string, []byte) (any, error) {
	return func(key string, data []byte) (any, error) {
		pairs, err := lr.AppendLabels(nil, data)
		if err != nil {
			return decode(key, data)
		}
		namespace, name, err := toolscache.SplitMetaNamespaceKey(key)
		if err != nil {
			return decode(key, data)
		}
		var set map[string]string
		if len(pairs) > 0 {
			set = make(map[string]string, len(pairs)/2)
			for i := 0; i+1 < len(pairs); i += 2 { // a later pair of a key wins
				set[strings.Clone(pairs[i])] = strings.Clone(pairs[i+1])
			}
		}
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: set}}, nil
	}
}
