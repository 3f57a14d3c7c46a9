package informer

import (
	"hash/maphash"
	"slices"
	"strings"
	"sync/atomic"
)

// shardTable is the Indexer's content: one entry per stored key, in 2^bits
// copy-on-write shards chosen by key hash, and the indexes, which file the
// same entries. An entry is a stable cell holding the key's current record
// (object and index values) behind an atomic pointer. Readers load shards,
// indexes and records atomically and never lock. The single writer:
//
//   - updates a key by storing a new record in its entry: the shards do not
//     change, and the indexes only if an index value changed;
//   - adds or deletes a key by replacing its shard with a modified copy (a
//     few entries), and refiling the entry in the indexes' persistent tries.
//
// So an update allocates one record, whatever the size of the store.
//
// A table is replaced as a whole (Replace, AddIndexers, growth); the writer
// never changes a table's shards or indexes after publishing its successor.
// Replace and AddIndexers also give the new table new entries, so a reader
// holding an old table sees a frozen state whose records match the table's
// index functions (growth keeps the entries, and the functions).
type shardTable struct {
	funcs  *indexFuncs
	bits   uint8
	shards []atomic.Pointer[shard]
	// indices holds one persistent index per funcs.names entry.
	indices atomic.Pointer[indexSet]
	size    atomic.Int64
	rv      atomic.Pointer[string]
	// encoded counts the records held encoded, encodedBytes their bytes
	// (compact storage; see Indexer.StoredStats).
	encoded, encodedBytes atomic.Int64
}

// indexSet is an immutable set of indexes, aligned with indexFuncs.names:
// indexed value → (key → entry). Buckets hold entries, so a write that does
// not change an object's index values leaves the indexes alone, and ByIndex
// reads each object without a second lookup.
type indexSet struct {
	byName []trie[bucket]
}

// bucket is the persistent set of the entries filed under one value.
type bucket = trie[*entry]

// entry is the cell of one stored key: its current record, nil once the key
// is deleted (a deleted key gets a new entry if it comes back).
type entry struct {
	rec atomic.Pointer[record]
}

// shard is an immutable run of entries (a few, in no particular order).
type shard struct {
	entries []shardEntry
}

type shardEntry struct {
	hash uint64 // keyHash(key): compared before the key
	key  string
	e    *entry
}

// record is one stored object and, per index (aligned with indexFuncs.names),
// the values it is filed under (nil: not filed, also after an error). It is
// immutable; a write replaces it. With compact storage, data holds the
// object's encoding and obj is nil (obj is set for an object the codec could
// not encode).
type record struct {
	obj  any
	data []byte
	vals [][]string
}

// account adds the change from old to rec (either may be nil) to t's
// encoded counters (writer only, or a table not yet published).
func (t *shardTable) account(old, rec *record) {
	var n, bytes int64
	if old != nil && old.data != nil {
		n, bytes = n-1, bytes-int64(len(old.data))
	}
	if rec != nil && rec.data != nil {
		n, bytes = n+1, bytes+int64(len(rec.data))
	}
	if n != 0 {
		t.encoded.Add(n)
	}
	if bytes != 0 {
		t.encodedBytes.Add(bytes)
	}
}

// filed returns the values r is filed under in index i.
func (r *record) filed(i int) []string {
	if r == nil || r.vals == nil {
		return nil
	}
	return r.vals[i]
}

// filedUnder reports whether r is filed under value in index i.
func (r *record) filedUnder(i int, value string) bool {
	return slices.Contains(r.filed(i), value)
}

const (
	// shardTarget is the mean shard size above which the table doubles.
	shardTarget  = 8
	minShardBits = 4
)

var keySeed = maphash.MakeSeed()

// emptyShard is the shared shard of no entries (never changed in place).
var emptyShard = &shard{}

func keyHash(key string) uint64 { return maphash.String(keySeed, key) }

// bitsFor returns the shard bits, at least from, under which n keys keep
// the mean shard size at most shardTarget: the one growth rule of every
// table (newShardTable, Indexer.grownFor, cloned).
func bitsFor(n int64, from uint8) uint8 {
	bits := from
	for n > shardTarget<<bits {
		bits++
	}
	return bits
}

