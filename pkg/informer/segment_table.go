package informer

import (
	"hash/maphash"
	"slices"
	"strings"
	"sync/atomic"
)

// segmentTable is the Indexer's content: one cell per stored key, in 2^bits
// copy-on-write segments chosen by key hash, and the indexes, which file the
// same cells. An cell is a stable cell holding the key's current record
// (object and index values) behind an atomic pointer. Readers load segments,
// indexes and records atomically and never lock. The single writer:
//
//   - updates a key by storing a new record in its cell: the segments do not
//     change, and the indexes only if an index value changed;
//   - adds or deletes a key by replacing its segment with a modified copy (a
//     few cells), and refiling the cell in the indexes' persistent tries.
//
// So an update allocates one record, whatever the size of the store.
//
// A table is replaced as a whole (Replace, AddIndexers, BuildIndex,
// RemoveIndex, growth); the writer never changes a table's segments or
// indexes after publishing its successor. Replace, AddIndexers, BuildIndex
// and RemoveIndex also give the new table new cells, so a reader holding an
// old table sees a frozen state whose records match the table's index
// functions (growth keeps the cells, and the functions).
type segmentTable struct {
	funcs    *indexFuncs
	bits     uint8
	segments []atomic.Pointer[segment]
	// indices holds one persistent index per funcs.names cell.
	indices atomic.Pointer[indexSet]
	size    atomic.Int64
	rv      atomic.Pointer[string]
	// encoded counts the records held encoded, encodedBytes their bytes
	// (compact storage; see Indexer.StoredStats).
	encoded, encodedBytes atomic.Int64
}

// indexSet is an immutable set of indexes, aligned with indexFuncs.names:
// indexed value → set of cells. Buckets hold cells, so a write that does
// not change an object's index values leaves the indexes alone, and ByIndex
// reads each object without a second lookup.
type indexSet struct {
	byName []trie[indexValue, bucket]
}

// cell is the cell of one stored key: its current record, nil once the key
// is deleted (a deleted key gets a new cell if it comes back).
type cell struct {
	rec atomic.Pointer[record]
	// key is the stored key, never changed (the segment slots and the
	// index buckets holding the cell read it there).
	key string
	// print is the labelPrint of the current record's object (0: none),
	// stored before the record by the writer; a reader may see the print of
	// the previous or the next record with a record, which gives it either
	// state of the key (see labelPrint).
	print atomic.Uint64
}

// segment is an immutable run of cells (a few, in no particular order).
type segment struct {
	slots []segmentSlot
}

// segmentWith is a segment and the array of its slots, one allocation.
type segmentWith[A any] struct {
	s segment
	a A
}

// segmentInline is the most slots newSegment allocates with the segment.
const segmentInline = 8

// newSegment returns a segment of n zero slots with room for room more, in
// the segment's own allocation up to segmentInline slots (a batch's copy of a
// segment is one allocation, not two), else in an array of its own.
func newSegment(n, room int) *segment {
	var s *segment
	var arr []segmentSlot
	switch n + room {
	case 0:
		return &segment{}
	case 1:
		p := new(segmentWith[[1]segmentSlot])
		s, arr = &p.s, p.a[:]
	case 2:
		p := new(segmentWith[[2]segmentSlot])
		s, arr = &p.s, p.a[:]
	case 3:
		p := new(segmentWith[[3]segmentSlot])
		s, arr = &p.s, p.a[:]
	case 4:
		p := new(segmentWith[[4]segmentSlot])
		s, arr = &p.s, p.a[:]
	case 5:
		p := new(segmentWith[[5]segmentSlot])
		s, arr = &p.s, p.a[:]
	case 6:
		p := new(segmentWith[[6]segmentSlot])
		s, arr = &p.s, p.a[:]
	case 7:
		p := new(segmentWith[[7]segmentSlot])
		s, arr = &p.s, p.a[:]
	case 8:
		p := new(segmentWith[[segmentInline]segmentSlot])
		s, arr = &p.s, p.a[:]
	default:
		s, arr = &segment{}, make([]segmentSlot, n+room)
	}
	s.slots = arr[:n]
	return s
}

type segmentSlot struct {
	hash uint64 // keyHash(e.key): compared before the key
	e    *cell
}

// record is one stored object and, per index (aligned with indexFuncs.names),
// the values it is filed under (nil: not filed, also after an error). It is
// immutable; a write replaces it. With compact storage, data holds the
// object's encoding and obj is nil (obj is set for an object the codec could
// not encode).
type record struct {
	obj  any
	data []byte
	vals filedValues
}

