package codec

import (
	"fmt"
	"io"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Plan stores typed objects of one Go struct type without generated protobuf
// code (CRD types such as the demo App) in a binary encoding of our own,
// planned from the Go type by reflection (plan_codec_plan.go) and read back
// by the same plan (plan_codec_decode.go). The encoding never leaves the
// process, so it carries neither field names nor numbers: the values of the
// fields, in the plan's order, with lengths as varints and nil kept apart from
// empty for pointers, slices and maps.
//
// What it returns equals, by reflect.DeepEqual, what it was given: the
// time.Time of a metav1.Time keeps its location (UTC or Local, as JSON
// decoding gives), a resource.Quantity keeps its int64 amount, Format and
// cached string. A value it could not restore exactly makes Encode fail (the
// Indexer then keeps that object decoded): a Time with a monotonic reading or
// another location, a Quantity in inf.Dec form, a RawExtension with an
// Object.
//
// The aliasing contract is the package's (doc.go), as for Protobuf: every
// string of a decoded object points into the bytes; []byte fields are copies;
// slices, maps and pointers are allocated by the decode.
type Plan struct {
	root *pcRoot
	// typeMeta is the TypeMeta of the first encoded object that had one:
	// objects carrying the same are encoded with one byte for it. It is set
	// once and never changes, so bytes encoded against it decode the same for
	// as long as the codec lives.
	typeMeta atomic.Pointer[metav1.TypeMeta]
}

// The byte that opens an encoding: how its TypeMeta is stored.
const (
	pcTypeMetaShared   = 0 // the codec's typeMeta
	pcTypeMetaExplicit = 1 // apiVersion and kind follow as strings
	pcTypeMetaEmpty    = 2 // none (as the items of a typed list have)
)

// NewPlan returns the Plan codec of example's Go type, a pointer to a struct.
// It returns an error naming the field it cannot plan for a type that holds
// an interface (other than runtime.RawExtension's Object), a channel, a
// function or an unexported field (other than those of time.Time and
// resource.Quantity, which it handles as described at Plan). Plans are
// built once per type and shared.
func NewPlan(example runtime.Object) (*Plan, error) {
	t := reflect.TypeOf(example)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("plan codec: %T is not a pointer to a struct", example)
	}
	root, err := pcRootOf(t.Elem())
	if err != nil {
		return nil, fmt.Errorf("plan codec: %w", err)
	}
	return &Plan{root: root}, nil
}

// Encode returns obj's encoding, a new slice the caller owns; an error for an
// object of another Go type or a value it cannot restore exactly (see Plan).
// It reads obj without modifying it.
func (c *Plan) Encode(obj any) ([]byte, error) {
	v := reflect.ValueOf(obj)
	if v.Type() != reflect.PointerTo(c.root.typ) || v.IsNil() {
		return nil, fmt.Errorf("plan codec of %v cannot encode %T", c.root.typ, obj)
	}
	base := v.UnsafePointer()
	scratch := pcScratch.Get().(*[]byte)
	defer pcScratch.Put(scratch)
	e := pcEncoder{buf: (*scratch)[:0]}
	defer func() { *scratch = e.buf[:0] }()
	if c.root.hasTypeMeta {
		tm := (*metav1.TypeMeta)(unsafe.Add(base, c.root.typeMeta))
		shared := c.typeMeta.Load()
		if shared == nil && *tm != (metav1.TypeMeta{}) {
			c.typeMeta.CompareAndSwap(nil, &metav1.TypeMeta{APIVersion: tm.APIVersion, Kind: tm.Kind})
			shared = c.typeMeta.Load()
		}
		switch {
		case shared != nil && *tm == *shared:
			e.buf = append(e.buf, pcTypeMetaShared)
		case *tm == (metav1.TypeMeta{}):
			e.buf = append(e.buf, pcTypeMetaEmpty)
		default:
			e.buf = append(e.buf, pcTypeMetaExplicit)
			e.str(tm.APIVersion)
			e.str(tm.Kind)
		}
	}
	if err := e.fields(c.root.fields, base); err != nil {
		return nil, err
	}
	// A copy of the exact length: the Indexer holds it for the object's life.
	return slices.Clone(e.buf), nil
}

