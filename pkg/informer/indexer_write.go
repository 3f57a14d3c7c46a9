package informer

import (
	"slices"

	toolscache "k8s.io/client-go/tools/cache"
)

// The Indexer's one write path. Every write of a key goes through a
// writeBatch: the pop loop applies the keys it pops together as one batch
// (beginBatch, or beginWholeBatch for a relist), and the toolscache.Store
// methods Add, Update, Delete and Bookmark are each a batch of one. So the
// refiling of index cells, the store's RV bookkeeping and the table's
// growth are written once, here. Replace and AddIndexers build a new table
// instead (Indexer.build, AddIndexers in indexer.go), and so do BuildIndex
// and RemoveIndex, which catch up with the keys write and take note in
// Indexer.changes (indexer_build.go).

// writeBatch is a group of Indexer writes that readers see at once: the
// informer applies the keys it pops together (the whole initial list, or
// the keys queued meanwhile) as one batch. It holds the writer mutex from
// beginBatch until commit.
//
// Copy-on-write happens once per batch instead of once per write: the
// segments an add or delete changes are copied once into private segments that
// later writes of the batch change in place, and the index tries are
// changed under one edit token, so each trie node is copied at most once.
// The private segments and indexes are published by commit. So the initial
// list of n objects costs about one allocation per object and index for
// the store's structure, instead of a path of trie nodes per write.
//
// What readers see before commit: an update of a stored key whose index
// values do not change is visible at once (its cell gets the new record);
// a deleted key disappears at once; added keys, and keys whose index values
// changed, appear in the indexes at commit (a moved key is missing from
// ByIndex of both values until then); commit publishes segment by segment, then
// the indexes, the size and the RV. The batch's own reads (get) see its
// writes. A batch of one (Add, Update, Delete) is thus visible, whole, when
// the method returns.
//
// A whole batch (beginWholeBatch; the informer applies a relist so) is seen
// all at once instead: nothing of it before commit, all of it after.
//
// The Indexer owns one writeBatch, which every batch reuses (the writer
// mutex lets only one be open), so that a batch of one allocates nothing
// beyond the store's own structure.
type writeBatch struct {
	ix *Indexer
	t  *segmentTable
	// whole: t is a private copy of the table (see beginWholeBatch).
	whole bool
	// ed owns the trie nodes the batch made; nil until a write refiles
	// (a whole batch: from the start). A new token per batch: nodes of a
	// published trie must never be owned by a later batch.
	ed *edit
	// idx is the private copy of t's indexes, nil until a write refiles.
	idx *indexSet
	// segments are the private copies of the segments changed, by slot.
	segments map[uint64]*segment
	added    int64
	rv       string
}

// reusedSegmentMap is the most private segments whose map a committed batch
// clears for the next one; a larger map (an initial list's batch) is let
// go, as clearing it would cost every later batch its capacity.
const reusedSegmentMap = 64

// Add stores obj under its key, replacing any previous object, and records
// its resourceVersion as the store's RV if newer. Errors: a
// toolscache.KeyError, or one naming a failing index (obj stored, unfiled).
func (ix *Indexer) Add(obj any) error {
	key, err := ix.keyFunc(obj)
	if err != nil {
		return toolscache.KeyError{Obj: obj, Err: err}
	}
	return ix.put(key, obj)
}

// Update is Add: the store does not distinguish between the two.
func (ix *Indexer) Update(obj any) error { return ix.Add(obj) }

// Delete removes the object with obj's key (obj may be a tombstone,
// toolscache.DeletedFinalStateUnknown, if the key function handles it) and
// records obj's resourceVersion as the store's RV if newer (not a
// tombstone's). Deleting an absent key is not an error.
func (ix *Indexer) Delete(obj any) error {
	key, err := ix.keyFunc(obj)
	if err != nil {
		return toolscache.KeyError{Obj: obj, Err: err}
	}
	b := ix.beginBatch(0)
	b.take(key)
	b.observeRV(obj)
	b.commit()
	return nil
}

// put stores obj under key as a batch of one. The index functions and the
// encoding run before the writer mutex is taken (the index functions again
// under it only if AddIndexers changed them meanwhile).
func (ix *Indexer) put(key string, obj any) error {
	v := ix.prepare(key, obj, ix.table.Load().funcs)
	// No growth hint: an update of a stored key must not grow the table;
	// commit grows it after an add that needs it.
	b := ix.beginBatch(0)
	if v.vals.funcs != b.t.funcs {
		v = ix.prepare(key, obj, b.t.funcs)
	}
	_, _, err := b.write(key, obj, v)
	b.commit()
	return err
}