// newShardTable returns an empty table sized for n objects.
func newShardTable(funcs *indexFuncs, n int, rv string) *shardTable {
	bits := bitsFor(int64(n), minShardBits)
	t := &shardTable{funcs: funcs, bits: bits, shards: make([]atomic.Pointer[shard], 1<<bits)}
	for i := range t.shards {
		t.shards[i].Store(emptyShard)
	}
	t.indices.Store(&indexSet{byName: make([]trie[bucket], len(funcs.names))})
	t.rv.Store(&rv)
	return t
}

// shardOf returns the shard slot of a key hash: its top bits.
func (t *shardTable) shardOf(h uint64) *atomic.Pointer[shard] {
	return &t.shards[h>>(64-t.bits)]
}

// get returns key's record, or nil.
func (t *shardTable) get(key string) *record {
	h := keyHash(key)
	s := t.shardOf(h).Load()
	if i, ok := s.search(h, key); ok {
		return s.entries[i].e.rec.Load()
	}
	return nil
}

// each calls fn for every stored key and its record until fn returns false.
func (t *shardTable) each(fn func(key string, r *record) bool) {
	for i := range t.shards {
		for _, se := range t.shards[i].Load().entries {
			if r := se.e.rec.Load(); r != nil && !fn(se.key, r) {
				return
			}
		}
	}
}

// search returns the position of key, whose hash is h, in s. Shards are
// short: a linear scan comparing hashes beats a binary search of strings.
func (s *shard) search(h uint64, key string) (int, bool) {
	for i := range s.entries {
		if s.entries[i].hash == h && s.entries[i].key == key {
			return i, true
		}
	}
	return -1, false
}

// entryFor returns the entry of key (hash h) and its current record if s
// holds it (found), else a new, empty entry to store under key.
func (s *shard) entryFor(h uint64, key string) (e *entry, old *record, found bool) {
	if i, ok := s.search(h, key); ok {
		e = s.entries[i].e
		return e, e.rec.Load(), true
	}
	return &entry{}, nil, false
}

// with returns a copy of s with e added for key, whose hash is h (s does not
// hold key).
func (s *shard) with(h uint64, key string, e *entry) *shard {
	out := make([]shardEntry, len(s.entries)+1)
	copy(out, s.entries)
	out[len(s.entries)] = shardEntry{hash: h, key: key, e: e}
	return &shard{entries: out}
}

// without returns a copy of s without entry i.
func (s *shard) without(i int) *shard {
	if len(s.entries) == 1 {
		return &shard{}
	}
	out := make([]shardEntry, len(s.entries)-1)
	copy(out, s.entries[:i])
	copy(out[i:], s.entries[i+1:])
	return &shard{entries: out}
}

// fill adds a key with a new entry holding rec to a table that no reader
// sees yet, without copying shards; call sortShards when done.
func (t *shardTable) fill(key string, rec *record) {
	h := keyHash(key)
	slot := t.shardOf(h)
	s := slot.Load()
	if len(s.entries) == 0 {
		s = &shard{}
		slot.Store(s)
	}
	e := &entry{}
	e.rec.Store(rec)
	s.entries = append(s.entries, shardEntry{hash: h, key: key, e: e})
	t.size.Add(1)
	t.account(nil, rec)
}

// sortShards sorts every shard of a table filled with fill by key, keeping
// the last entry of a duplicated key.
func (t *shardTable) sortShards() {
	for i := range t.shards {
		s := t.shards[i].Load()
		if len(s.entries) < 2 {
			continue
		}
		slices.SortStableFunc(s.entries, func(a, b shardEntry) int { return strings.Compare(a.key, b.key) })
		out := s.entries[:0]
		for j, se := range s.entries {
			if j+1 < len(s.entries) && s.entries[j+1].key == se.key {
				t.account(se.e.rec.Load(), nil)
				continue
			}
			out = append(out, se)
		}
		t.size.Add(int64(len(out) - len(s.entries)))
		s.entries = slices.Clip(out)
	}
}

