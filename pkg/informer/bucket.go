package informer

import "slices"

// bucket is the persistent set of the cells filed under one index value
// (see segmentTable): nil is the empty set. Like the tries it sits in, a
// bucket is never changed once published: set and del return a new bucket
// sharing the chunks they did not touch, except that a bucket or chunk the
// write's edit token owns is changed in place (a batch copies each at most
// once; the token's trim gives back the room appends left).
//
// The cells are kept in chunks of at most bucketChunkMax, ordered by the
// trie hash of their key, then the key (a bucket holds one cell per key).
// An entry is the cell pointer alone, in an array of pointers the collector
// scans as one object: about 9–10 B per (value, object) pair with the
// chunk's share, where a trie of cells spent ~40 B (a node of 64 B and an
// array for every two or three cells at its leaves).
//
// A write copies the bucket's list of chunks, a pointer a chunk: past
// bucketChunkedMax cells (a namespace of tens of thousands of pods, a field
// value most objects share) the bucket holds its cells in a hash trie
// instead, whose writes copy a path of nodes whatever its size, and whose
// walk (a List of the value) is slower than the chunks'.
type bucket = *cellSet

type cellSet struct {
	owner  *edit
	chunks []*cellChunk // a chunk ed does not own is never changed
	size   int          // the chunks' cells
	// big holds the cells, and chunks is empty, once the bucket grew past
	// bucketChunkedMax (it stays a trie if it shrinks again). The trie is
	// keyed by the cell itself, as every bucket was before the chunks: a
	// stale cell of a key is not replaced by the key's new one there (the
	// writer removes a deleted key's cell before a new one is filed, so
	// neither form ever holds two).
	big trie[*cell, struct{}]
}

// bucketChunkedMax is the most cells a bucket keeps in chunks. A write then
// copies at most ~500 chunk pointers (4 KB) and one chunk: an add and a
// delete in a bucket of 16,384 cells cost ~10 µs and 10 KB, against ~3 µs
// and 2 KB in a trie. A trie costs ~30 B more per cell and its walk is 2–3
// times as slow: a List of a namespace of 5,000 pods took 10 % longer from
// a trie (section B6 of docs/benchmarks.md; most likely the collector
// marking the trie's nodes as the List's garbage is collected). A variable:
// tests lower it.
var bucketChunkedMax = 1 << 14

// trieHash makes a cell the key of a big bucket's trie.
func (e *cell) trieHash() uint64 { return trieHash(e.key) }

// isBig reports whether s keeps its cells in a trie.
func (s *cellSet) isBig() bool { return s.big.root != nil }

// cellChunk is a sorted run of a bucket's cells, 1 to bucketChunkMax of
// them; lastHash is the trie hash of the last one's key (the bucket's
// search compares it before any key).
type cellChunk struct {
	owner    *edit
	cells    []*cell
	lastHash uint64
}

// bucketChunkMax is the most cells a chunk holds: a full chunk splits in
// two. A write copies one chunk (at most 512 B of pointers) and the
// bucket's list of chunks.
const bucketChunkMax = 64

// Len returns the number of cells.
func (s *cellSet) Len() int {
	switch {
	case s == nil:
		return 0
	case s.isBig():
		return s.big.Len()
	}
	return s.size
}

// each calls fn for every cell, in the bucket's order, until fn returns
// false.
func (s *cellSet) each(fn func(e *cell) bool) {
	if s == nil {
		return
	}
	if s.isBig() {
		s.big.each(func(e *cell, _ struct{}) bool { return fn(e) })
		return
	}
	for _, ch := range s.chunks {
		for _, e := range ch.cells {
			if !fn(e) {
				return
			}
		}
	}
}

// has reports whether e is in the set.
func (s *cellSet) has(e *cell) bool {
	if s == nil {
		return false
	}
	if s.isBig() {
		_, ok := s.big.get(e)
		return ok
	}
	h := trieHash(e.key)
	i := s.chunkFor(h, e.key)
	if i == len(s.chunks) {
		return false
	}
	j, found := s.chunks[i].search(h, e.key)
	return found && s.chunks[i].cells[j] == e
}