// Bookmark records rv as the store's RV unless the store already reflects a
// newer one (RVs are compared as integers when both parse; otherwise rv wins).
func (ix *Indexer) Bookmark(rv string) {
	if rv == "" {
		return
	}
	b := ix.beginBatch(0)
	b.observe(rv)
	b.commit()
}

// beginBatch takes the writer mutex and starts a batch of up to adds new
// keys (a hint: the table is grown for them first, so that adding them does
// not split segments).
func (ix *Indexer) beginBatch(adds int) *writeBatch {
	ix.writeMu.Lock()
	t := ix.table.Load()
	t = ix.grownFor(t, t.size.Load()+int64(adds))
	b := &ix.batch
	b.ix, b.t, b.rv = ix, t, *t.rv.Load()
	return b
}

// beginWholeBatch takes the writer mutex and starts a batch that readers see
// all at once or not at all: they see the store as it was until commit, and
// as the batch left it from then on (the informer applies a relist so; see
// SharedIndexInformer.handleBatch). adds is beginBatch's hint.
//
// The batch writes to a private copy of the table (segmentTable.cloned): the
// same records in new cells, new segments, and index tries of the same
// shape filing the new cells. So its updates, adds and deletes change
// nothing a reader can reach, and it writes the copy in place as a batch
// writes its private segments and nodes; commit publishes the copy with one
// store. The cost is the store's structure once more for the batch's
// duration, not its objects (see segmentTable.cloned); readers still holding
// the old table keep it alive until they are done.
func (ix *Indexer) beginWholeBatch(adds int) *writeBatch {
	ix.writeMu.Lock()
	cur := ix.table.Load()
	ed := &edit{}
	t := cur.cloned(cur.size.Load()+int64(adds), ed)
	b := &ix.batch
	b.ix, b.t, b.whole, b.ed, b.rv = ix, t, true, ed, *t.rv.Load()
	return b
}

// grownFor returns t, or when n keys would overfill its segments a grown
// copy, published in t's place (writer only).
func (ix *Indexer) grownFor(t *segmentTable, n int64) *segmentTable {
	if n <= segmentTarget<<t.bits {
		return t // fits: the common case, decided here without bitsFor
	}
	if bits := bitsFor(n, t.bits); bits != t.bits {
		t = t.grownTo(bits)
		ix.table.Store(t)
	}
	return t
}

// slotOf returns the slot number of a key hash in the batch's table.
func (b *writeBatch) slotOf(h uint64) uint64 { return h >> (64 - b.t.bits) }

// segment returns the batch's view of segment slot: its private copy if any.
func (b *writeBatch) segment(slot uint64) *segment {
	if s, ok := b.segments[slot]; ok {
		return s
	}
	return b.t.segments[slot].Load()
}

// privateSegment returns the batch's private copy of segment slot, copying the
// published segment the first time (with room for extra more cells). A whole
// batch's table is private already: its segment is changed in place (the
// shared emptySegment excepted).
func (b *writeBatch) privateSegment(slot uint64, extra int) *segment {
	if s, ok := b.segments[slot]; ok {
		return s
	}
	if b.segments == nil {
		b.segments = map[uint64]*segment{}
	}
	pub := b.t.segments[slot].Load()
	if b.whole && pub != emptySegment {
		b.segments[slot] = pub
		return pub
	}
	s := newSegment(len(pub.slots), extra)
	copy(s.slots, pub.slots)
	b.segments[slot] = s
	return s
}

// put stores obj under key, as Indexer.Add does. It returns the errors of
// failing index functions (the object is stored, not filed in those).
func (b *writeBatch) put(key string, obj any) error {
	_, _, err := b.swap(key, obj)
	return err
}

// swap is put that also returns the record it replaced (nil when key was
// absent) and the one it stored, so the pop loop looks each key up once.
// obj may be a *queuedItem (the Reflector's).
func (b *writeBatch) swap(key string, obj any) (old, rec *record, err error) {
	return b.write(key, obj, b.ix.prepare(key, obj, b.t.funcs))
}

// prepared is what a write keeps of an object: the object held decoded (nil
// when data holds its encoding), the encoding, and its index values.
type prepared struct {
	obj   any
	data  []byte
	vals  indexValues
	print labelPrint
}

// prepare returns what a write of obj under key stores, with index values
// for funcs: for a *queuedItem, what the encoding stage computed (see
// Indexer.stored when funcs changed since); else obj, its encoding (compact
// storage) and its index values, computed now. It takes no lock.
func (ix *Indexer) prepare(key string, obj any, funcs *indexFuncs) prepared {
	if e, ok := obj.(*queuedItem); ok {
		if e.vals.funcs == funcs {
			return prepared{obj: e.obj, data: e.data, vals: e.vals, print: e.print}
		}
		o, data, vals := ix.stored(e, funcs)
		return prepared{obj: o, data: data, vals: vals, print: e.print}
	}
	return prepared{obj: obj, data: ix.encode(key, obj), vals: funcs.compute(obj), print: printOf(obj)}
}