// pcScratch holds the buffers Encode builds encodings in before it copies them.
var pcScratch = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// Decode returns a new *T decoded from data. Its strings alias data, which
// must never be modified afterwards; its []byte fields are copies. An error
// for data that Encode did not return.
func (c *Plan) Decode(data []byte) (any, error) {
	v := reflect.New(c.root.typ)
	if err := c.decode(data, v.UnsafePointer()); err != nil {
		return nil, err
	}
	return v.Interface(), nil
}

// DecodeInto decodes data into dst, a non-nil pointer to a zero T (it writes
// only the fields that are not zero in the encoding); as with Decode, dst's strings then
// alias data. On an error dst holds a partial decode that the caller must
// discard.
func (c *Plan) DecodeInto(data []byte, dst any) error {
	v := reflect.ValueOf(dst)
	if !v.IsValid() || v.Type() != reflect.PointerTo(c.root.typ) || v.IsNil() {
		return fmt.Errorf("plan codec of %v cannot decode into %T", c.root.typ, dst)
	}
	return c.decode(data, v.UnsafePointer())
}

func (c *Plan) decode(data []byte, base unsafe.Pointer) error {
	d := pcDecoder{b: data}
	if err := c.typeMetaInto(&d, base); err != nil {
		return err
	}
	if err := d.fields(c.root.fields, base); err != nil {
		return err
	}
	if d.i != len(data) {
		return errPCTrailing
	}
	return nil
}

// typeMetaInto decodes the TypeMeta byte (and strings) that open data.
func (c *Plan) typeMetaInto(d *pcDecoder, base unsafe.Pointer) error {
	if !c.root.hasTypeMeta {
		return nil
	}
	tm := (*metav1.TypeMeta)(unsafe.Add(base, c.root.typeMeta))
	b, err := d.byte()
	if err != nil {
		return err
	}
	switch b {
	case pcTypeMetaShared:
		shared := c.typeMeta.Load()
		if shared == nil {
			return fmt.Errorf("plan codec: shared TypeMeta not set")
		}
		*tm = *shared
		return nil
	case pcTypeMetaExplicit:
		if tm.APIVersion, err = d.str(); err != nil {
			return err
		}
		tm.Kind, err = d.str()
		return err
	case pcTypeMetaEmpty:
		return nil
	}
	return errPCBadByte
}

// AppendLabels appends the labels (metadata.labels) of the object encoded in
// data to dst as Protobuf.AppendLabels does (key, value pairs aliasing data;
// dst unchanged on an error). The labels open the encoding, after its
// TypeMeta and the bitmap of its top-level fields, so the rest is not read. It returns ErrNoLabels for a type that
// does not embed metav1.ObjectMeta.
func (c *Plan) AppendLabels(dst []string, data []byte) ([]string, error) {
	if !c.root.metaFirst {
		return dst, ErrNoLabels
	}
	d := pcDecoder{b: data}
	var scratch metav1.TypeMeta
	if c.root.hasTypeMeta {
		// Skip the TypeMeta without reading the shared one.
		b, err := d.byte()
		if err != nil {
			return dst, err
		}
		if b == pcTypeMetaExplicit {
			if scratch.APIVersion, err = d.str(); err == nil {
				scratch.Kind, err = d.str()
			}
			if err != nil {
				return dst, err
			}
		} else if b != pcTypeMetaShared && b != pcTypeMetaEmpty {
			return dst, errPCBadByte
		}
	}
	// The fields' bitmap: bit 0 is Labels, nil when clear.
	if len(d.b)-d.i < (len(c.root.fields)+7)/8 {
		return dst, io.ErrUnexpectedEOF
	}
	if d.b[d.i]&1 == 0 {
		return dst, nil
	}
	d.i += (len(c.root.fields) + 7) / 8
	n, _, err := d.count(true)
	if err != nil {
		return dst, err
	}
	out := dst
	for range n {
		k, err := d.str()
		if err != nil {
			return dst, err
		}
		v, err := d.str()
		if err != nil {
			return dst, err
		}
		out = append(out, k, v)
	}
	return out, nil
}