// keyBefore reports whether key a (trie hash ha) sorts before key b (hb)
// in a bucket.
func keyBefore(ha uint64, a string, hb uint64, b string) bool {
	if ha != hb {
		return ha < hb
	}
	return a < b
}

// chunkFor returns the index of the first chunk whose last cell does not
// sort before key k (hash h): where k is, or would go; len(s.chunks) when
// k sorts after every cell.
func (s *cellSet) chunkFor(h uint64, k string) int {
	lo, hi := 0, len(s.chunks)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		ch := s.chunks[m]
		if keyBefore(ch.lastHash, ch.cells[len(ch.cells)-1].key, h, k) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// search returns the position of key k (hash h) in the chunk, or where it
// would go, and whether a cell of that key is there.
func (ch *cellChunk) search(h uint64, k string) (int, bool) {
	lo, hi := 0, len(ch.cells)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if c := ch.cells[m]; keyBefore(trieHash(c.key), c.key, h, k) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(ch.cells) && ch.cells[lo].key == k
}

// editable returns s itself if ed owns it, else a copy ed owns (the chunks
// shared, not copied), with room for extra more chunks. A new editable set
// is recorded in ed for trim.
func (s *cellSet) editable(ed *edit, extra int) *cellSet {
	if s != nil && s.owner == ed {
		return s
	}
	c := &cellSet{owner: ed}
	if s != nil {
		c.chunks = make([]*cellChunk, len(s.chunks), len(s.chunks)+extra)
		copy(c.chunks, s.chunks)
		c.size, c.big = s.size, s.big
	}
	ed.grown = append(ed.grown, c)
	return c
}

// editableChunk makes chunk i of s (which ed owns) one that ed owns, with
// room for one more cell: a copy, if another edit's.
func (s *cellSet) editableChunk(ed *edit, i int) *cellChunk {
	ch := s.chunks[i]
	if ch.owner != ed {
		cells := make([]*cell, len(ch.cells), len(ch.cells)+1)
		copy(cells, ch.cells)
		ch = &cellChunk{owner: ed, cells: cells, lastHash: ch.lastHash}
		s.chunks[i] = ch
	}
	return ch
}

// set returns the set with e added (in chunks, a cell of e's key that is
// not e is replaced by e; see cellSet.big).
func (s *cellSet) set(ed *edit, e *cell) *cellSet {
	if s != nil && s.isBig() {
		if _, ok := s.big.get(e); ok {
			return s
		}
		s = s.editable(ed, 0)
		s.big = s.big.set(ed, e, struct{}{})
		return s
	}
	h := trieHash(e.key)
	if s == nil || len(s.chunks) == 0 {
		s = s.editable(ed, 1)
		s.chunks = append(s.chunks, &cellChunk{owner: ed, cells: []*cell{e}, lastHash: h})
		s.size = 1
		return s
	}
	i := s.chunkFor(h, e.key)
	if i == len(s.chunks) {
		i-- // after every cell: the last chunk's end
	}
	j, found := s.chunks[i].search(h, e.key)
	if found && s.chunks[i].cells[j] == e {
		return s
	}
	s = s.editable(ed, 1)
	ch := s.editableChunk(ed, i)
	if found {
		ch.cells[j] = e
		return s
	}
	ch.cells = slices.Insert(ch.cells, j, e)
	if j == len(ch.cells)-1 {
		ch.lastHash = h
	}
	s.size++
	if len(ch.cells) >= bucketChunkMax {
		s.split(ed, i)
	}
	if s.size > bucketChunkedMax {
		s.toTrie(ed)
	}
	return s
}

// toTrie moves the cells of s (which ed owns) from its chunks into a trie.
func (s *cellSet) toTrie(ed *edit) {
	var t trie[*cell, struct{}]
	for _, ch := range s.chunks {
		for _, e := range ch.cells {
			t = t.set(ed, e, struct{}{})
		}
	}
	s.big, s.chunks, s.size = t, nil, 0
}

// split divides the full chunk i of s (both ed's) into two halves.
func (s *cellSet) split(ed *edit, i int) {
	ch := s.chunks[i]
	half := len(ch.cells) / 2
	second := &cellChunk{owner: ed, cells: slices.Clone(ch.cells[half:]), lastHash: ch.lastHash}
	first := ch.cells[:half] // its room stays for later adds of the batch; trim gives it back
	last := first[len(first)-1]
	ch.cells, ch.lastHash = first, trieHash(last.key)
	s.chunks = slices.Insert(s.chunks, i+1, second)
}

// del returns the set without e, and whether e was in it. An emptied chunk
// goes; a chunk left under a quarter full joins its successor when both fit
// in half a chunk.
func (s *cellSet) del(ed *edit, e *cell) (*cellSet, bool) {
	if s == nil {
		return nil, false
	}
	if s.isBig() {
		// A trie's del copies nothing when e is absent; the nodes it changes
		// in place are ed's, made by this batch for a set ed owns.
		t, ok := s.big.del(ed, e)
		if !ok {
			return s, false
		}
		s = s.editable(ed, 0)
		s.big = t
		return s, true
	}
	h := trieHash(e.key)
	i := s.chunkFor(h, e.key)
	if i == len(s.chunks) {
		return s, false
	}
	j, found := s.chunks[i].search(h, e.key)
	if !found || s.chunks[i].cells[j] != e {
		return s, false
	}
	s = s.editable(ed, 0)
	s.size--
	if len(s.chunks[i].cells) == 1 {
		s.chunks = slices.Delete(s.chunks, i, i+1)
		return s, true
	}
	ch := s.editableChunk(ed, i)
	ch.cells = slices.Delete(ch.cells, j, j+1)
	if j == len(ch.cells) {
		ch.lastHash = trieHash(ch.cells[j-1].key)
	}
	if next := i + 1; len(ch.cells) < bucketChunkMax/4 && next < len(s.chunks) && len(ch.cells)+len(s.chunks[next].cells) <= bucketChunkMax/2 {
		ch.cells = append(ch.cells, s.chunks[next].cells...)
		ch.lastHash = s.chunks[next].lastHash
		s.chunks = slices.Delete(s.chunks, next, next+1)
	}
	return s, true
}

// mapped returns a copy of s that ed owns with every cell replaced by
// fn(cell), which must have the same key (the order stays).
func (s *cellSet) mapped(ed *edit, fn func(e *cell) *cell) *cellSet {
	if s == nil {
		return nil
	}
	c := &cellSet{owner: ed, chunks: make([]*cellChunk, len(s.chunks)), size: s.size}
	if s.isBig() {
		c.big = s.big.mapped(ed, func(e *cell, v struct{}) (*cell, struct{}) { return fn(e), v })
	}
	for i, ch := range s.chunks {
		cells := make([]*cell, len(ch.cells))
		for j, e := range ch.cells {
			cells[j] = fn(e)
		}
		c.chunks[i] = &cellChunk{owner: ed, cells: cells, lastHash: ch.lastHash}
	}
	ed.grown = append(ed.grown, c) // the batch's adds may grow it in place
	return c
}

// hasSpare reports whether s or a chunk of it has room it does not use.
func (s *cellSet) hasSpare() bool {
	if cap(s.chunks) > len(s.chunks) {
		return true
	}
	for _, ch := range s.chunks {
		if cap(ch.cells) > len(ch.cells) {
			return true
		}
	}
	return false
}

// trim drops the spare room of s and of the chunks its edit owns (see
// edit.trim; a chunk of another edit was trimmed when that edit's batch
// was, and may be read).
func (s *cellSet) trim() {
	if cap(s.chunks) > len(s.chunks) {
		s.chunks = exactCopy(s.chunks)
	}
	for _, ch := range s.chunks {
		if ch.owner == s.owner && cap(ch.cells) > len(ch.cells) {
			ch.cells = exactCopy(ch.cells)
		}
	}
}
