package codec

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
)

// Codec is what every codec of this package is, and what Compressed wraps:
// pkg/informer's StorageCodec (which this package cannot import).
type Codec interface {
	Encode(obj any) ([]byte, error)
	Decode(data []byte) (any, error)
}

// decoderInto and labelReader are pkg/informer's DecoderInto and LabelReader.
type (
	decoderInto interface {
		DecodeInto(data []byte, dst any) error
	}
	labelReader interface {
		AppendLabels(dst []string, data []byte) ([]string, error)
	}
)

// Compressed stores the objects of another codec (Protobuf, Plan, CBOR ...)
// compressed with S2 against a dictionary of what the objects of its kind have
// in common: exemplars of the objects it has encoded, chosen for what they
// bring (compressed_dictionary.go). The blocks are S2's: the package's own
// encoder makes those of small objects (compressed_encoder.go), S2's the
// others (ownEncodeMax), and S2 decodes them. Encode encodes with the inner
// codec and compresses; Decode decompresses into a new buffer and decodes
// that with the inner codec.
//
// Dictionaries. The first is built from the first SampleObjects encodes
// (stored uncompressed until then). A new one is built when compression over
// a window of 512 encodes falls below 0.8 × what the current dictionary
// achieved over its first window, and once after 16 × SampleObjects encodes
// (the first saw only the first objects: few templates, when a list comes in
// key order); from the recent objects that compressed worse than that bound,
// a uniform sample of every object encoded so far, and the current
// dictionary's exemplars that still fit (compressed_policy.go). Each record
// names the dictionary it was made with (compressed_record.go), and the codec
// keeps every dictionary it made, so records of a retired one still decode;
// at most MaxDictionaries are made, and the last one stays. A retired
// dictionary may be dropped once no stored record names it (each record of
// it replaced, deleted, or encoded again); the codec does not know the
// store's records, so it keeps them all. Memory: at most MaxDictionaries × 64
// KiB of dictionaries, the current one's encoder tables (the package's, 64
// KiB; S2's, 32 KiB, once an object larger than ownEncodeMax is encoded), and
// until the last dictionary is made the samples (about 160 KiB of copies).
//
// Per object, an encoding that compresses by less than 1/16 is stored as it is
// (its reads skip the decompression). Every record carries a CRC-32C of its
// bytes: Decode returns an error wrapping ErrCorrupt for bytes that are not a
// record the codec made, never a wrong object.
//
// Compressed is a DecoderInto (the inner codec's DecodeInto after the
// decompression, or its Decode and a copy into dst) and a LabelReader (the
// inner codec's AppendLabels after the decompression; an error when the inner
// codec has none). The aliasing and ownership contract is the package's
// (doc.go), with the decompressed buffer in the place of the bytes: a decoded
// object's strings alias a buffer this decode allocated, which nothing else
// references, or, for a record stored as it is, the record itself (which the
// caller never modifies). Compressed is safe for concurrent use: decodes never
// wait; encodes share the dictionary policy under a lock, and the encode that
// completes a sample builds the next dictionary (a few milliseconds).
type Compressed struct {
	inner Codec
	// current is the dictionary Encode compresses with; nil before the first.
	current atomic.Pointer[dictionary]
	// dictionaries holds every dictionary made, dictionary n at index n-1,
	// the current one last. Replaced whole when one is added.
	dictionaries atomic.Pointer[[]*dictionary]

	bytesIn, bytesOut atomic.Int64 // inner encodings and records, cumulative
	asIsRecords       atomic.Int64

	mu     sync.Mutex // held by an encode around the policy and a build
	policy *rebuildPolicy

	scratch sync.Pool // of *[]byte: an encode's S2 block before it is sealed
	raw     sync.Pool // of *[]byte: inner's encoding before it is compressed (appendEncoder)
}

// CompressedOptions are the optional settings of NewCompressed.
type CompressedOptions struct {
	// SampleObjects is the number of candidates a dictionary is built from:
	// the first dictionary from the first SampleObjects encodes, and each
	// rebuilt one from that many encodes that compressed badly.
	// Zero: 256.
	SampleObjects int
	// MaxDictionaries bounds the dictionaries the codec makes (and keeps);
	// at most 255. Zero: 8.
	MaxDictionaries int
}