// account adds the change from old to rec (either may be nil) to t's
// encoded counters (writer only, or a table not yet published).
func (t *segmentTable) account(old, rec *record) {
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

const (
	// segmentTarget is the mean segment size above which the table doubles.
	segmentTarget  = 8
	minSegmentBits = 4
)

var keySeed = maphash.MakeSeed()

// emptySegment is the shared segment of no cells (never changed in place).
var emptySegment = &segment{}

func keyHash(key string) uint64 { return maphash.String(keySeed, key) }

// bitsFor returns the segment bits, at least from, under which n keys keep
// the mean segment size at most segmentTarget: the one growth rule of every
// table (newSegmentTable, Indexer.grownFor, cloned).
func bitsFor(n int64, from uint8) uint8 {
	bits := from
	for n > segmentTarget<<bits {
		bits++
	}
	return bits
}

// newSegmentTable returns an empty table sized for n objects.
func newSegmentTable(funcs *indexFuncs, n int, rv string) *segmentTable {
	bits := bitsFor(int64(n), minSegmentBits)
	t := &segmentTable{funcs: funcs, bits: bits, segments: make([]atomic.Pointer[segment], 1<<bits)}
	for i := range t.segments {
		t.segments[i].Store(emptySegment)
	}
	t.indices.Store(&indexSet{byName: make([]trie[indexValue, bucket], len(funcs.names))})
	t.rv.Store(&rv)
	return t
}

// segmentOf returns the segment slot of a key hash: its top bits.
func (t *segmentTable) segmentOf(h uint64) *atomic.Pointer[segment] {
	return &t.segments[h>>(64-t.bits)]
}

// get returns key's record, or nil.
func (t *segmentTable) get(key string) *record {
	if e := t.cellOf(key); e != nil {
		return e.rec.Load()
	}
	return nil
}

// cellOf returns the cell of key, nil if t does not hold key.
func (t *segmentTable) cellOf(key string) *cell {
	h := keyHash(key)
	s := t.segmentOf(h).Load()
	if i, ok := s.search(h, key); ok {
		return s.slots[i].e
	}
	return nil
}

// eachCell calls fn for every stored key's cell until fn returns false; the
// cell's record may be nil (deleted meanwhile).
func (t *segmentTable) eachCell(fn func(e *cell) bool) {
	for i := range t.segments {
		for _, se := range t.segments[i].Load().slots {
			if !fn(se.e) {
				return
			}
		}
	}
}

// each calls fn for every stored key and its record until fn returns false.
func (t *segmentTable) each(fn func(key string, r *record) bool) {
	for i := range t.segments {
		for _, se := range t.segments[i].Load().slots {
			if r := se.e.rec.Load(); r != nil && !fn(se.e.key, r) {
				return
			}
		}
	}
}

// search returns the position of key, whose hash is h, in s. Segments are
// short: a linear scan comparing hashes beats a binary search of strings.
func (s *segment) search(h uint64, key string) (int, bool) {
	for i := range s.slots {
		if s.slots[i].hash == h && s.slots[i].e.key == key {
			return i, true
		}
	}
	return -1, false
}

// cellFor returns the cell of key (hash h) and its current record if s
// holds it (found), else a new, empty cell to store under key.
func (s *segment) cellFor(h uint64, key string) (e *cell, old *record, found bool) {
	if i, ok := s.search(h, key); ok {
		e = s.slots[i].e
		return e, e.rec.Load(), true
	}
	return &cell{key: key}, nil, false
}

// fill adds a key with a new cell holding rec to a table that no reader
// sees yet, without copying segments; call sortSegments when done.
func (t *segmentTable) fill(key string, rec *record, print labelPrint) {
	h := keyHash(key)
	slot := t.segmentOf(h)
	s := slot.Load()
	if len(s.slots) == 0 {
		s = &segment{}
		slot.Store(s)
	}
	e := &cell{key: key}
	e.print.Store(uint64(print))
	e.rec.Store(rec)
	s.slots = append(s.slots, segmentSlot{hash: h, e: e})
	t.size.Add(1)
	t.account(nil, rec)
}

// sortSegments sorts every segment of a table filled with fill by key, keeping
// the last cell of a duplicated key.
func (t *segmentTable) sortSegments() {
	for i := range t.segments {
		s := t.segments[i].Load()
		if len(s.slots) < 2 {
			continue
		}
		slices.SortStableFunc(s.slots, func(a, b segmentSlot) int { return strings.Compare(a.e.key, b.e.key) })
		out := s.slots[:0]
		for j, se := range s.slots {
			if j+1 < len(s.slots) && s.slots[j+1].e.key == se.e.key {
				t.account(se.e.rec.Load(), nil)
				continue
			}
			out = append(out, se)
		}
		t.size.Add(int64(len(out) - len(s.slots)))
		s.slots = slices.Clip(out)
	}
}

// cloned returns a private copy of t for a whole batch (see
// Indexer.beginWholeBatch), sized for n keys: the same keys, records,
// funcs, counters and RV, each key in a new cell, in new segments, and
// indexes of the same shape filing the new cells, whose nodes ed owns (the
// batch's writes change them in place). Only the writer calls it. It costs
// t's structure, not its objects: per key a cell and a segment slot, per
// segment its header, every index trie node, and while it runs a map from old
// to new cells.
func (t *segmentTable) cloned(n int64, ed *edit) *segmentTable {
	bits := bitsFor(n, t.bits)
	c := &segmentTable{funcs: t.funcs, bits: bits, segments: make([]atomic.Pointer[segment], 1<<bits)}
	split := bits - t.bits
	counts := make([]int, 1<<split)
	cur := t.indices.Load()
	// moved maps each old cell to its new one, for the indexes (a Go map:
	// faster than finding each filed key's segment again).
	var moved map[*cell]*cell
	if len(cur.byName) > 0 {
		moved = make(map[*cell]*cell, t.size.Load())
	}
	for i := range t.segments {
		cells := t.segments[i].Load().slots
		clear(counts)
		for _, se := range cells {
			counts[se.hash>>(64-bits)&(1<<split-1)]++
		}
		parts := make([]*segment, len(counts))
		for j, k := range counts {
			parts[j] = emptySegment
			if k > 0 {
				parts[j] = newSegment(0, k)
			}
			c.segments[i<<split+j].Store(parts[j])
		}
		for _, se := range cells {
			e := &cell{key: se.e.key}
			e.print.Store(se.e.print.Load())
			e.rec.Store(se.e.rec.Load())
			if moved != nil {
				moved[se.e] = e
			}
			p := parts[se.hash>>(64-bits)&(1<<split-1)]
			p.slots = append(p.slots, segmentSlot{hash: se.hash, e: e})
		}
	}
	// A filed key is a stored key (the writer refiles a key before it lets
	// go of the writer mutex), so every cell of the indexes has moved.
	// A moved cell has its old cell's key, so its hash: the buckets keep their shape.
	cell := func(old *cell) *cell { return moved[old] }
	idx := &indexSet{byName: make([]trie[indexValue, bucket], len(cur.byName))}
	for i, values := range cur.byName {
		idx.byName[i] = values.mapped(ed, func(v indexValue, b bucket) (indexValue, bucket) { return v, b.mapped(ed, cell) })
	}
	c.indices.Store(idx)
	c.size.Store(t.size.Load())
	c.encoded.Store(t.encoded.Load())
	c.encodedBytes.Store(t.encodedBytes.Load())
	c.rv.Store(t.rv.Load())
	return c
}

// grownTo returns a table with 2^bits segments (bits ≥ t.bits) and the same
// cells, funcs, indexes and RV. Only the writer calls it.
func (t *segmentTable) grownTo(bits uint8) *segmentTable {
	g := &segmentTable{funcs: t.funcs, bits: bits, segments: make([]atomic.Pointer[segment], 1<<bits)}
	split := bits - t.bits
	parts := make([][]segmentSlot, 1<<split)
	for i := range t.segments {
		cells := t.segments[i].Load().slots
		if split == 1 {
			// The common doubling: count first, so each half is one allocation.
			lo := 0
			for _, se := range cells {
				if se.hash>>(64-bits)&1 == 0 {
					lo++
				}
			}
			parts[0] = make([]segmentSlot, 0, lo)
			parts[1] = make([]segmentSlot, 0, len(cells)-lo)
		} else {
			clear(parts)
		}
		for _, se := range cells {
			j := se.hash >> (64 - bits) & (1<<split - 1)
			parts[j] = append(parts[j], se)
		}
		for j, p := range parts {
			if len(p) == 0 {
				g.segments[i<<split+j].Store(emptySegment)
				continue
			}
			g.segments[i<<split+j].Store(&segment{slots: p})
		}
	}
	g.indices.Store(t.indices.Load())
	g.size.Store(t.size.Load())
	g.encoded.Store(t.encoded.Load())
	g.encodedBytes.Store(t.encodedBytes.Load())
	g.rv.Store(t.rv.Load())
	return g
}