// write stores v under key (v.vals computed with the batch table's
// functions) and records obj's resourceVersion as the batch's RV if it is
// newer. It returns the record replaced (nil when key was absent), the one
// stored, and the errors of failing index functions.
func (b *writeBatch) write(key string, obj any, v prepared) (old, rec *record, err error) {
	b.observeRV(obj)
	b.ix.changes.note(key)
	h := keyHash(key)
	slot := b.slotOf(h)
	e, old, found := b.segment(slot).cellFor(h, key)
	rec, changed := newRecord(v.obj, v.data, old, v.vals, b.canonical)
	// The record first, then the indexes (at commit): a reader that finds
	// the cell in a bucket checks that the record it loads is filed there.
	e.print.Store(uint64(v.print))
	e.rec.Store(rec)
	b.t.account(old, rec)
	if !found {
		p := b.privateSegment(slot, 1)
		p.slots = append(p.slots, segmentSlot{hash: h, e: e})
		b.added++
	}
	if changed {
		b.refile(e, old, rec)
	}
	return old, rec, v.vals.err(key)
}

// newRecord returns the record of obj (or of its encoding data, when not
// nil) filed under vals, with old's values when none changed; changed
// reports whether the object must be refiled: an index value changed, or
// old is nil and a keyed index files the new object under its key's
// namespace. canon, when not nil, gives the string to keep for each new
// value of the j-th index a record keeps values of (see fillFiled). The
// record's values are its own (copied, not shared with old or vals); those
// of keyed indexes are not kept (filed_values.go).
func newRecord(obj any, data []byte, old *record, vals indexValues, canon func(j int, s string) string) (rec *record, changed bool) {
	f := vals.funcs
	for _, i := range f.storedIndex {
		if !slices.Equal(f.storedFiled(old, i), vals.filed(i)) {
			changed = true
			break
		}
	}
	if !changed {
		var kept filedValues // none when old is nil: no value changed from none
		if old != nil {
			kept = old.vals
		}
		rec = allocRecord(len(kept))
		copy(rec.vals, kept)
	} else {
		// compute and AddIndexers leave a failed or empty index's values
		// nil; filed drops a failed index's values.
		size := filedSize(len(f.storedIndex), vals.storedFiled)
		rec = allocRecord(size)
		if size > 0 {
			fillFiled(rec.vals, len(f.storedIndex), vals.storedFiled, canon)
		}
	}
	if data != nil {
		rec.data = data
	} else {
		rec.obj = obj
	}
	return rec, changed || (old == nil && len(f.storedIndex) < len(f.names))
}

// allocRecord returns a new record whose vals has length size, in the same
// allocation as the record up to eight values (a namespace index, and two
// indexes of a value per namespace and one across namespaces, make six with
// the shape): a record is one heap object, not two, for the collector to
// mark, and one pointer less to follow on a read.
func allocRecord(size int) *record {
	var r *record
	var vals []string
	switch size {
	case 0:
		return &record{}
	case 1:
		p := new(recordWith[[1]string])
		r, vals = &p.r, p.v[:]
	case 2:
		p := new(recordWith[[2]string])
		r, vals = &p.r, p.v[:]
	case 3:
		p := new(recordWith[[3]string])
		r, vals = &p.r, p.v[:]
	case 4:
		p := new(recordWith[[4]string])
		r, vals = &p.r, p.v[:]
	case 5:
		p := new(recordWith[[5]string])
		r, vals = &p.r, p.v[:]
	case 6:
		p := new(recordWith[[6]string])
		r, vals = &p.r, p.v[:]
	case 7:
		p := new(recordWith[[7]string])
		r, vals = &p.r, p.v[:]
	case 8:
		p := new(recordWith[[8]string])
		r, vals = &p.r, p.v[:]
	default:
		r, vals = &record{}, make([]string, size)
	}
	r.vals = vals
	return r
}

// recordWith is a record and the array its values are kept in.
type recordWith[A any] struct {
	r record
	v A
}

// canonical returns the string the batch's j-th index a record keeps values
// of (indexFuncs.storedIndex) files value s under when it has a bucket for s
// (the first record's string), else s: records of one value share that
// string (newRecord's canon). A label value of a pod decoded by client-go is
// a string of its own per pod otherwise.
func (b *writeBatch) canonical(j int, s string) string {
	i := b.t.funcs.storedIndex[j]
	idx := b.idx
	if idx == nil {
		idx = b.t.indices.Load()
	}
	if e := idx.byName[i].find(indexValue(s)); e != nil {
		return string(e.key)
	}
	return s
}

