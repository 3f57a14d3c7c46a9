package codec

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"sync"

	"github.com/klauspost/compress/s2"
)

// dictEncoder compresses inputs into S2 blocks against a dictionary's
// content: blocks that s2.(*Dict).Decode decodes with the s2.Dict of the same
// content (s2.Decode when there is none), so that records keep S2's format.
// s2.(*Dict).Encode declares its table of the input's positions as a 64 KiB
// array, zeroed on every call: most of the time of an encode of a few hundred
// bytes (about 1.5 µs for 116 bytes). Here that table is sized to the input,
// pooled, and cleared only as far as it is used; and the dictionary's table
// grows as content is appended, so that the exemplars a dictionary is built
// of are tried as they are admitted, not made into a new S2 dictionary (a new
// table, the whole content hashed) after each one. The dictionary builder
// measures with it, and compress uses it for small objects
// (compressed_dictionary.go: S2's loop is faster on larger ones).
//
// It writes literals and copies only, no repeat codes (S2's copies at the
// decoder's last offset). Those are what S2 saves over it on objects of one
// template: a run of 216 bytes equal to the dictionary's is a 3-byte repeat
// code after a copy, or four 64-byte copies of 3 bytes here. It makes up for
// them by matching harder than S2's Encode, and compresses the package's
// corpora to within 3% of it on the same dictionary (better on the realistic
// ones; compressed_encoder_test.go), at two to three times its time per byte.
//
// Matching is greedy, as Snappy's. At each position a hash of 4 bytes finds
// a candidate earlier in the input and four in the content, and the offsets
// of the last two copies are tried (an object that differs from its exemplar
// in a few bytes goes on matching it after them); the longest match wins,
// unless the next position starts a longer one. It is extended backward over
// the pending literals and written as copies of at most 64 bytes. A run of
// positions without a match lengthens the step (random data is skipped
// through).
//
// A dictEncoder is safe for concurrent use once its content no longer grows:
// encode only reads it. The zero value encodes with no dictionary.
type dictEncoder struct {
	// content is the dictionary's content, at most maxDictionaryBytes.
	content []byte
	// buckets hold the last 4 content positions of each hash of the 4 bytes
	// there, 16 bits each (the content is at most 64 KiB), the latest in the
	// low bits; 1<<bucketBits of them, none without content. Every position
	// below hashed has been entered.
	buckets    []uint64
	bucketBits uint
	hashed     int
	// measure makes the encoder the dictionary builder's, whose block sizes
	// decide which objects become exemplars and are not kept: no lazy
	// matching, and a step that grows 8 times as fast over literals (a
	// quarter less of the builder's time on the realistic pods, two thirds
	// less on the ConfigMaps, and dictionaries that compress as well).
	measure bool
}

// The encoder's parameters, chosen on the package's corpora (bytes against
// S2's Encode on the same dictionary, and time).
const (
	// dictBucketBits sizes the table of a full dictionary: 8,192 buckets of
	// 4 positions, 64 KiB. Templated objects share most of their bytes: the
	// latest position of 4 bytes is seldom the one that matches longest.
	dictBucketBits = 13
	// The table of an input's own positions has the next power of two at
	// least its length of entries, within these bounds (256 bytes to 64 KiB
	// of uint32s).
	minSrcTableBits = 6
	maxSrcTableBits = 14
	// minMatch is the shortest copy; minFarMatch the shortest from an
	// offset beyond 16 bits, a 5-byte copy.
	minMatch    = 4
	minFarMatch = 8
	// lazyBelow: a match shorter than this gives way to a longer one at the
	// next position (by more than the byte it leaves as a literal).
	lazyBelow = 16
	// skipLog: each 1<<skipLog positions without a match lengthen the step;
	// measureSkipLog the same when measuring.
	skipLog        = 5
	measureSkipLog = 2
	// dictEnd: a copy from the dictionary must start at output position
	// s2.MaxDictSrcOffset at the latest, and so must each 64-byte copy a
	// match is written as: matches in the dictionary end by dictEnd.
	dictEnd = s2.MaxDictSrcOffset + 1
)

// dictBucketBitsFor returns the bucket bits of a table of n bytes of content:
// about a position per byte, at most dictBucketBits.
func dictBucketBitsFor(n int) uint {
	return uint(min(max(bits.Len(uint(n-1))-2, minSrcTableBits), dictBucketBits))
}

// newDictEncoder returns an encoder of content, with 1<<bucketBits buckets
// of positions. It keeps content, not a copy: the caller must not modify it.
func newDictEncoder(content []byte, bucketBits uint) *dictEncoder {
	e := &dictEncoder{}
	e.reset(content, bucketBits)
	return e
}