// NewCompressed returns a codec that stores inner's encodings compressed.
func NewCompressed(inner Codec, opts CompressedOptions) (*Compressed, error) {
	if inner == nil {
		return nil, errors.New("compressed codec: no inner codec")
	}
	if opts.SampleObjects == 0 {
		opts.SampleObjects = 256
	}
	if opts.MaxDictionaries == 0 {
		opts.MaxDictionaries = 8
	}
	if opts.SampleObjects < 0 || opts.MaxDictionaries < 0 || opts.MaxDictionaries > 255 {
		return nil, fmt.Errorf("compressed codec: SampleObjects %d, MaxDictionaries %d (want > 0, and ≤ 255 dictionaries)",
			opts.SampleObjects, opts.MaxDictionaries)
	}
	c := &Compressed{inner: inner, policy: newRebuildPolicy(opts.SampleObjects, opts.MaxDictionaries)}
	c.dictionaries.Store(&[]*dictionary{})
	return c, nil
}

// Encode returns the record of obj: inner's encoding, compressed against the
// current dictionary unless that saves less than 1/16, with its header and
// checksum. It is a new slice the caller owns.
func (c *Compressed) Encode(obj any) ([]byte, error) {
	var raw []byte
	var err error
	if ae, ok := c.inner.(appendEncoder); ok {
		// inner's encoding is read here and copied by what keeps it (the
		// record, the policy's samples): one buffer serves every encode.
		buf := pooledBuffer(&c.raw)
		defer c.putRawBuffer(buf, &raw)
		raw, err = ae.appendEncode((*buf)[:0], obj)
	} else {
		raw, err = c.inner.Encode(obj)
	}
	if err != nil {
		return nil, err
	}
	var rec []byte
	if d := c.current.Load(); d != nil {
		buf := pooledBuffer(&c.scratch)
		block := d.compress(*buf, raw)
		if len(block) <= len(raw)-len(raw)/16 {
			rec = sealRecord(make([]byte, 0, len(block)+recordOverhead), d.id, block)
		}
		*buf = block[:0]
		c.scratch.Put(buf)
	}
	if rec == nil {
		rec = sealRecord(make([]byte, 0, len(raw)+recordOverhead), asIs, raw)
		c.asIsRecords.Add(1)
	}
	c.bytesIn.Add(int64(len(raw)))
	c.bytesOut.Add(int64(len(rec)))

	c.mu.Lock()
	defer c.mu.Unlock()
	dicts := *c.dictionaries.Load()
	if c.policy.observe(raw, len(rec), len(dicts)) {
		c.build(dicts)
	}
	return rec, nil
}

// putRawBuffer gives buf back to the pool of inner encodings with the room
// of the encoding made in it (*raw), unless that grew past maxPooledRaw.
func (c *Compressed) putRawBuffer(buf *[]byte, raw *[]byte) {
	if cap(*raw) > maxPooledRaw {
		return
	}
	if *raw != nil {
		*buf = (*raw)[:0]
	}
	c.raw.Put(buf)
}

// maxPooledRaw is the largest buffer of inner encodings kept for reuse: an
// object of a megabyte does not keep a megabyte per pool slot.
const maxPooledRaw = 64 << 10

// pooledBuffer returns a buffer of pool (of *[]byte), or a new empty one.
func pooledBuffer(pool *sync.Pool) *[]byte {
	if b, ok := pool.Get().(*[]byte); ok {
		return b
	}
	return new([]byte)
}

// build makes the next dictionary from the policy's candidates and the
// current dictionary's exemplars, and publishes it: the current one is kept
// for decoding only. Called with c.mu held.
func (c *Compressed) build(dicts []*dictionary) {
	var previous [][]byte
	if len(dicts) > 0 {
		previous = dicts[len(dicts)-1].exemplars
	}
	d := buildDictionary(byte(len(dicts)+1), c.policy.candidates(), previous)
	if d != nil {
		next := slices.Clone(dicts)
		if len(next) > 0 {
			next[len(next)-1] = next[len(next)-1].retired()
		}
		next = append(next, d)
		c.dictionaries.Store(&next)
		c.current.Store(d)
	}
	c.policy.built(d != nil, len(*c.dictionaries.Load()))
}

// payload returns the inner encoding held by the record data: a subslice of
// data for a record stored as it is, else a new buffer.
func (c *Compressed) payload(data []byte) ([]byte, error) {
	id, body, err := openRecord(data)
	if err != nil {
		return nil, err
	}
	if id == asIs {
		return body, nil
	}
	dicts := *c.dictionaries.Load()
	if int(id) > len(dicts) {
		return nil, fmt.Errorf("%w: dictionary %d, the codec has %d", ErrCorrupt, id, len(dicts))
	}
	return dicts[id-1].decompress(body)
}

