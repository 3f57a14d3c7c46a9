package informer

// StorageCodec turns the objects an Indexer stores into a compact serialized
// form and back (compact storage, Options.StorageCodec); the decode on every
// read replaces a reader's deep copy. Package codec has the implementations
// (codec.NewProtobuf, codec.NewPlan, codec.NewCBOR, codec.NewUnstructuredCBOR) and their
// aliasing contract. Implementations must be safe for concurrent use.
type StorageCodec interface {
	// Encode returns the compact form of obj. It must not keep obj or
	// modify it. An error keeps obj stored decoded (counted and logged by
	// the Indexer); it is never dropped.
	Encode(obj any) ([]byte, error)
	// Decode returns a new object equal to the one data was encoded from,
	// of the same Go type. The Indexer never modifies data after Encode
	// returned it, so the result may alias it (strings pointing into data),
	// but the result must share no mutable memory with data ([]byte fields
	// copied): the caller owns it and may modify it.
	Decode(data []byte) (any, error)
}

// DecoderInto is implemented by StorageCodecs that can decode into an object
// the caller provides (for example an element of a list's Items), saving an
// allocation and a copy per object. dst is a pointer to a zero value of the
// codec's Go type.
type DecoderInto interface {
	DecodeInto(data []byte, dst any) error
}

// LabelReader is implemented by StorageCodecs that can read an object's
// labels (metadata.labels) from its encoding without decoding the rest
// (codec.Protobuf, codec.Plan, codec.CBOR, codec.UnstructuredCBOR), so that
// Indexer.Select checks a label selector before it decodes.
type LabelReader interface {
	// AppendLabels appends the labels of the object encoded in data to dst
	// as key, value pairs (dst[2i] a key, dst[2i+1] its value; of two pairs
	// of one key, the later counts), and returns the extended slice. The
	// strings may alias data. An error means the labels could not be read
	// (dst is returned unchanged): the caller decodes the object instead.
	AppendLabels(dst []string, data []byte) ([]string, error)
}

// StatefulCodec is implemented by StorageCodecs whose encodings decode only
// with state the codec builds while it encodes (codec.Compressed: the
// dictionaries it made). A snapshot (Options.Snapshot) carries the state:
// AppendState is called once the records to write are collected (the state
// must cover every one of them), and RestoreState on the loading informer's
// codec, new and unused, before the first record is decoded. A RestoreState
// error discards the snapshot (the informer starts cold).
type StatefulCodec interface {
	AppendState(dst []byte) []byte
	RestoreState(state []byte) error
}

// CompressingCodec is implemented by StorageCodecs that compress
// (codec.Compressed): CompressionBytes returns the bytes of the uncompressed
// encodings and of the records returned, over every Encode so far. The
// metric deltacache_informer_compression_ratio is their ratio.
type CompressingCodec interface {
	CompressionBytes() (in, out int64)
}

// EncodingComparer is implemented by StorageCodecs whose encodings of one
// object may differ (codec.Compressed: under two dictionaries). SameEncoded
// reports whether the encodings a and b, which differ in bytes, are of equal
// objects. The informer asks it for each object a relist brings back whose
// bytes differ from the stored ones, to tell an unchanged object (a resync,
// for handlers due for one) from a change (an update, for every handler).
type EncodingComparer interface {
	SameEncoded(a, b []byte) bool
}
