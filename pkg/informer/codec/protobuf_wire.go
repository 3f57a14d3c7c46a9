/*
Copyright 2026.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package codec

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The API server sends a built-in kind in the very encoding Protobuf stores
// (its message, inside a runtime.Unknown envelope). A WireCapture keeps the
// bytes a REST client decoded each object from, so that Protobuf.Encode of that
// object takes them instead of marshalling the decoded object again: the
// generated Marshal is most of what compact storage costs per watched or
// streamed object (an initial list of 20,000 pods spent ~0.1 s of CPU in it).

// wireQueueLen and wireQueueBytes bound what a WireCapture remembers: client-go's
// StreamWatcher hands each decoded event over an unbuffered channel, so the
// decoder runs at most an object or two ahead of the Reflector that encodes it;
// the rest are objects never encoded (deletions, bookmarks, objects of another
// shard), kept only until a later object is taken or they are pushed out.
const (
	wireQueueLen   = 16
	wireQueueBytes = 4 << 20
)

// protoEnvelopePrefix starts every protobuf object the API server sends: the
// magic "k8s\x00" before its runtime.Unknown.
var protoEnvelopePrefix = []byte{0x6b, 0x38, 0x73, 0x00}

// Field numbers of runtime.Unknown and of ObjectMeta.
const (
	unknownRawField             = 2  // bytes raw = 2
	unknownContentEncodingField = 3  // string contentEncoding = 3
	metaManagedFieldsField      = 17 // repeated ManagedFieldsEntry managedFields = 17
)

// WireCapture remembers, for the objects of its Protobuf codec's type that a
// REST client decodes, the protobuf message they were decoded from, until
// Protobuf.Encode takes it. It is safe for concurrent use.
//
// It is correct only where the object Encode receives is the decoded object
// itself (the same pointer), changed at most by clearing its TypeMeta and, when
// stripManagedFields, its metadata.managedFields: pkg/cache installs it for an
// informer whose transform does no more (no user transform). Encode then stores
// the message with the managedFields entries cut out, which decodes to an object
// equal to the one given (the decoder equals the generated Unmarshal, and the
// message is what the generated Unmarshal read). An object it has no bytes for
// (a LIST's items, objects of another decoder) is marshalled as before.
type WireCapture struct {
	typ                reflect.Type // *T of the codec
	stripManagedFields bool

	stored atomic.Int64 // objects Encode stored from their bytes

	mu sync.Mutex
	// queue holds the last decoded objects in decoding order, at most
	// wireQueueLen of them and, but for the newest, wireQueueBytes of messages
	// (queued); Encode takes its object's entry and drops the entries before it
	// (objects the Reflector let go without encoding).
	queue  []wireEntry
	queued int
}

type wireEntry struct {
	obj any
	msg []byte // the object's message, aliasing the bytes the decoder was given
}

// CaptureWire attaches a new WireCapture to c and returns it. Call it before c
// encodes anything; stripManagedFields says that the informer's transform clears
// metadata.managedFields (see WireCapture). It returns nil, attaching nothing,
// for a type whose message does not start with its ObjectMeta as field 1 (every
// built-in kind does).
func (c *Protobuf) CaptureWire(stripManagedFields bool) *WireCapture {
	if !c.metaFirst {
		return nil
	}
	w := &WireCapture{typ: reflect.PointerTo(c.typ), stripManagedFields: stripManagedFields}
	c.wire = w
	return w
}

// Stored returns how many objects Encode has stored from the bytes they came
// in (instead of marshalling them).
func (w *WireCapture) Stored() int64 { return w.stored.Load() }

// NegotiatedSerializer wraps ns, the serializer of a REST client's config, so
// that the objects its decoders return are remembered with their bytes.
func (w *WireCapture) NegotiatedSerializer(ns runtime.NegotiatedSerializer) runtime.NegotiatedSerializer {
	return wireSerializer{NegotiatedSerializer: ns, w: w}
}

type wireSerializer struct {
	runtime.NegotiatedSerializer
	w *WireCapture
}

// DecoderToVersion returns ns's decoder, wrapped: client-go's REST client takes
// every decoder of responses and watch events from here.
func (s wireSerializer) DecoderToVersion(d runtime.Decoder, gv runtime.GroupVersioner) runtime.Decoder {
	return wireDecoder{Decoder: s.NegotiatedSerializer.DecoderToVersion(d, gv), w: s.w}
}

type wireDecoder struct {
	runtime.Decoder
	w *WireCapture
}

// Decode decodes with the wrapped decoder and remembers data's message for an
// object of the codec's type. client-go's watch decoder hands it a copy of each
// event's object that nothing else keeps (metav1.WatchEvent's Unmarshal copies
// RawExtension.Raw), so the message is kept without a copy; a response body
// (a GET's) is never written to either.
func (d wireDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	obj, gvk, err := d.Decoder.Decode(data, defaults, into)
	if err == nil && reflect.TypeOf(obj) == d.w.typ {
		if msg, ok := envelopedMessage(data); ok {
			d.w.put(obj, msg)
		}
	}
	return obj, gvk, err
}

func (w *WireCapture) put(obj any, msg []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.queue = append(w.queue, wireEntry{obj: obj, msg: msg})
	w.queued += len(msg)
	n, queued := 0, w.queued // the oldest n entries go, never the one just put
	for n < len(w.queue)-1 && (len(w.queue)-n > wireQueueLen || queued > wireQueueBytes) {
		queued -= len(w.queue[n].msg)
		n++
	}
	w.dropFirst(n)
}

// dropFirst forgets the first n entries. Caller holds mu.
func (w *WireCapture) dropFirst(n int) {
	for _, e := range w.queue[:n] {
		w.queued -= len(e.msg)
	}
	k := copy(w.queue, w.queue[n:])
	clear(w.queue[k:])
	w.queue = w.queue[:k]
}

// take returns the message obj was decoded from, if remembered, and forgets it
// and every entry decoded before it.
func (w *WireCapture) take(obj any) ([]byte, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range w.queue {
		if w.queue[i].obj != obj {
			continue
		}
		msg := w.queue[i].msg
		w.dropFirst(i + 1)
		return msg, true
	}
	return nil, false
}

// encoding appends to dst the bytes Encode stores for msg (dst nil: returns a
// new slice of their size): msg without the managedFields of its metadata when
// w strips them, else msg. It fails (false) on bytes it cannot walk; Encode
// then marshals. It walks msg twice (the metadata's fields once), to grow dst
// once, by the result's size.
func (w *WireCapture) encoding(dst, msg []byte) ([]byte, bool) {
	if !w.stripManagedFields {
		return append(grown(dst, len(msg)), msg...), true
	}
	_, size, ok := spliced(nil, msg)
	if !ok {
		return nil, false
	}
	out, _, _ := spliced(grown(dst, size), msg)
	return out, true
}

// spliced walks msg, an object's message, without the managedFields of its
// metadata: with dst nil it returns the size of what is left, else dst with
// what is left appended (and its size).
func spliced(dst, msg []byte) ([]byte, int, bool) {
	size := 0
	for i := 0; i < len(msg); {
		wire, j, err := varint(msg, i)
		if err != nil {
			return nil, 0, false
		}
		end, err := skipProto(msg, i, j, wire)
		if err != nil {
			return nil, 0, false
		}
		if wire>>3 != protoMetadataField || wire&7 != wireBytes {
			size += end - i
			if dst != nil {
				dst = append(dst, msg[i:end]...)
			}
			i = end
			continue
		}
		s, _, err := lengthDelimited(msg, j)
		if err != nil {
			return nil, 0, false
		}
		meta := msg[end-s : end]
		from, to, ok := fieldRun(meta, metaManagedFieldsField)
		if !ok {
			return nil, 0, false
		}
		kept := len(meta) - (to - from)
		var length [binary.MaxVarintLen64]byte
		size += j - i + binary.PutUvarint(length[:], uint64(kept)) + kept
		if dst != nil {
			dst = append(dst, msg[i:j]...)
			dst = binary.AppendUvarint(dst, uint64(kept))
			dst = append(append(dst, meta[:from]...), meta[to:]...)
		}
		i = end
	}
	return dst, size, true
}

// fieldRun returns where the fields numbered num of b, a message, lie: b[from:to],
// empty when b has none. A Marshal writes the entries of a repeated field one
// after the other (managedFields, ObjectMeta's highest number, last); for fields
// num apart from each other fieldRun fails (false), as on bytes it cannot walk.
func fieldRun(b []byte, num uint64) (from, to int, ok bool) {
	from, to = -1, -1
	for i := 0; i < len(b); {
		wire, j, err := varint(b, i)
		if err != nil {
			return 0, 0, false
		}
		end, err := skipProto(b, i, j, wire)
		if err != nil {
			return 0, 0, false
		}
		switch {
		case wire>>3 != num:
		case from < 0:
			from, to = i, end
		case to == i:
			to = end
		default:
			return 0, 0, false
		}
		i = end
	}
	if from < 0 {
		return 0, 0, true
	}
	return from, to, true
}

// envelopedMessage returns the object message of data, a protobuf object as the
// API server sends it ("k8s\x00", then a runtime.Unknown whose raw field is the
// message); false for anything else, or for a content encoding. It walks the
// envelope rather than calling runtime.Unknown's Unmarshal, which would copy the
// message and allocate the TypeMeta's strings for every watched object.
func envelopedMessage(data []byte) ([]byte, bool) {
	if !bytes.HasPrefix(data, protoEnvelopePrefix) {
		return nil, false
	}
	b := data[len(protoEnvelopePrefix):]
	var msg []byte
	found := false
	for i := 0; i < len(b); {
		wire, j, err := varint(b, i)
		if err != nil {
			return nil, false
		}
		end, err := skipProto(b, i, j, wire)
		if err != nil {
			return nil, false
		}
		switch wire >> 3 {
		case unknownRawField:
			if wire&7 != wireBytes {
				return nil, false
			}
			s, _, _ := lengthDelimited(b, j)
			msg, found = b[end-s:end:end], true
		case unknownContentEncodingField:
			if s, _, _ := lengthDelimited(b, j); s != 0 {
				return nil, false
			}
		}
		i = end
	}
	return msg, found
}
