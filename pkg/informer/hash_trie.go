package informer

import (
	"hash/maphash"
	"math/bits"
	"slices"
)

// trie is a persistent (immutable) map from keys K to V: a compressed
// hash-array mapped prefix tree (CHAMP; Steindorfer and Vinju, OOPSLA 2015),
// the structure of the Indexer's indexes (see segmentTable).
//
// A trie value is never modified once published: set and del return a new
// trie that shares every untouched node with the old one and copies the path
// to the changed entry (O(log32 n) nodes). Readers of an old trie are thus
// never disturbed by a writer, and need no lock.
//
// Writes take an *edit token: nodes created under the same token are changed
// in place instead of copied again, so a batch of writes under one token (a
// Replace, or the several index updates of one Add) copies each node at most
// once. A token must not be used again once the trie built with it has been
// published to readers.
type trie[K trieKey, V any] struct {
	root *trieNode[K, V]
	size int
}

// edit marks the nodes that one batch of writes owns. It also keeps the
// nodes the batch grew in place (appending to a node it owns leaves spare
// room), so that trim can give the room back before the trie is published.
type edit struct {
	grown []trimmable
}

// trimmable is a trie node of any value type, or a bucket (bucket.go).
type trimmable interface {
	trim()
	hasSpare() bool
}

// trim drops the spare capacity of every node the token's writes grew in
// place. Call it once the batch's writes are done, before publishing.
func (ed *edit) trim() {
	for _, n := range ed.grown {
		n.trim()
	}
	ed.grown = nil
}

// grew records that n, which ed owned before the write, was grown in place
// if its capacity changed from dataCap/nodesCap.
func (ed *edit) grew(n trimmable, dataCap, nodesCap, newDataCap, newNodesCap int) {
	if dataCap != newDataCap || nodesCap != newNodesCap {
		ed.grown = append(ed.grown, n)
	}
}

// trieEntry is one key/value pair. The key's hash is not kept (it is
// recomputed in the rare case an entry moves down a level): every byte of a
// node is copied on each write that passes through it. With V struct{} (a
// set), an entry is its key alone: val comes first, since Go pads a struct
// that ends in a zero-size field (a pointer to it must not point past the
// struct).
type trieEntry[K trieKey, V any] struct {
	val V
	key K
}

// trieKey is a trie's key: compared with ==, hashed by trieHash (64 well
// mixed bits; equal keys hash equally). Tests use colliding hashes.
type trieKey interface {
	comparable
	trieHash() uint64
}

// indexValue is an index value as the key of an index's trie of buckets.
type indexValue string

func (v indexValue) trieHash() uint64 { return trieHash(string(v)) }

// trieNode holds up to 32 slots, each empty, an entry (dataMap bit set) or a
// sub-node (nodeMap bit set); data and nodes are dense, ordered by slot. A
// node below the hash's last bits (shift ≥ 64) is a collision node: data
// holds every entry, compared by key.
type trieNode[K trieKey, V any] struct {
	dataMap uint32
	nodeMap uint32
	owner   *edit
	data    []trieEntry[K, V]
	nodes   []*trieNode[K, V]
}

const (
	trieBits  = 5
	trieMask  = 1<<trieBits - 1
	hashWidth = 64
)

var trieSeed = maphash.MakeSeed()

func trieHash(key string) uint64 { return maphash.String(trieSeed, key) }

// Len returns the number of entries.
func (t trie[K, V]) Len() int { return t.size }

// get returns the value stored under key.
func (t trie[K, V]) get(key K) (V, bool) {
	if e := t.find(key); e != nil {
		return e.val, true
	}
	var zero V
	return zero, false
}

// find returns the entry of key (its key as stored, which is == key but may
// be another string of the same bytes, and its value), or nil.
func (t trie[K, V]) find(key K) *trieEntry[K, V] {
	if t.root == nil {
		return nil
	}
	return t.root.find(key, key.trieHash())
}