// remove deletes key and its index cells; it reports whether key was
// present.
func (b *writeBatch) remove(key string) bool { return b.take(key) != nil }

// take deletes key and its index cells and returns its record, or nil when
// key was absent. It records no RV (it has no object).
func (b *writeBatch) take(key string) *record {
	h := keyHash(key)
	slot := b.slotOf(h)
	i, found := b.segment(slot).search(h, key)
	if !found {
		return nil
	}
	b.ix.changes.note(key)
	p := b.privateSegment(slot, 0)
	e := p.slots[i].e
	old := e.rec.Load()
	e.rec.Store(nil)
	last := len(p.slots) - 1
	p.slots[i] = p.slots[last]
	p.slots[last] = segmentSlot{}
	p.slots = p.slots[:last]
	b.refile(e, old, nil)
	b.t.account(old, nil)
	b.added--
	return old
}

// refile moves e in the batch's private indexes from old's values to rec's.
func (b *writeBatch) refile(e *cell, old, rec *record) {
	if b.idx == nil {
		b.idx = &indexSet{byName: slices.Clone(b.t.indices.Load().byName)}
	}
	if b.ed == nil {
		b.ed = &edit{}
	}
	b.t.funcs.refileCell(b.ed, b.idx.byName, e, old, rec)
}

// refileIndex moves the cell e in one index from the buckets of oldVals
// to those of newVals, dropping buckets that become empty.
func refileIndex(ed *edit, idx trie[indexValue, bucket], e *cell, oldVals, newVals []string) trie[indexValue, bucket] {
	if slices.Equal(oldVals, newVals) {
		return idx
	}
	for _, v := range oldVals {
		b, ok := idx.get(indexValue(v))
		if !ok {
			continue
		}
		if b, _ = b.del(ed, e); b.Len() == 0 {
			idx, _ = idx.del(ed, indexValue(v))
		} else {
			idx = idx.set(ed, indexValue(v), b)
		}
	}
	for _, v := range newVals {
		b, _ := idx.get(indexValue(v))
		idx = idx.set(ed, indexValue(v), b.set(ed, e))
	}
	return idx
}

// observeRV records obj's resourceVersion as the batch's RV if it is newer
// (see observe); commit publishes it. Tombstones and objects without one
// leave it as it is.
func (b *writeBatch) observeRV(obj any) {
	switch o := obj.(type) {
	case *queuedItem:
		b.observe(o.rv)
	case toolscache.DeletedFinalStateUnknown:
	default:
		b.observe(objectRV(obj))
	}
}

// observe records rv as the batch's RV unless it is "", the same, or older
// (RVs compared as integers when both parse; otherwise rv wins).
func (b *writeBatch) observe(rv string) {
	if rv != "" && rv != b.rv && !rvOlder(rv, b.rv) {
		b.rv = rv
	}
}

// commit publishes the batch's segments, indexes, size and RV (a whole batch:
// its table, at once), grows the table if it outgrew its segments, and
// releases the writer mutex. The batch must not be used afterwards.
func (b *writeBatch) commit() {
	t, ix := b.t, b.ix
	for slot, s := range b.segments {
		if len(s.slots) == 0 {
			s = emptySegment
		} else if cap(s.slots) > len(s.slots) && cap(s.slots) > segmentInline {
			// Several adds to one segment grew it by appending: drop the
			// spare room, which would stay allocated for the segment's life.
			// Up to segmentInline slots the room is left: in the segment's
			// own allocation (newSegment) a copy would not free it, and
			// a small array grown by append is told apart from it only
			// by its address.
			s.slots = slices.Clone(s.slots)
		}
		t.segments[slot].Store(s)
	}
	if b.idx != nil {
		b.ed.trim()
		t.indices.Store(b.idx)
	}
	if b.added != 0 {
		t.size.Add(b.added)
	}
	if b.rv != *t.rv.Load() {
		rv := b.rv
		t.rv.Store(&rv)
	}
	// A table that outgrew its segments (more adds than the hint) grows here,
	// which publishes a whole batch's table too.
	if g := ix.grownFor(t, t.size.Load()); g == t && b.whole {
		ix.table.Store(t)
	}
	segments := b.segments
	if len(segments) > reusedSegmentMap {
		segments = nil
	} else {
		clear(segments)
	}
	*b = writeBatch{segments: segments}
	ix.writeMu.Unlock()
}
