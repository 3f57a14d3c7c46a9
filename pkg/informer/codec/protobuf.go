package codec

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// protoMessage is what Kubernetes' generated protobuf code gives every API
// type: its encoding without the runtime.Unknown envelope, and the inverse.
type protoMessage interface {
	Marshal() ([]byte, error)
	Unmarshal(data []byte) error
}

// Protobuf stores objects of one Go type of Kubernetes' API (built-in kinds
// such as *corev1.Pod, and *metav1.PartialObjectMetadata) as their protobuf
// encoding, the one the API server sends, without its envelope. TypeMeta is
// not part of that encoding: the codec restores the apiVersion/kind of the
// objects it encodes (all objects of one informer carry the same, or none) on
// every decoded object. The aliasing and ownership contract is the package's
// (doc.go).
type Protobuf struct {
	typ reflect.Type // the struct type T of *T
	// gvk is the GroupVersionKind last seen on an encoded object, nil while
	// every object had none.
	gvk atomic.Pointer[schema.GroupVersionKind]
	// dec is our decoder of typ (strings aliasing the stored bytes, far fewer
	// allocations than the generated code); nil when typ has a field it cannot
	// plan, then the generated Unmarshal decodes.
	dec *protoDecoder
	// quantities is where a Marshal of a typ fills Quantities' cached
	// strings, which Encode puts back (nil when it fills none).
	quantities *quantityPlan
	// metaFirst: typ embeds ObjectMeta as field 1, so AppendLabels can read
	// the labels from the bytes (protobuf_labels.go).
	metaFirst bool
	// wire, when set (CaptureWire), holds the bytes the API server sent for
	// the objects Encode is given, which it stores instead of a Marshal.
	wire *WireCapture
}

// ErrNoProtobuf is returned by NewProtobuf for a type without generated
// protobuf methods (CRD types, unstructured objects).
var ErrNoProtobuf = errors.New("type has no generated protobuf Marshal/Unmarshal methods")

// NewProtobuf returns the protobuf codec of example's Go type, a pointer to a
// struct with generated Marshal and Unmarshal methods (every type of
// k8s.io/api, metav1.PartialObjectMetadata). It returns an error wrapping
// ErrNoProtobuf for other types.
func NewProtobuf(example runtime.Object) (*Protobuf, error) {
	t := reflect.TypeOf(example)
	if _, ok := example.(protoMessage); !ok || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("%T: %w", example, ErrNoProtobuf)
	}
	c := &Protobuf{typ: t.Elem(), quantities: quantityPlanOf(t.Elem()), metaFirst: metadataFirst(t.Elem())}
	if dec, err := newProtoDecoder(c.typ); err == nil {
		c.dec = dec
	}
	return c, nil
}

// Encode returns obj's protobuf encoding (the generated Marshal), a new slice
// the caller owns; an error for an object of another Go type than the codec's.
// It leaves obj as it was (the Quantities whose string the Marshal caches are
// put back; see quantityPlan): an object decoded from the API server still
// equals, by reflect.DeepEqual, the same object decoded again. It remembers
// obj's GroupVersionKind, if set, for Decode. With a WireCapture
// (CaptureWire) that holds the bytes obj was decoded from, it returns those
// instead of marshalling obj (protobuf_wire.go).
func (c *Protobuf) Encode(obj any) ([]byte, error) { return c.appendEncode(nil, obj) }

// appendEncode is Encode appending to dst (see appendEncoder): Compressed
// encodes into a buffer it reuses, since it keeps only the compressed record.
func (c *Protobuf) appendEncode(dst []byte, obj any) ([]byte, error) {
	if reflect.TypeOf(obj) != reflect.PointerTo(c.typ) {
		return nil, fmt.Errorf("protobuf codec of %v cannot encode %T", c.typ, obj)
	}
	if ro, ok := obj.(runtime.Object); ok {
		if gvk := ro.GetObjectKind().GroupVersionKind(); !gvk.Empty() {
			if cur := c.gvk.Load(); cur == nil || *cur != gvk {
				kept := gvk // a copy: &gvk would move gvk to the heap on every call
				c.gvk.Store(&kept)
			}
		}
	}
	if c.wire != nil {
		if msg, ok := c.wire.take(obj); ok {
			if b, ok := c.wire.encoding(dst, msg); ok {
				c.wire.stored.Add(1)
				return b, nil
			}
		}
	}
	return c.quantities.marshalUntouched(dst, obj, obj.(protoMessage))
}

// grown returns dst with room for n more bytes: nil gets a slice of exactly
// n (an encoding the caller keeps), any other dst slices.Grow's.
func grown(dst []byte, n int) []byte {
	if dst == nil {
		return make([]byte, 0, n)
	}
	return slices.Grow(dst, n)
}

// appendEncoder is a codec that appends an object's encoding to a buffer of
// the caller's instead of returning a new slice (Protobuf): Compressed reuses
// one buffer for what it compresses.
type appendEncoder interface {
	appendEncode(dst []byte, obj any) ([]byte, error)
}

// sizedMarshaler is what the generated protobuf code adds to Marshal: the
// size of the encoding, and a Marshal into a buffer of that size.
type sizedMarshaler interface {
	Size() int
	MarshalToSizedBuffer(dAtA []byte) (int, error)
}

// appendMarshal appends m's encoding to dst as m.Marshal makes it: through
// Size and MarshalToSizedBuffer when m has them (into dst's room, without a
// slice of its own), else by Marshal. With dst nil it returns a slice of the
// encoding's size, as Marshal does.
func appendMarshal(dst []byte, m protoMessage) ([]byte, error) {
	sm, ok := m.(sizedMarshaler)
	if !ok {
		b, err := m.Marshal()
		if err != nil || dst == nil {
			return b, err
		}
		return append(dst, b...), nil
	}
	size := sm.Size()
	at := len(dst)
	dst = grown(dst, size)
	// MarshalToSizedBuffer writes from the end of the buffer it is given.
	n, err := sm.MarshalToSizedBuffer(dst[at : at+size])
	if err != nil {
		return nil, err
	}
	if n != size { // as Marshal, which returns its buffer's first n bytes: never seen
		return nil, fmt.Errorf("protobuf codec: %T marshalled %d bytes, its Size said %d", m, n, size)
	}
	return dst[:at+size], nil
}

// Decode returns a new *T decoded from data, with the codec's GVK set. Its
// strings alias data, which must never be modified afterwards; its []byte
// fields are copies. It equals what the type's generated Unmarshal gives (see
// protoDecoder), with fewer allocations.
func (c *Protobuf) Decode(data []byte) (any, error) {
	obj := reflect.New(c.typ).Interface()
	if err := c.DecodeInto(data, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// DecodeInto decodes data into dst, a non-nil pointer to a zero T, and sets
// the codec's GVK on it; as with Decode, dst's strings then alias data. On an
// error dst holds a partial decode that the caller must discard.
func (c *Protobuf) DecodeInto(data []byte, dst any) error {
	if c.dec != nil {
		v := reflect.ValueOf(dst)
		if v.Type() != reflect.PointerTo(c.typ) || v.IsNil() {
			return fmt.Errorf("protobuf codec of %v cannot decode into %T", c.typ, dst)
		}
		if err := c.dec.decodeInto(data, v.UnsafePointer()); err != nil {
			return err
		}
	} else if err := dst.(protoMessage).Unmarshal(data); err != nil {
		return err
	}
	if gvk := c.gvk.Load(); gvk != nil {
		dst.(runtime.Object).GetObjectKind().SetGroupVersionKind(*gvk)
	}
	return nil
}