// reset makes e the encoder of content with 1<<bucketBits buckets, reusing
// e's table if it is large enough.
func (e *dictEncoder) reset(content []byte, bucketBits uint) {
	if len(content) > maxDictionaryBytes {
		panic("dictEncoder: content longer than an S2 dictionary")
	}
	if n := 1 << bucketBits; cap(e.buckets) >= n {
		e.buckets = e.buckets[:n]
		clear(e.buckets)
	} else {
		e.buckets = make([]uint64, n)
	}
	e.bucketBits, e.content, e.hashed = bucketBits, content, 0
	e.hashContent()
}

// extend appends b to the content (in place when its capacity allows) and
// enters the positions it completes into the table.
func (e *dictEncoder) extend(b []byte) {
	if len(e.content)+len(b) > maxDictionaryBytes {
		panic("dictEncoder: content longer than an S2 dictionary")
	}
	e.content = append(e.content, b...)
	e.hashContent()
}

// hashContent enters the positions from hashed on that have 4 bytes of
// content, in order: a table extended piece by piece is the table of the
// whole content made at once.
func (e *dictEncoder) hashContent() {
	c, shift := e.content, 32-e.bucketBits
	i := e.hashed
	for ; i+minMatch <= len(c); i++ {
		b := &e.buckets[hash4(load32(c, i))>>shift]
		*b = *b<<16 | uint64(i)
	}
	e.hashed = i
}

// measureNoDictionary measures an input compressed on its own, without a
// dictionary (s2.Decode decodes its blocks), for the dictionary builder.
var measureNoDictionary = dictEncoder{measure: true}

// srcTables pools the tables of inputs' positions, a pool per size:
// srcTables[k] holds *[]uint32 of 1<<(minSrcTableBits+k) entries.
var srcTables [maxSrcTableBits - minSrcTableBits + 1]sync.Pool

// srcTableBits returns log2 of the entries of the table of an input of n
// bytes.
func srcTableBits(n int) uint {
	return uint(min(max(bits.Len(uint(n-1)), minSrcTableBits), maxSrcTableBits))
}

// encode appends to dst the S2 block of src against e's content (src's
// length as a uvarint, then literals and copies) and returns it. The block
// depends on src and the content only. src must be shorter than 4 GiB, S2's
// bound on a block.
func (e *dictEncoder) encode(dst, src []byte) []byte {
	// A block is at most 1/61 longer than src and its header (a literal of
	// 61 bytes or more has a 2-byte tag, a copy is shorter than its bytes).
	dst = slices.Grow(dst, len(src)+len(src)/32+16)
	dst = binary.AppendUvarint(dst, uint64(len(src)))
	if len(src) < 16 {
		if len(src) > 0 {
			dst = appendLiteral(dst, src)
		}
		return dst
	}
	tableBits := srcTableBits(len(src))
	pool := &srcTables[tableBits-minSrcTableBits]
	tp, _ := pool.Get().(*[]uint32)
	if tp == nil {
		t := make([]uint32, 1<<tableBits)
		tp = &t
	} else {
		clear(*tp)
	}
	m := matcher{e: e, src: src, table: *tp, shift: 32 - tableBits, sLimit: len(src) - 8, dictLimit: -1}
	if len(e.content) >= minMatch {
		m.dictLimit = dictEnd - minMatch
	}
	dst = m.encode(dst)
	pool.Put(tp)
	return dst
}

// matcher is the state of one encode.
type matcher struct {
	e     *dictEncoder
	src   []byte
	table []uint32 // src's positions by hash4>>shift, the latest; zeroed first
	shift uint
	// sLimit is the last position tried (8 bytes are read there), dictLimit
	// the last a match in the dictionary may start at (-1: no dictionary).
	sLimit, dictLimit int
	last              [2]int // the offsets of the last two copies, latest first; 0: none
}

