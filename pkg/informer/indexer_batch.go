package informer

import (
	"slices"
)

// writeBatch is a group of Indexer writes that readers see at once: the
// informer applies the keys it pops together (the whole initial list, or
// the keys queued meanwhile) as one batch. It holds the writer mutex from
// beginBatch until commit.
//
// Copy-on-write happens once per batch instead of once per write: the
// shards an add or delete changes are copied once into private shards that
// later writes of the batch change in place, and the index tries are
// changed under one edit token, so each trie node is copied at most once.
// The private shards and indexes are published by commit. So the initial
// list of n objects costs about one allocation per object and index for
// the store's structure, instead of a path of trie nodes per write.
//
// What readers see before commit: an update of a stored key whose index
// values do not change is visible at once (its cell gets the new record, as
// with put); a deleted key disappears at once; added keys, and keys whose
// index values changed, appear in the indexes at commit (a moved key is
// missing from ByIndex of both values until then, as during a single put);
// commit publishes shard by shard, then the indexes. The batch's own reads
// (get) see its writes.
//
// A whole batch (beginWholeBatch; the informer applies a relist so) is seen
// all at once instead: nothing of it before commit, all of it after.
type writeBatch struct {
	ix *Indexer
	t  *shardTable
	// whole: t is a private copy of the table (see beginWholeBatch).
	whole bool
	ed    *edit
	// idx is the private copy of t's indexes, nil until a write refiles.
	idx *indexSet
	// shards are the private copies of the shards changed, by slot.
	shards map[uint64]*shard
	added  int64
	rv     string
}

// beginBatch takes the writer mutex and starts a batch of up to adds new
// keys (a hint: the table is grown for them first, so that adding them does
// not split shards).
func (ix *Indexer) beginBatch(adds int) *writeBatch {
	ix.writeMu.Lock()
	t := ix.table.Load()
	if need := t.size.Load() + int64(adds); need > shardTarget<<t.bits {
		bits := t.bits
		for need > shardTarget<<bits {
			bits++
		}
		t = t.grownTo(bits)
		ix.table.Store(t)
	}
	return &writeBatch{ix: ix, t: t, ed: &edit{}, rv: *t.rv.Load()}
}

// beginWholeBatch takes the writer mutex and starts a batch that readers see
// all at once or not at all: they see the store as it was until commit, and
// as the batch left it from then on (the informer applies a relist so; see
// SharedIndexInformer.handleBatch). adds is beginBatch's hint.
//
// The batch writes to a private copy of the table (shardTable.cloned): the
// same records in new entry cells, new shards, and index tries of the same
// shape filing the new cells. So its updates, adds and deletes change
// nothing a reader can reach, and it writes the copy in place as a batch
// writes its private shards and nodes; commit publishes the copy with one
// store. The cost is the store's structure once more for the batch's
// duration, not its objects (see shardTable.cloned); readers still holding
// the old table keep it alive until they are done.
func (ix *Indexer) beginWholeBatch(adds int) *writeBatch {
	ix.writeMu.Lock()
	cur := ix.table.Load()
	ed := &edit{}
	t := cur.cloned(cur.size.Load()+int64(adds), ed)
	return &writeBatch{ix: ix, t: t, whole: true, ed: ed, rv: *t.rv.Load()}
}

// slotOf returns the slot number of a key hash in the batch's table.
func (b *writeBatch) slotOf(h uint64) uint64 { return h >> (64 - b.t.bits) }

// shard returns the batch's view of shard slot: its private copy if any.
func (b *writeBatch) shard(slot uint64) *shard {
	if s, ok := b.shards[slot]; ok {
		return s
	}
	return b.t.shards[slot].Load()
}

// privateShard returns the batch's private copy of shard slot, copying the
// published shard the first time (with room for extra more entries). A whole
// batch's table is private already: its shard is changed in place (the
// shared emptyShard excepted).
func (b *writeBatch) privateShard(slot uint64, extra int) *shard {
	if s, ok := b.shards[slot]; ok {
		return s
	}
	if b.shards == nil {
		b.shards = map[uint64]*shard{}
	}
	pub := b.t.shards[slot].Load()
	if b.whole && pub != emptyShard {
		b.shards[slot] = pub
		return pub
	}
	s := &shard{entries: make([]shardEntry, len(pub.entries), len(pub.entries)+extra)}
	copy(s.entries, pub.entries)
	b.shards[slot] = s
	return s
}