// Decode returns a new object decoded by the inner codec from the record's
// inner encoding. An error wraps ErrCorrupt for bytes that are not a record
// of this codec, or is the inner codec's.
func (c *Compressed) Decode(data []byte) (any, error) {
	raw, err := c.payload(data)
	if err != nil {
		return nil, err
	}
	return c.inner.Decode(raw)
}

// DecodeInto decodes the record into dst, a pointer to a zero value of the
// inner codec's Go type: with the inner codec's DecodeInto if it has one,
// else with its Decode and a copy of the object into *dst.
func (c *Compressed) DecodeInto(data []byte, dst any) error {
	raw, err := c.payload(data)
	if err != nil {
		return err
	}
	if di, ok := c.inner.(decoderInto); ok {
		return di.DecodeInto(raw, dst)
	}
	obj, err := c.inner.Decode(raw)
	if err != nil {
		return err
	}
	d, o := reflect.ValueOf(dst), reflect.ValueOf(obj)
	if d.Kind() != reflect.Pointer || d.IsNil() || d.Type() != o.Type() {
		return fmt.Errorf("compressed codec: cannot decode %T into %T", obj, dst)
	}
	d.Elem().Set(o.Elem())
	return nil
}

// AppendLabels appends the labels of the record's object to dst, read by the
// inner codec's AppendLabels from the inner encoding (decompressed first);
// the strings alias that encoding. An error when the inner codec cannot read
// labels, or as Decode's.
func (c *Compressed) AppendLabels(dst []string, data []byte) ([]string, error) {
	lr, ok := c.inner.(labelReader)
	if !ok {
		return dst, fmt.Errorf("compressed codec: inner codec %T reads no labels", c.inner)
	}
	raw, err := c.payload(data)
	if err != nil {
		return dst, err
	}
	return lr.AppendLabels(dst, raw)
}

// CompressionStats are a Compressed codec's figures since it was made.
type CompressionStats struct {
	// BytesIn are the bytes of the inner codec's encodings, BytesOut those of
	// the records returned (headers and checksums included), over every
	// Encode: Ratio is BytesIn / BytesOut.
	BytesIn, BytesOut int64
	// AsIs is the number of records stored uncompressed (made before the first
	// dictionary, or of objects that did not compress).
	AsIs int64
	// Dictionaries is the number of dictionaries made (all kept), and
	// DictionaryBytes the bytes of their content.
	Dictionaries, DictionaryBytes int
}

// Ratio returns the compression ratio of every encode so far: the bytes the
// inner codec encoded over the bytes of the records returned (1 before any
// encode).
func (s CompressionStats) Ratio() float64 {
	if s.BytesOut == 0 {
		return 1
	}
	return float64(s.BytesIn) / float64(s.BytesOut)
}

// Stats returns the codec's figures, for metrics.
func (c *Compressed) Stats() CompressionStats {
	s := CompressionStats{BytesIn: c.bytesIn.Load(), BytesOut: c.bytesOut.Load(), AsIs: c.asIsRecords.Load()}
	for _, d := range *c.dictionaries.Load() {
		s.Dictionaries++
		s.DictionaryBytes += d.size
	}
	return s
}

// CompressionBytes returns Stats' BytesIn and BytesOut (pkg/informer's
// CompressingCodec).
func (c *Compressed) CompressionBytes() (in, out int64) {
	return c.bytesIn.Load(), c.bytesOut.Load()
}

// Inner returns the codec whose encodings c compresses.
func (c *Compressed) Inner() Codec { return c.inner }

// SameEncoded reports whether the records a and b, whose bytes differ, hold the
// same inner encoding (pkg/informer's EncodingComparer): an object encoded
// before and after a dictionary was made or rebuilt gives two records. Records
// of one dictionary differ only if their inner encodings do (the encoder is
// deterministic against one dictionary; the records of a build with another
// encoder, from a snapshot its Version lets load, may differ, and compare
// unequal); otherwise both are decompressed and compared.
// A record that does not open compares unequal.
func (c *Compressed) SameEncoded(a, b []byte) bool {
	if len(a) < recordOverhead || len(b) < recordOverhead || a[0] == b[0] {
		return false
	}
	pa, err := c.payload(a)
	if err != nil {
		return false
	}
	pb, err := c.payload(b)
	return err == nil && bytes.Equal(pa, pb)
}