// encode appends the literals and copies of m.src to dst.
func (m *matcher) encode(dst []byte) []byte {
	src, dict := m.src, m.e.content
	s, lit := 0, 0 // lit: the first byte not yet written
	for {
		var cv uint32
		var cand int
		var bkt uint64
		if s, cv, cand, bkt = m.scan(s, lit); s > m.sLimit {
			break
		}
		n, offset, from := m.best(s, cv, cand, bkt)
		if n < lazyBelow && s+1 <= m.sLimit && !m.e.measure {
			cv1, cand1, bkt1 := m.enter(s + 1)
			if n1, offset1, from1 := m.best(s+1, cv1, cand1, bkt1); n1 > n+1 {
				s, n, offset, from = s+1, n1, offset1, from1
			}
		}
		if n == 0 { // only a far candidate, too short for its 5-byte copy
			s++
			continue
		}

		// Extend backward over the pending literals: the offset stays.
		base := s
		if from >= 0 {
			for base > lit && from > 0 && src[from-1] == src[base-1] {
				from--
				base--
			}
		} else {
			for p := -1 - from; base > lit && p > 0 && dict[p-1] == src[base-1]; p-- {
				base--
			}
		}
		n += s - base
		// 64k+1 or 64k+2 bytes take one more copy (3 bytes) than 64k: the
		// first one or two are cheaper as literals, after pending ones.
		if r := n % 64; n > 64 && (r == 1 || r == 2 && base > lit) {
			base, n = base+r, n-r
		}
		if base > lit {
			dst = appendLiteral(dst, src[lit:base])
		}
		dst = appendCopy(dst, offset, n)
		if offset != m.last[0] {
			m.last = [2]int{offset, m.last[0]}
		}
		s = base + n
		lit = s
		// The two positions before the next: matches that overlap this
		// one's end.
		for i := max(s-2, base+1); i < s && i+minMatch <= len(src); i++ {
			m.table[hash4(load32(src, i))>>m.shift] = uint32(i)
		}
	}
	if lit < len(src) {
		dst = appendLiteral(dst, src[lit:])
	}
	return dst
}

// enter returns the 4 bytes at s, the position src's table had for them,
// and their bucket of the dictionary (0 where no match in it may start); s
// takes the table's entry.
func (m *matcher) enter(s int) (cv uint32, cand int, bkt uint64) {
	cv = load32(m.src, s)
	h := hash4(cv)
	cand = int(m.table[h>>m.shift])
	m.table[h>>m.shift] = uint32(s)
	if s <= m.dictLimit {
		bkt = m.e.buckets[h>>(32-m.e.bucketBits)]
	}
	return cv, cand, bkt
}

// scan returns the first position from s where a candidate matches 4 bytes,
// as enter's results there, or a position past sLimit. Positions are tried
// two at a time, their tables read together.
func (m *matcher) scan(s, lit int) (int, uint32, int, uint64) {
	src, table, shift := m.src, m.table, m.shift
	buckets, dshift := m.e.buckets, 32-m.e.bucketBits
	for s < m.sLimit {
		cv := load64(src, s)
		x0, x1 := uint32(cv), uint32(cv>>8)
		h0, h1 := hash4(x0), hash4(x1)
		c0 := int(table[h0>>shift])
		table[h0>>shift] = uint32(s)
		c1 := int(table[h1>>shift])
		var b0, b1 uint64
		if s <= m.dictLimit {
			b0 = buckets[h0>>dshift]
		}
		if s+1 <= m.dictLimit {
			b1 = buckets[h1>>dshift]
		}
		if m.hit(s, x0, c0, b0) {
			return s, x0, c0, b0
		}
		table[h1>>shift] = uint32(s + 1)
		if m.hit(s+1, x1, c1, b1) {
			return s + 1, x1, c1, b1
		}
		if m.e.measure {
			s += 2 + (s-lit)>>measureSkipLog
		} else {
			s += 2 + (s-lit)>>skipLog
		}
	}
	return m.sLimit + 1, 0, 0, 0
}

// hit reports whether a candidate at s matches the 4 bytes cv there: at the
// last copies' offsets, src's (cand), or the dictionary's (bkt).
func (m *matcher) hit(s int, cv uint32, cand int, bkt uint64) bool {
	src, dict := m.src, m.e.content
	if cand < s && load32(src, cand) == cv {
		return true
	}
	if s <= m.dictLimit && (load32(dict, int(uint16(bkt))) == cv || load32(dict, int(uint16(bkt>>16))) == cv ||
		load32(dict, int(uint16(bkt>>32))) == cv || load32(dict, int(bkt>>48)) == cv) {
		return true
	}
	for _, o := range m.last {
		switch {
		case o == 0:
		case o <= s:
			if load32(src, s-o) == cv {
				return true
			}
		case s <= m.dictLimit:
			if p := len(dict) - o + s; p >= 0 && p+minMatch <= len(dict) && load32(dict, p) == cv {
				return true
			}
		}
	}
	return false
}

