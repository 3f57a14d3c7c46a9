package codec

import (
	"fmt"
	"sync/atomic"

	"github.com/klauspost/compress/s2"
)

// dictionary is one S2 dictionary of a Compressed codec: exemplars of the
// objects the codec has seen, concatenated, which the objects are compressed
// against. It never changes once published, except *maxLen.
type dictionary struct {
	id byte // 1–255: the record header that names it
	// s2 decodes, and compresses the objects longer than ownEncodeMax; enc
	// compresses the others (compressed_encoder.go), nil once the
	// dictionary is retired.
	s2  *s2.Dict
	enc *dictEncoder
	// exemplars are the inner encodings the dictionary is made of, in the
	// order they were admitted (sub-slices of one buffer); a rebuild keeps
	// those that still fit.
	exemplars [][]byte
	size      int // bytes of dictionary content
	// maxLen is the longest inner encoding compressed with this dictionary:
	// Decode refuses a block that claims more (it would allocate that much),
	// which only a record changed after its checksum was made can claim. The
	// retired copy of a dictionary shares it: an encode that loaded the
	// dictionary before it was retired may still raise it, and the record it
	// makes is decoded with the retired copy.
	maxLen *atomic.Int64
}

// The shape of a dictionary.
const (
	// maxDictionaryBytes is S2's largest dictionary: its copies reach 64 KiB back.
	maxDictionaryBytes = s2.MaxDictSize
	// admitBelow: a candidate becomes an exemplar only if it compresses to
	// more than this fraction of its size against the exemplars admitted
	// before it (it brings something they lack) ...
	admitBelow = 0.2
	// usefulBelow: ... and if one of the next usefulNeighbours candidates
	// compresses against it alone to less than this fraction of what it
	// compresses to on its own (it has something in common with other
	// objects: random data, keys and certificates do not).
	usefulBelow        = 0.75
	usefulNeighbours   = 4
	minExemplarBytes   = 64
	maxExemplarDivisor = 4 // no exemplar takes more than 1/4 of a dictionary
)

// buildDictionary makes dictionary id from fresh candidates (inner encodings
// the codec just saw, in the order it saw them) and previous, the exemplars of
// the dictionary it replaces (nil for the first). Candidates come first: each
// one is admitted when it brings what the exemplars admitted before it lack
// and has something in common with the candidates after it; then the previous
// exemplars, newest first, while they fit and are not redundant; then, in the
// room left, the candidates that were redundant (more objects of one template
// cover more of the values that vary between them). It returns nil when no
// candidate was worth an exemplar.
func buildDictionary(id byte, candidates, previous [][]byte) *dictionary {
	b := dictionaryBuilder{candidates: candidates, alone: make([]int, len(candidates)), single: dictEncoder{measure: true}}
	var redundant [][]byte
	for i, c := range candidates {
		if !b.fits(c) {
			continue
		}
		if b.brings(c) {
			if b.useful(i) {
				b.add(c)
			}
		} else {
			redundant = append(redundant, c)
		}
	}
	if len(b.exemplars) == 0 {
		return nil
	}
	for i := len(previous) - 1; i >= 0; i-- {
		if b.fits(previous[i]) && b.brings(previous[i]) {
			b.add(previous[i])
		}
	}
	for _, c := range redundant {
		if b.fits(c) {
			b.add(c)
		}
	}
	// The content in a buffer of its size (the builder's has room for 64
	// KiB), with the 16 bytes S2's dictionary wants after it, so that
	// s2.MakeDict keeps it rather than copy it; the builder's encoder, whose
	// table holds the positions of the same content, encodes with it.
	content := make([]byte, 0, b.size+16)
	exemplars := make([][]byte, len(b.exemplars))
	for i, e := range b.exemplars {
		content = append(content, e...)
		exemplars[i] = content[len(content)-len(e):]
	}
	d := s2.MakeDict(content, exemplars[len(exemplars)-1])
	if d == nil {
		panic(fmt.Sprintf("s2.MakeDict refused %d bytes of content", len(content)))
	}
	b.trial.content = content
	b.trial.measure = false
	return &dictionary{id: id, s2: d, enc: b.trial, exemplars: exemplars, size: len(content), maxLen: new(atomic.Int64)}
}

// dictionaryBuilder holds the exemplars admitted so far and an encoder of
// their content to try candidates against, extended on each admission.
type dictionaryBuilder struct {
	candidates [][]byte
	alone      []int // encoded size of each candidate on its own; 0: not yet known

	exemplars [][]byte
	size      int
	trial     *dictEncoder // of the exemplars' content; nil before the first
	single    dictEncoder  // of one candidate (useful's)
	scratch   []byte
}

