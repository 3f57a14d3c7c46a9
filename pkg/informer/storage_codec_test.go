package informer

import "github.com/deltacache/deltacache/pkg/informer/codec"

// The codecs of package codec are StorageCodecs, and the protobuf one decodes
// into a caller's object (Indexer.GetInto).
var (
	_ StorageCodec = (*codec.Protobuf)(nil)
	_ DecoderInto  = (*codec.Protobuf)(nil)
	_ StorageCodec = (*codec.CBOR)(nil)
	_ StorageCodec = codec.UnstructuredCBOR{}
)