// best returns the longest match at s (s+8 <= len(src)) of at least minMatch
// bytes, or n = 0: its length, offset, and where it is (from >= 0: in src;
// else in the dictionary at -1-from). cv, cand and bkt are enter's results
// at s. A candidate is extended only if it matches the byte at the best
// length so far (else it cannot be longer).
func (m *matcher) best(s int, cv uint32, cand int, bkt uint64) (n, offset, from int) {
	src, dict := m.src, m.e.content
	rest := src[s:]
	dictOK := s <= m.dictLimit
	for _, o := range m.last {
		switch {
		case o == 0 || o == offset:
		case o <= s:
			c := s - o
			if load32(src, c) != cv || n > 0 && (n >= len(rest) || src[c+n] != rest[n]) {
				continue
			}
			if l := minMatch + matchLength(src[c+minMatch:], rest[minMatch:]); l > n {
				n, offset, from = l, o, c
			}
		case dictOK:
			p := len(dict) - o + s
			if p < 0 || p+minMatch > len(dict) || load32(dict, p) != cv ||
				n > 0 && (n >= len(rest) || p+n >= len(dict) || dict[p+n] != rest[n]) {
				continue
			}
			l := min(minMatch+matchLength(dict[p+minMatch:], rest[minMatch:]), dictEnd-s)
			if l > n && (o <= 0xffff || l >= minFarMatch) {
				n, offset, from = l, o, -1-p
			}
		}
	}
	// In src, at offset s-cand.
	if cand < s && s-cand != offset && load32(src, cand) == cv && (n == 0 || n < len(rest) && src[cand+n] == rest[n]) {
		if l := minMatch + matchLength(src[cand+minMatch:], rest[minMatch:]); l > n {
			n, offset, from = l, s-cand, cand
		}
	}
	// In the dictionary at p, at offset len(dict)-p+s: the same for every
	// byte of the copy.
	if dictOK {
		for k := 0; k < 4; k, bkt = k+1, bkt>>16 {
			p := int(uint16(bkt))
			if load32(dict, p) != cv || n > 0 && (n >= len(rest) || p+n >= len(dict) || dict[p+n] != rest[n]) {
				continue
			}
			l := min(minMatch+matchLength(dict[p+minMatch:], rest[minMatch:]), dictEnd-s)
			if o := len(dict) - p + s; l > n && (o <= 0xffff || l >= minFarMatch) {
				n, offset, from = l, o, -1-p
			}
		}
	}
	return n, offset, from
}

// hash4 hashes 4 bytes; its high bits index the tables.
func hash4(u uint32) uint32 {
	return u * 0x9E3779B1 // 2^32 / φ
}

// matchLength returns how many bytes a and b have in common from their start.
func matchLength(a, b []byte) int {
	n := 0
	for len(a)-n >= 8 && len(b)-n >= 8 {
		if x := load64(a, n) ^ load64(b, n); x != 0 {
			return n + bits.TrailingZeros64(x)>>3
		}
		n += 8
	}
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// appendLiteral appends a literal of b (not empty): a tag of length-1 in its
// upper 6 bits below 60, else 60 to 63 for the 1 to 4 bytes of length-1
// after it; then the bytes.
func appendLiteral(dst, b []byte) []byte {
	n := uint32(len(b) - 1)
	switch {
	case n < 60:
		dst = append(dst, byte(n)<<2)
	case n < 1<<8:
		dst = append(dst, 60<<2, byte(n))
	case n < 1<<16:
		dst = append(dst, 61<<2, byte(n), byte(n>>8))
	case n < 1<<24:
		dst = append(dst, 62<<2, byte(n), byte(n>>8), byte(n>>16))
	default:
		dst = append(dst, 63<<2, byte(n), byte(n>>8), byte(n>>16), byte(n>>24))
	}
	return append(dst, b...)
}

// appendCopy appends a copy of length (at least minMatch) bytes from offset
// (at least 1) back, as copies of at most 64 bytes, the longest S2 copy but
// a repeat code; the last one of at least minMatch bytes, so that it may take
// the 2-byte form.
func appendCopy(dst []byte, offset, length int) []byte {
	for length > 64 {
		n := 64
		if length < 64+minMatch {
			n = length - minMatch
		}
		dst = appendCopyPiece(dst, offset, n)
		length -= n
	}
	return appendCopyPiece(dst, offset, length)
}

// appendCopyPiece appends a copy of 1 to 64 bytes from offset back, never 0
// (a copy1 of offset 0 is a repeat code): 2 bytes for 4 to 11 within 2047
// (tag 1, the offset's high 3 bits and length-4 in the tag), else 3 within
// 65535 (tag 2, length-1 in the tag, a 16-bit offset), else 5 (tag 3, a
// 32-bit offset).
func appendCopyPiece(dst []byte, offset, length int) []byte {
	switch {
	case length >= 4 && length <= 11 && offset < 2048:
		return append(dst, byte(offset>>8)<<5|byte(length-4)<<2|1, byte(offset))
	case offset <= 0xffff:
		return append(dst, byte(length-1)<<2|2, byte(offset), byte(offset>>8))
	default:
		return append(dst, byte(length-1)<<2|3, byte(offset), byte(offset>>8), byte(offset>>16), byte(offset>>24))
	}
}

func load32(b []byte, i int) uint32 { return binary.LittleEndian.Uint32(b[i:]) }
func load64(b []byte, i int) uint64 { return binary.LittleEndian.Uint64(b[i:]) }