// cloned returns a private copy of t for a whole batch (see
// Indexer.beginWholeBatch), sized for n keys: the same keys, records,
// funcs, counters and RV, each key in a new entry cell, in new shards, and
// indexes of the same shape filing the new cells, whose nodes ed owns (the
// batch's writes change them in place). Only the writer calls it. It costs
// t's structure, not its objects: per key a cell and a shard slot, per
// shard its header, every index trie node, and while it runs a map from old
// to new cells.
func (t *shardTable) cloned(n int64, ed *edit) *shardTable {
	bits := bitsFor(n, t.bits)
	c := &shardTable{funcs: t.funcs, bits: bits, shards: make([]atomic.Pointer[shard], 1<<bits)}
	split := bits - t.bits
	counts := make([]int, 1<<split)
	cur := t.indices.Load()
	// moved maps each old cell to its new one, for the indexes (a Go map:
	// faster than finding each filed key's shard again).
	var moved map[*entry]*entry
	if len(cur.byName) > 0 {
		moved = make(map[*entry]*entry, t.size.Load())
	}
	for i := range t.shards {
		entries := t.shards[i].Load().entries
		clear(counts)
		for _, se := range entries {
			counts[se.hash>>(64-bits)&(1<<split-1)]++
		}
		parts := make([]*shard, len(counts))
		for j, k := range counts {
			parts[j] = emptyShard
			if k > 0 {
				parts[j] = &shard{entries: make([]shardEntry, 0, k)}
			}
			c.shards[i<<split+j].Store(parts[j])
		}
		for _, se := range entries {
			e := &entry{}
			e.rec.Store(se.e.rec.Load())
			if moved != nil {
				moved[se.e] = e
			}
			p := parts[se.hash>>(64-bits)&(1<<split-1)]
			p.entries = append(p.entries, shardEntry{hash: se.hash, key: se.key, e: e})
		}
	}
	// A filed key is a stored key (the writer refiles a key before it lets
	// go of the writer mutex), so every cell of the indexes has moved.
	cell := func(_ string, old *entry) *entry { return moved[old] }
	idx := &indexSet{byName: make([]trie[bucket], len(cur.byName))}
	for i, values := range cur.byName {
		idx.byName[i] = values.mapped(ed, func(_ string, b bucket) bucket { return b.mapped(ed, cell) })
	}
	c.indices.Store(idx)
	c.size.Store(t.size.Load())
	c.encoded.Store(t.encoded.Load())
	c.encodedBytes.Store(t.encodedBytes.Load())
	c.rv.Store(t.rv.Load())
	return c
}

// grownTo returns a table with 2^bits shards (bits ≥ t.bits) and the same
// entries, funcs, indexes and RV. Only the writer calls it.
func (t *shardTable) grownTo(bits uint8) *shardTable {
	g := &shardTable{funcs: t.funcs, bits: bits, shards: make([]atomic.Pointer[shard], 1<<bits)}
	split := bits - t.bits
	parts := make([][]shardEntry, 1<<split)
	for i := range t.shards {
		entries := t.shards[i].Load().entries
		if split == 1 {
			// The common doubling: count first, so each half is one allocation.
			lo := 0
			for _, se := range entries {
				if se.hash>>(64-bits)&1 == 0 {
					lo++
				}
			}
			parts[0] = make([]shardEntry, 0, lo)
			parts[1] = make([]shardEntry, 0, len(entries)-lo)
		} else {
			clear(parts)
		}
		for _, se := range entries {
			j := se.hash >> (64 - bits) & (1<<split - 1)
			parts[j] = append(parts[j], se)
		}
		for j, p := range parts {
			if len(p) == 0 {
				g.shards[i<<split+j].Store(emptyShard)
				continue
			}
			g.shards[i<<split+j].Store(&shard{entries: p})
		}
	}
	g.indices.Store(t.indices.Load())
	g.size.Store(t.size.Load())
	g.encoded.Store(t.encoded.Load())
	g.encodedBytes.Store(t.encodedBytes.Load())
	g.rv.Store(t.rv.Load())
	return g
}