// find looks key, whose hash is h, up in the sub-trie rooted at n.
func (n *trieNode[K, V]) find(key K, h uint64) *trieEntry[K, V] {
	for shift := uint(0); ; shift += trieBits {
		if shift >= hashWidth {
			for i := range n.data {
				if n.data[i].key == key {
					return &n.data[i]
				}
			}
			return nil
		}
		bit := uint32(1) << ((h >> shift) & trieMask)
		switch {
		case n.dataMap&bit != 0:
			if e := &n.data[slot(n.dataMap, bit)]; e.key == key {
				return e
			}
			return nil
		case n.nodeMap&bit != 0:
			n = n.nodes[slot(n.nodeMap, bit)]
		default:
			return nil
		}
	}
}

// set returns a trie with key mapped to val.
func (t trie[K, V]) set(ed *edit, key K, val V) trie[K, V] {
	root := t.root
	if root == nil {
		root = &trieNode[K, V]{owner: ed}
	}
	root, added := root.set(ed, trieEntry[K, V]{key: key, val: val}, key.trieHash(), 0)
	if added {
		t.size++
	}
	t.root = root
	return t
}

// del returns a trie without key, and whether key was present.
func (t trie[K, V]) del(ed *edit, key K) (trie[K, V], bool) {
	if t.root == nil {
		return t, false
	}
	root, removed := t.root.del(ed, key, key.trieHash(), 0)
	if !removed {
		return t, false
	}
	t.root = root
	t.size--
	return t, true
}

// each calls fn for every entry until fn returns false.
func (t trie[K, V]) each(fn func(key K, val V) bool) {
	if t.root != nil {
		t.root.each(fn)
	}
}

func (n *trieNode[K, V]) each(fn func(key K, val V) bool) bool {
	for i := range n.data {
		if !fn(n.data[i].key, n.data[i].val) {
			return false
		}
	}
	for _, c := range n.nodes {
		if !c.each(fn) {
			return false
		}
	}
	return true
}

// mapped returns a trie of the entries fn(key, val) of t's, in nodes that
// ed owns (so that later writes under ed change them in place): t's shape
// copied node by node, no key hashed, so fn must return a key that hashes
// as the one it was given. t is not changed.
func (t trie[K, V]) mapped(ed *edit, fn func(key K, val V) (K, V)) trie[K, V] {
	if t.root != nil {
		t.root = t.root.mapped(ed, fn)
	}
	return t
}

func (n *trieNode[K, V]) mapped(ed *edit, fn func(key K, val V) (K, V)) *trieNode[K, V] {
	m := &trieNode[K, V]{dataMap: n.dataMap, nodeMap: n.nodeMap, owner: ed}
	if len(n.data) > 0 {
		m.data = make([]trieEntry[K, V], len(n.data))
		for i, e := range n.data {
			k, v := fn(e.key, e.val)
			m.data[i] = trieEntry[K, V]{key: k, val: v}
		}
	}
	if len(n.nodes) > 0 {
		m.nodes = make([]*trieNode[K, V], len(n.nodes))
		for i, c := range n.nodes {
			m.nodes[i] = c.mapped(ed, fn)
		}
	}
	return m
}

// slot is the dense index of bit in a bitmap.
func slot(bitmap, bit uint32) int { return bits.OnesCount32(bitmap & (bit - 1)) }

// editable returns n itself if ed owns it, else a copy that ed owns.
func (n *trieNode[K, V]) editable(ed *edit) *trieNode[K, V] { return n.editableFor(ed, 0, 0) }

// editableFor is editable for a write that will add extraData entries and
// extraNodes sub-nodes (0 or 1 each): a copy gets exactly that much room, so
// that the write leaves it full and commit has nothing to trim (a copy with
// spare room would be copied a second time there). A node ed owns already
// grows by appending.
func (n *trieNode[K, V]) editableFor(ed *edit, extraData, extraNodes int) *trieNode[K, V] {
	if n.owner == ed {
		return n
	}
	m := &trieNode[K, V]{dataMap: n.dataMap, nodeMap: n.nodeMap, owner: ed}
	if len(n.data)+extraData > 0 {
		m.data = make([]trieEntry[K, V], len(n.data), len(n.data)+extraData)
		copy(m.data, n.data)
	}
	if len(n.nodes)+extraNodes > 0 {
		m.nodes = make([]*trieNode[K, V], len(n.nodes), len(n.nodes)+extraNodes)
		copy(m.nodes, n.nodes)
	}
	return m
}