// put stores obj under key, as Indexer.put does. It returns the errors of
// failing index functions (the object is stored, not filed in those).
func (b *writeBatch) put(key string, obj any) error {
	_, _, err := b.swap(key, obj)
	return err
}

// swap is put that also returns the record it replaced (nil when key was
// absent) and the one it stored, so the pop loop looks each key up once.
func (b *writeBatch) swap(key string, obj any) (old, rec *record, err error) {
	b.observeRV(obj)
	var vals indexValues
	var data []byte
	if e, ok := obj.(*encodedObject); ok {
		obj, data, vals = b.ix.stored(e, b.t.funcs)
	} else {
		vals = b.t.funcs.compute(obj)
		data = b.ix.encode(key, obj)
	}
	h := keyHash(key)
	slot := b.slotOf(h)
	e, old, found := b.shard(slot).entryFor(h, key)
	rec, changed := newRecord(obj, data, old, vals)
	e.rec.Store(rec)
	b.t.account(old, rec)
	if !found {
		p := b.privateShard(slot, 1)
		p.entries = append(p.entries, shardEntry{hash: h, key: key, e: e})
		b.added++
	}
	if changed {
		b.refile(key, e, old, rec)
	}
	return old, rec, vals.err(key)
}

// remove deletes key and its index entries; it reports whether key was
// present.
func (b *writeBatch) remove(key string) bool { return b.take(key) != nil }

// take deletes key and its index entries and returns its record, or nil when
// key was absent.
func (b *writeBatch) take(key string) *record {
	h := keyHash(key)
	slot := b.slotOf(h)
	i, found := b.shard(slot).search(h, key)
	if !found {
		return nil
	}
	p := b.privateShard(slot, 0)
	e := p.entries[i].e
	old := e.rec.Load()
	e.rec.Store(nil)
	last := len(p.entries) - 1
	p.entries[i] = p.entries[last]
	p.entries[last] = shardEntry{}
	p.entries = p.entries[:last]
	b.refile(key, e, old, nil)
	b.t.account(old, nil)
	b.added--
	return old
}

// refile moves e in the batch's private indexes from old's values to rec's.
func (b *writeBatch) refile(key string, e *entry, old, rec *record) {
	if b.idx == nil {
		b.idx = &indexSet{byName: slices.Clone(b.t.indices.Load().byName)}
	}
	for i := range b.idx.byName {
		b.idx.byName[i] = refileIndex(b.ed, b.idx.byName[i], key, e, old.filed(i), rec.filed(i))
	}
}

// observeRV records obj's resourceVersion as the batch's RV if it is newer
// (as shardTable.observeRV); commit publishes it.
func (b *writeBatch) observeRV(obj any) {
	if rv := newerRV(obj, b.rv); rv != "" {
		b.rv = rv
	}
}

// commit publishes the batch's shards, indexes, size and RV (a whole batch:
// its table, at once), and releases the writer mutex. The batch must not be
// used afterwards.
func (b *writeBatch) commit() {
	t := b.t
	for slot, s := range b.shards {
		if len(s.entries) == 0 {
			s = emptyShard
		} else if cap(s.entries) > len(s.entries) {
			// Several adds to one shard grew it by appending: drop the
			// spare room, which would stay allocated for the shard's life.
			s.entries = slices.Clone(s.entries)
		}
		t.shards[slot].Store(s)
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
	// A table that outgrew its shards (more adds than the hint) doubles
	// as put would have.
	if n := t.size.Load(); n > shardTarget<<t.bits {
		bits := t.bits
		for n > shardTarget<<bits {
			bits++
		}
		t = t.grownTo(bits)
		b.ix.table.Store(t)
	} else if b.whole {
		b.ix.table.Store(t)
	}
	b.ix.writeMu.Unlock()
	*b = writeBatch{}
}
