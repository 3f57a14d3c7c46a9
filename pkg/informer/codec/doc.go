// Package codec holds the storage codecs of deltacache's compact storage,
// the plan-driven protobuf decoder they decode with, and all the unsafe code
// of pkg/informer. A codec turns an object of one Go type into bytes (Encode)
// and bytes back into a new object (Decode); pkg/informer's Indexer stores
// the bytes and decodes them on every read. The interface the Indexer asks
// for, StorageCodec, is declared by its consumer in pkg/informer; this
// package does not import pkg/informer.
//
// The codecs:
//
//	Protobuf          built-in kinds (k8s.io/api) and metadata-only objects:
//	                  the generated Marshal, decoded by our plan-driven decoder
//	Plan              typed objects without generated protobuf code (CRD types):
//	                  our own encoding, planned from the Go type by reflection
//	CBOR              typed objects whose type Plan cannot plan (an interface or
//	                  an unexported field), under StorageCompact
//	UnstructuredCBOR  *unstructured.Unstructured
//	Compressed        wraps any of them: their encoding compressed with S2 against
//	                  dictionaries of what the kind's objects have in common
//
// The files:
//
//	protobuf.go          Protobuf: NewProtobuf, Encode, Decode, DecodeInto
//	protobuf_wire.go     WireCapture: a REST client's decoder that remembers the bytes each
//	                     object came in, which Protobuf.Encode stores (managedFields cut)
//	                     instead of marshalling the object again
//	protobuf_plan.go     the decoder's plans: per Go type and field number, the field's
//	                     offset and kind, compiled once from the protobuf struct tags (unsafe)
//	protobuf_decoder.go  protoDecoder: follows a plan over the wire bytes and writes
//	                     each field in place (unsafe)
//	quantity_restore.go  quantityPlan: puts back the Quantity strings that a Marshal
//	                     caches in the object it encodes (unsafe)
//	quantity_cache.go    the decoder's cache of the Quantities it parsed last, by string
//	plan_codec.go        Plan: NewPlan, Encode, Decode, DecodeInto, AppendLabels (unsafe)
//	plan_codec_plan.go   its plans: per Go type, the values' ops and offsets, nested
//	                     structs flattened, ObjectMeta (Labels first) leading
//	plan_codec_encode.go pcEncoder: follows a plan over a value, appends its encoding (unsafe)
//	plan_codec_decode.go pcDecoder: follows a plan over the bytes, writes each value in
//	                     place (unsafe)
//	cbor.go              CBOR and UnstructuredCBOR
//	protobuf_labels.go   Protobuf.AppendLabels: metadata.labels read from the bytes (unsafe
//	                     strings aliasing them)
//	cbor_labels.go       CBOR.AppendLabels, UnstructuredCBOR.AppendLabels: the same for CBOR
//	compressed.go        Compressed: NewCompressed, Encode, Decode, DecodeInto, AppendLabels,
//	                     Stats (the compression ratio)
//	compressed_record.go a record's format: dictionary byte, payload, CRC-32C; ErrCorrupt
//	compressed_dictionary.go a dictionary: exemplars chosen for what they bring, S2's
//	                     MakeDict over them (for decoding) and our encoder's table,
//	                     compress and decompress
//	compressed_policy.go when a dictionary is built or rebuilt, and from which objects
//	compressed_encoder.go dictEncoder: our own encoder of S2 blocks, with a table sized to
//	                     the input and a dictionary table that grows as exemplars are
//	                     admitted (small objects and the dictionary builder; S2 decodes)
//	weak_object.go       WeakObject: a weak reference to a decoded object of any pointer
//	                     type (unsafe), which pkg/informer hands a listed object's handlers
//	doc.go               this overview and the contract
//
// # Ownership and aliasing
//
// The bytes. Encode returns a new slice that the caller owns; the codec keeps
// no reference to it. Once the caller has passed the bytes to Decode or
// DecodeInto, it must not modify them for as long as any object decoded from
// them lives, because a Protobuf- or Plan-decoded object points into them. The Indexer
// stores the slice and never writes to it.
//
// What a decoded object shares with the bytes. With Protobuf and Plan, every string of
// the object (string fields, elements of string slices, the keys and values of
// string maps, the string a resource.Quantity caches) points into the bytes:
// it is not copied; except that a Quantity Protobuf's decoder takes from its
// cache (quantity_cache.go) holds the cache's own copy of its string, shared
// with every Quantity decoded from that string and with no bytes. Nothing else does: []byte fields are copies, and slices,
// maps, structs and pointers are allocated by this decode and shared with no
// other object, so two objects decoded from the same bytes share nothing that
// either may modify. Two consequences for memory: a string kept from a decoded
// object keeps all of the bytes alive; and the pointers to scalars and to
// small structs (such as *int64 and *metav1.Time) of one decoded object are
// allocated a few to a block, so one kept pointer keeps its block alive. The
// CBOR codecs copy: what they decode shares no memory with the bytes.
// Compressed decodes with its inner codec from the buffer it decompressed the
// record into, new per decode and referenced by nothing else (so a kept
// string keeps that buffer alive), or, for a record stored uncompressed, from
// the record itself; it never writes to the record.
//
// What the caller of Decode may do. The decoded object is the caller's: it
// may modify any field, assign new strings, append to slices, and hand the
// object to other goroutines; none of this touches the bytes or any other
// object, since Go strings are immutable. The caller must not write into the
// memory of a decoded string (through unsafe, or by converting it to a slice
// without a copy); must not use the object of a failed decode (it holds a
// partial decode); and must give DecodeInto a zeroed value, since it decodes
// into what it finds, merging as the generated Unmarshal does.
//
// What Encode does to its object. Encode keeps no reference to obj, and
// returns it as it found it: an object decoded from the API server still
// equals, by reflect.DeepEqual, the same object decoded again. While Encode
// runs, however, the generated Marshal writes the string caches of the
// Quantities it reaches in obj before Encode puts them back (quantityPlan),
// so no other goroutine may read or write obj during Encode.
//
// Goroutines. Every codec value is safe for concurrent use by any number of
// goroutines: Encode and Decode run at the same time (the informer's writer
// encodes while readers decode). Protobuf remembers, in an atomic pointer,
// the GroupVersionKind of the last encoded object that had one and sets it on
// every object decoded after; objects decoded before any such Encode have
// none. Decoding plans and Quantity plans are built once per Go type and
// published complete; a decoder and its plans never change afterwards.
//
// # Where the unsafe code is and what keeps it sound
//
// protobuf_decoder.go writes each field at the address of the value being
// decoded plus the field's offset, both taken from package reflect for the
// planned type: DecodeInto checks that its destination is a non-nil pointer
// to the codec's type before it decodes, and every nested value (a pointed-to
// struct, the backing array of a slice of structs) is allocated by reflect
// with the type its plan was compiled for. It makes strings over the input
// bytes with unsafe.String, reads and grows slices through sliceHeader (Go's
// slice layout), and never forms a pointer past the end of an allocation.
// protobuf_plan.go hands a type without protobuf tags to its generated
// Unmarshal at the address the decoder allocated for that type
// (reflect.NewAt), and its hand-written field functions take that address.
// quantity_restore.go walks an object by the same offsets, and reads map
// values through reflect. The tests compare the decoder with the generated
// Unmarshal on random, server-shaped, truncated and corrupted input
// (protobuf_decoder_test.go, FuzzProtoDecoderMatchesGenerated).
//
// plan_codec_encode.go and plan_codec_decode.go read and write each value at
// the address of its struct plus the field's offset, both from package reflect
// for the planned type (Encode and DecodeInto check that the object is a
// non-nil pointer to the codec's type); every pointed-to value, slice backing
// array and map is allocated by reflect (or make) with the type its plan was
// built for. The unexported fields of resource.Quantity are reached at offsets
// the planner reads and checks by name and kind, and it refuses the type if
// they change. The decoder checks every length against the bytes left before
// it allocates, so bytes Encode did not return give an error, never a panic
// (plan_codec_test.go, FuzzPlanCodecRoundTrip).
package codec