// pushDown returns n, or a copy ed owns, with its entry at data index i
// replaced by the sub-node sub at slot bit.
func (n *trieNode[K, V]) pushDown(ed *edit, i int, bit uint32, sub *trieNode[K, V]) *trieNode[K, V] {
	at := slot(n.nodeMap, bit)
	if n.owner == ed {
		n.data = slices.Delete(n.data, i, i+1)
		n.nodes = slices.Insert(n.nodes, at, sub)
		ed.spare(n)
	} else {
		m := &trieNode[K, V]{dataMap: n.dataMap, nodeMap: n.nodeMap, owner: ed}
		if len(n.data) > 1 {
			m.data = make([]trieEntry[K, V], 0, len(n.data)-1)
			m.data = append(append(m.data, n.data[:i]...), n.data[i+1:]...)
		}
		m.nodes = make([]*trieNode[K, V], 0, len(n.nodes)+1)
		m.nodes = append(append(append(m.nodes, n.nodes[:at]...), sub), n.nodes[at:]...)
		n = m
	}
	n.dataMap &^= bit
	n.nodeMap |= bit
	return n
}

// set stores e, whose key hashes to h, in the sub-trie at shift rooted at n.
func (n *trieNode[K, V]) set(ed *edit, e trieEntry[K, V], h uint64, shift uint) (*trieNode[K, V], bool) {
	if shift >= hashWidth {
		for i := range n.data {
			if n.data[i].key == e.key {
				m := n.editable(ed)
				m.data[i] = e
				return m, false
			}
		}
		m := n.editableFor(ed, 1, 0)
		c := cap(m.data)
		m.data = append(m.data, e)
		if m == n {
			ed.grew(m, c, 0, cap(m.data), 0)
		}
		return m, true
	}
	bit := uint32(1) << ((h >> shift) & trieMask)
	switch {
	case n.dataMap&bit != 0:
		i := slot(n.dataMap, bit)
		if n.data[i].key == e.key {
			m := n.editable(ed)
			m.data[i] = e
			return m, false
		}
		// Two keys share this slot: push both down into a sub-node.
		sub := pair(ed, n.data[i], n.data[i].key.trieHash(), e, h, shift+trieBits)
		return n.pushDown(ed, i, bit, sub), true
	case n.nodeMap&bit != 0:
		j := slot(n.nodeMap, bit)
		child := n.nodes[j]
		c, added := child.set(ed, e, h, shift+trieBits)
		if c == child {
			return n, added // changed in place: n is owned by ed as well
		}
		m := n.editable(ed)
		m.nodes[j] = c
		return m, added
	default:
		m := n.editableFor(ed, 1, 0)
		c := cap(m.data)
		m.data = slices.Insert(m.data, slot(m.dataMap, bit), e)
		m.dataMap |= bit
		if m == n {
			ed.grew(m, c, 0, cap(m.data), 0)
		}
		return m, true
	}
}

// pair builds the sub-node at shift holding entries a and b (with hashes ha
// and hb).
func pair[K trieKey, V any](ed *edit, a trieEntry[K, V], ha uint64, b trieEntry[K, V], hb uint64, shift uint) *trieNode[K, V] {
	if shift >= hashWidth {
		return &trieNode[K, V]{owner: ed, data: []trieEntry[K, V]{a, b}}
	}
	ia, ib := (ha>>shift)&trieMask, (hb>>shift)&trieMask
	if ia == ib {
		return &trieNode[K, V]{owner: ed, nodeMap: 1 << ia, nodes: []*trieNode[K, V]{pair(ed, a, ha, b, hb, shift+trieBits)}}
	}
	if ia > ib {
		a, b = b, a
	}
	return &trieNode[K, V]{owner: ed, dataMap: 1<<ia | 1<<ib, data: []trieEntry[K, V]{a, b}}
}