// fits reports whether c may still be added.
func (b *dictionaryBuilder) fits(c []byte) bool {
	return len(c) >= minExemplarBytes && len(c) <= maxDictionaryBytes/maxExemplarDivisor && b.size+len(c) <= maxDictionaryBytes
}

// brings reports whether c compresses poorly against the exemplars.
func (b *dictionaryBuilder) brings(c []byte) bool {
	if b.trial == nil {
		return true
	}
	b.scratch = b.trial.encode(b.scratch[:0], c)
	return float64(len(b.scratch)) > admitBelow*float64(len(c))
}

// useful reports whether one of the candidates after candidate i compresses
// well against it.
func (b *dictionaryBuilder) useful(i int) bool {
	c := b.candidates[i]
	b.single.reset(c, dictBucketBitsFor(len(c))) // a table sized to the candidate
	for k := 1; k <= usefulNeighbours && k < len(b.candidates); k++ {
		j := (i + k) % len(b.candidates)
		n := b.candidates[j]
		if b.alone[j] == 0 {
			b.scratch = measureNoDictionary.encode(b.scratch[:0], n)
			b.alone[j] = len(b.scratch)
		}
		b.scratch = b.single.encode(b.scratch[:0], n)
		if float64(len(b.scratch)) < usefulBelow*float64(b.alone[j]) {
			return true
		}
	}
	return false
}

// add admits c: it is appended to the trial encoder's content, whose table
// gains its positions (the dictionary is not made again).
func (b *dictionaryBuilder) add(c []byte) {
	b.exemplars = append(b.exemplars, c)
	b.size += len(c)
	if b.trial == nil {
		b.trial = newDictEncoder(make([]byte, 0, maxDictionaryBytes), dictBucketBits)
		b.trial.measure = true
	}
	b.trial.extend(c)
}

// retired returns d as a dictionary for decoding only: the same content
// without d's encoder (its table: 64 KiB) or S2's (32 KiB, made by its first
// Encode), and no exemplars; its bound (maxLen) is d's own.
func (d *dictionary) retired() *dictionary {
	return &dictionary{id: d.id, s2: s2.NewDict(d.s2.Bytes()), size: d.size, maxLen: d.maxLen}
}

// ownEncodeMax is the longest inner encoding compress gives the package's
// encoder (compressed_encoder.go); longer ones go to S2's Encode, whose 64
// KiB table zeroed per call (about 1.3 µs) is paid back by a faster loop.
// Measured on the package's corpora in the order a list delivers them (the
// first n bytes of each object, against the dictionary the codec ends with):
// the package's encoder is the faster up to about 128 bytes (116-byte
// objects: 0.4 µs against 1.5), S2's from about 200 (768 bytes of the bench
// pods: 2.4 µs against 1.7; 4 KB of the realistic ones: 11.8 against 4.1),
// for the package's tries four dictionary positions per hash and lazy
// matches to compress within 3% of S2 without its repeat codes.
const ownEncodeMax = 128

// compress returns the S2 block of src compressed against d, in dst's
// storage when it is large enough (dst's length is ignored), and records
// src's length for Decode's bound. d must be current (not retired).
func (d *dictionary) compress(dst, src []byte) []byte {
	for n := int64(len(src)); ; {
		cur := d.maxLen.Load()
		if n <= cur || d.maxLen.CompareAndSwap(cur, n) {
			break
		}
	}
	if len(src) <= ownEncodeMax {
		return d.enc.encode(dst[:0], src)
	}
	return d.s2.Encode(dst, src)
}

// decompress returns the inner encoding of block, a new slice.
func (d *dictionary) decompress(block []byte) ([]byte, error) {
	n, err := s2.DecodedLen(block)
	if err != nil {
		return nil, fmt.Errorf("%w: dictionary %d: %w", ErrCorrupt, d.id, err)
	}
	if int64(n) > d.maxLen.Load() {
		return nil, fmt.Errorf("%w: dictionary %d: a block of %d bytes, longer than any compressed with it (%d)",
			ErrCorrupt, d.id, n, d.maxLen.Load())
	}
	out, err := d.s2.Decode(nil, block)
	if err != nil {
		return nil, fmt.Errorf("%w: dictionary %d: %w", ErrCorrupt, d.id, err)
	}
	return out, nil
}