func (n *trieNode[K, V]) del(ed *edit, key K, h uint64, shift uint) (*trieNode[K, V], bool) {
	if shift >= hashWidth {
		for i := range n.data {
			if n.data[i].key == key {
				return n.withoutData(ed, i), true
			}
		}
		return n, false
	}
	bit := uint32(1) << ((h >> shift) & trieMask)
	switch {
	case n.dataMap&bit != 0:
		i := slot(n.dataMap, bit)
		if n.data[i].key != key {
			return n, false
		}
		m := n.withoutData(ed, i)
		m.dataMap &^= bit
		return m, true
	case n.nodeMap&bit != 0:
		j := slot(n.nodeMap, bit)
		child := n.nodes[j]
		c, removed := child.del(ed, key, h, shift+trieBits)
		if !removed {
			return n, false
		}
		if c.nodeMap == 0 && len(c.data) == 1 {
			// Keep the trie canonical: a lone entry moves up into this node.
			var m *trieNode[K, V]
			if n.owner == ed {
				m = n
				m.nodes = slices.Delete(m.nodes, j, j+1)
			} else {
				// A copy of exactly the size it ends with: nothing to trim.
				m = &trieNode[K, V]{dataMap: n.dataMap, nodeMap: n.nodeMap, owner: ed,
					data: make([]trieEntry[K, V], len(n.data), len(n.data)+1), nodes: without(n.nodes, j)}
				copy(m.data, n.data)
			}
			m.nodeMap &^= bit
			m.data = slices.Insert(m.data, slot(m.dataMap, bit), c.data[0])
			m.dataMap |= bit
			ed.spare(m)
			return m, true
		}
		if c == child {
			return n, true
		}
		m := n.editable(ed)
		m.nodes[j] = c
		return m, true
	default:
		return n, false
	}
}

// withoutData returns n without its data entry i: n itself, changed in place,
// if ed owns it (the room left is recorded for trim), else a copy ed owns of
// exactly the size it ends with, so that commit has nothing to trim.
func (n *trieNode[K, V]) withoutData(ed *edit, i int) *trieNode[K, V] {
	if n.owner == ed {
		n.data = slices.Delete(n.data, i, i+1)
		ed.spare(n)
		return n
	}
	return &trieNode[K, V]{dataMap: n.dataMap, nodeMap: n.nodeMap, owner: ed,
		data: without(n.data, i), nodes: exactCopy(n.nodes)}
}

// without returns a copy of s without element i and with no spare
// capacity, nil if nothing is left.
func without[T any](s []T, i int) []T {
	if len(s) == 1 {
		return nil
	}
	out := make([]T, 0, len(s)-1)
	return append(append(out, s[:i]...), s[i+1:]...)
}

// spare records n for trim if it has spare capacity (left by a delete).
func (ed *edit) spare(n trimmable) {
	if n.hasSpare() {
		ed.grown = append(ed.grown, n)
	}
}

// hasSpare reports whether n has room it does not use.
func (n *trieNode[K, V]) hasSpare() bool {
	return cap(n.data) > len(n.data) || cap(n.nodes) > len(n.nodes)
}

// trim drops n's spare capacity (room left by appending in place).
func (n *trieNode[K, V]) trim() {
	if cap(n.data) > len(n.data) {
		n.data = exactCopy(n.data)
	}
	if cap(n.nodes) > len(n.nodes) {
		n.nodes = exactCopy(n.nodes)
	}
}

// exactCopy returns a copy of s with no spare capacity (slices.Clone may
// round the capacity up to the allocator's size class), nil if s is empty.
func exactCopy[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	c := make([]T, len(s))
	copy(c, s)
	return c
}
