package codec

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// protoDecoder decodes the protobuf encoding that a Kubernetes API type's generated
// Marshal method produces (no runtime.Unknown envelope) into a value of that type.
//
// It follows a plan compiled once per Go type from the type's protobuf struct tags: for
// every field number, the field's offset and how to decode it. The result of a decode is
// reflect.DeepEqual to what the type's generated Unmarshal gives on a zero value, with
// two differences that callers must accept:
//
//   - strings of the result alias the input (no copy), so the input must never be
//     modified after a decode (the store's encoded objects never are);
//   - slices of structs and strings, and maps, are allocated at their final size, and
//     pointers to scalars share a few small blocks, so a decode allocates far less.
//
// Types whose protobuf methods are written by hand (resource.Quantity, metav1.Time,
// metav1.MicroTime, and any other type with an Unmarshal method and no protobuf tags)
// are decoded by their own Unmarshal method on the field's bytes.
//
// What a plan supports: string, []byte, bool and integer fields (named or not, varint,
// or fixed32/fixed64 when tagged so), float32 and float64 (fixed), pointers to all of
// them, structs and pointers to structs, slices of structs, strings, []byte and scalars
// (packed or not), and maps with string keys and string, []byte or message values. It
// refuses, naming the field: zigzag (sint) encodings, maps with other keys, slices of
// pointers or of slices other than [][]byte, and fields of other Go kinds (chan, func,
// interface). Groups are only skipped, as unknown fields.
//
// A protoDecoder is immutable and safe for concurrent use.
type protoDecoder struct {
	typ  reflect.Type
	plan *messagePlan
}

// newProtoDecoder compiles a decoding plan for the struct type t (e.g.
// reflect.TypeOf(corev1.Pod{})), or returns an error naming the field it cannot plan.
// Plans are cached per type, so a second decoder of the same type costs a map lookup.
func newProtoDecoder(t reflect.Type) (*protoDecoder, error) {
	if t == nil || t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("protobuf decoder: %v is not a struct type", t)
	}
	mp, err := planMessage(t)
	if err != nil {
		return nil, err
	}
	return &protoDecoder{typ: t, plan: mp}, nil
}

// decode decodes data into a new value of the decoder's type and returns a pointer to
// it (a *T in an any), under the terms of decodeInto.
func (d *protoDecoder) decode(data []byte) (any, error) {
	v := reflect.New(d.typ)
	if err := d.decodeInto(data, v.UnsafePointer()); err != nil {
		return nil, err
	}
	return v.Interface(), nil
}

// decodeInto decodes data into dst, a pointer to a value of the decoder's type that the
// caller has zeroed. Strings of the result alias data, which the caller must never
// modify afterwards; []byte fields are copies. On error dst holds a partial decode that
// the caller must discard.
func (d *protoDecoder) decodeInto(data []byte, dst unsafe.Pointer) error {
	var st decodeState
	return st.message(d.plan, dst, data)
}

// Errors of malformed input, the same values the generated code returns where it has
// one of its own.
var (
	errProtoInvalidLength = errors.New("proto: negative length found during unmarshaling")
	errProtoIntOverflow   = errors.New("proto: integer overflow")
	errProtoEndOfGroup    = errors.New("proto: unexpected end of group")
)

// Wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireStart   = 3
	wireEnd     = 4
	wireFixed32 = 5
)

// newMessage allocates a zero value of the message type of plan mp.
func (st *decodeState) newMessage(mp *messagePlan) unsafe.Pointer {
	if mp.slabID == 0 {
		return reflect.New(mp.typ).UnsafePointer()
	}
	s := &st.slabs[mp.slabID-1]
	if s.left == 0 {
		s.next, s.left = reflect.New(mp.slab).UnsafePointer(), slabLen
	}
	p := s.next
	s.left--
	if s.left > 0 {
		s.next = unsafe.Add(p, mp.typ.Size())
	} else {
		s.next = nil // never a pointer past the array
	}
	return p
}

// decodeState is one decode's allocator of pointers to scalars and to small structs:
// they share small blocks instead of one allocation each.
type decodeState struct {
	words   []uint64 // for *bool, *int32, *int64, *float64...
	strings []string // for *string
	slabs   [maxSlabs]struct {
		next unsafe.Pointer
		left int
	}
}

const (
	wordBlock   = 8
	stringBlock = 4
)

func (st *decodeState) word() unsafe.Pointer {
	if len(st.words) == 0 {
		st.words = make([]uint64, wordBlock)
	}
	p := unsafe.Pointer(&st.words[0])
	st.words = st.words[1:]
	return p
}

func (st *decodeState) stringPtr(s string) unsafe.Pointer {
	if len(st.strings) == 0 {
		st.strings = make([]string, stringBlock)
	}
	p := &st.strings[0]
	*p = s
	st.strings = st.strings[1:]
	return unsafe.Pointer(p)
}

// message decodes b, the encoding of a message of plan mp, into the value at base.
func (st *decodeState) message(mp *messagePlan, base unsafe.Pointer, b []byte) error {
	if mp.unmarshal != nil {
		return mp.unmarshal(base, b)
	}
	l := len(b)
	i := 0
	for i < l {
		pre := i
		var wire uint64
		if c := b[i]; c < 0x80 {
			wire = uint64(c)
			i++
		} else {
			var err error
			if wire, i, err = varint(b, i); err != nil {
				return err
			}
		}
		num := int32(wire >> 3)
		wt := uint8(wire & 7)
		if wt == wireEnd {
			return fmt.Errorf("proto: %s: wiretype end group for non-group", mp.typ.Name())
		}
		if num <= 0 {
			return fmt.Errorf("proto: %s: illegal tag %d (wire type %d)", mp.typ.Name(), num, wire)
		}
		if int(num) >= len(mp.fields) || mp.fields[num].kind == kindNone {
			n, err := skipField(b[pre:])
			if err != nil {
				return err
			}
			if n < 0 || pre+n < 0 {
				return errProtoInvalidLength
			}
			if pre+n > l {
				return io.ErrUnexpectedEOF
			}
			i = pre + n
			continue
		}
		f := &mp.fields[num]
		// The most common fields first: a short string and a one-byte varint.
		if i < l && b[i] < 0x80 {
			switch {
			case f.kind == kindString && wt == wireBytes:
				n := int(b[i])
				if i+1+n > l {
					return io.ErrUnexpectedEOF
				}
				*(*string)(unsafe.Add(base, f.offset)) = aliasString(b[i+1 : i+1+n])
				i += 1 + n
				continue
			case f.kind == kindVarint4 && wt == wireVarint:
				*(*uint32)(unsafe.Add(base, f.offset)) = uint32(b[i])
				i++
				continue
			case f.kind == kindVarint8 && wt == wireVarint:
				*(*uint64)(unsafe.Add(base, f.offset)) = uint64(b[i])
				i++
				continue
			case f.kind == kindBool && wt == wireVarint:
				*(*bool)(unsafe.Add(base, f.offset)) = b[i] != 0
				i++
				continue
			}
		}
		var err error
		if i, err = st.field(f, base, b, pre, i, wt); err != nil {
			return err
		}
	}
	if i > l {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// field decodes the value of field f that starts at b[i] (its tag at b[pre]) into the
// message at base, and returns the index after it.
func (st *decodeState) field(f *fieldPlan, base unsafe.Pointer, b []byte, pre, i int, wt uint8) (int, error) {
	if wt != f.wire && !(wt == wireBytes && f.kind >= kindRepBool && f.kind <= kindRepFixed8) {
		return 0, fmt.Errorf("proto: wrong wireType = %d for field %s", wt, f.name)
	}
	p := unsafe.Add(base, f.offset)
	switch f.kind {
	case kindString, kindPtrString, kindRepString:
		s, j, err := lengthDelimited(b, i)
		if err != nil {
			return 0, err
		}
		str := aliasString(b[j-s : j])
		switch f.kind {
		case kindString:
			*(*string)(p) = str
		case kindPtrString:
			*(*unsafe.Pointer)(p) = st.stringPtr(str)
		default:
			ss := (*[]string)(p)
			if cap(*ss) == 0 {
				*ss = make([]string, 0, countField(b, pre, f.num))
			}
			*ss = append(*ss, str)
		}
		return j, nil

	case kindBytes, kindRepBytes:
		s, j, err := lengthDelimited(b, i)
		if err != nil {
			return 0, err
		}
		v := make([]byte, s)
		copy(v, b[j-s:j])
		if f.kind == kindBytes {
			*(*[]byte)(p) = v
		} else {
			bs := (*[][]byte)(p)
			if cap(*bs) == 0 {
				*bs = make([][]byte, 0, countField(b, pre, f.num))
			}
			*bs = append(*bs, v)
		}
		return j, nil

	case kindBool, kindVarint4, kindVarint8, kindPtrBool, kindPtrVarint4, kindPtrVarint8:
		v, j, err := varint(b, i)
		if err != nil {
			return 0, err
		}
		switch f.kind {
		case kindBool:
			*(*bool)(p) = v != 0
		case kindVarint4:
			*(*uint32)(p) = uint32(v)
		case kindVarint8:
			*(*uint64)(p) = v
		case kindPtrBool:
			w := st.word()
			*(*bool)(w) = v != 0
			*(*unsafe.Pointer)(p) = w
		case kindPtrVarint4:
			w := st.word()
			*(*uint32)(w) = uint32(v)
			*(*unsafe.Pointer)(p) = w
		default:
			w := st.word()
			*(*uint64)(w) = v
			*(*unsafe.Pointer)(p) = w
		}
		return j, nil

	case kindFixed4, kindPtrFixed4:
		if i+4 > len(b) {
			return 0, io.ErrUnexpectedEOF
		}
		v := uint32(b[i]) | uint32(b[i+1])<<8 | uint32(b[i+2])<<16 | uint32(b[i+3])<<24
		if f.kind == kindFixed4 {
			*(*uint32)(p) = v
		} else {
			w := st.word()
			*(*uint32)(w) = v
			*(*unsafe.Pointer)(p) = w
		}
		return i + 4, nil

	case kindFixed8, kindPtrFixed8:
		if i+8 > len(b) {
			return 0, io.ErrUnexpectedEOF
		}
		v := fixed64(b[i:])
		if f.kind == kindFixed8 {
			*(*uint64)(p) = v
		} else {
			w := st.word()
			*(*uint64)(w) = v
			*(*unsafe.Pointer)(p) = w
		}
		return i + 8, nil

	case kindMessage, kindPtrMessage, kindRepMessage:
		s, j, err := lengthDelimited(b, i)
		if err != nil {
			return 0, err
		}
		var dst unsafe.Pointer
		switch f.kind {
		case kindMessage:
			dst = p
			if f.nonNil && *(*unsafe.Pointer)(p) == nil {
				v := reflect.NewAt(f.sub.typ, p).Elem()
				if v.Kind() == reflect.Map {
					v.Set(reflect.MakeMap(f.sub.typ))
				} else {
					v.Set(reflect.MakeSlice(f.sub.typ, 0, 0))
				}
			}
		case kindPtrMessage:
			dst = *(*unsafe.Pointer)(p)
			if dst == nil {
				dst = st.newMessage(f.sub)
				*(*unsafe.Pointer)(p) = dst
			}
		default:
			dst = st.appendStruct(f, p, b, pre)
		}
		return j, st.message(f.sub, dst, b[j-s:j])

	case kindRepBool, kindRepVarint4, kindRepVarint8, kindRepFixed4, kindRepFixed8:
		return st.repeatedScalar(f, p, b, i, wt)

	default: // maps
		return st.mapEntry(f, p, b, pre, i)
	}
}

// appendStruct appends a zero element to the slice of structs at p and returns its
// address. The first append allocates the slice at the number of times field f occurs
// in the rest of the message, so that it never grows.
func (st *decodeState) appendStruct(f *fieldPlan, p unsafe.Pointer, b []byte, pre int) unsafe.Pointer {
	h := (*sliceHeader)(p)
	if h.len == h.cap {
		if h.cap == 0 {
			n := countField(b, pre, f.num)
			if n < len(f.arrays) {
				h.data = reflect.New(f.arrays[n]).UnsafePointer()
			} else {
				h.data = reflect.MakeSlice(f.sliceType, n, n).UnsafePointer()
			}
			h.cap = n
		} else { // an encoding that splits the field's elements (see countField)
			v := reflect.NewAt(f.sliceType, p).Elem()
			grown := reflect.MakeSlice(f.sliceType, h.len, 2*h.cap)
			reflect.Copy(grown, v)
			v.Set(grown)
		}
	}
	e := unsafe.Add(h.data, uintptr(h.len)*f.elemSize)
	h.len++
	return e
}

type sliceHeader struct {
	data unsafe.Pointer
	len  int
	cap  int
}

// repeatedScalar decodes one element (wire type varint or fixed) or a packed run of
// elements (wire type bytes) of a repeated scalar field, as the generated code does:
// the varints of a packed run are bounded by the message, not by the run.
func (st *decodeState) repeatedScalar(f *fieldPlan, p unsafe.Pointer, b []byte, i int, wt uint8) (int, error) {
	if wt != wireBytes {
		return st.scalarElem(f, p, b, i)
	}
	n, j, err := varint(b, i)
	if err != nil {
		return 0, err
	}
	packed := int(n)
	if packed < 0 {
		return 0, errProtoInvalidLength
	}
	end := j + packed
	if end < 0 {
		return 0, errProtoInvalidLength
	}
	if end > len(b) {
		return 0, io.ErrUnexpectedEOF
	}
	for j < end {
		if j, err = st.scalarElem(f, p, b, j); err != nil {
			return 0, err
		}
	}
	return j, nil
}

func (st *decodeState) scalarElem(f *fieldPlan, p unsafe.Pointer, b []byte, i int) (int, error) {
	switch f.kind {
	case kindRepBool, kindRepVarint4, kindRepVarint8:
		v, j, err := varint(b, i)
		if err != nil {
			return 0, err
		}
		switch f.kind {
		case kindRepBool:
			s := (*[]bool)(p)
			*s = append(*s, v != 0)
		case kindRepVarint4:
			s := (*[]uint32)(p)
			*s = append(*s, uint32(v))
		default:
			s := (*[]uint64)(p)
			*s = append(*s, v)
		}
		return j, nil
	case kindRepFixed4:
		if i+4 > len(b) {
			return 0, io.ErrUnexpectedEOF
		}
		s := (*[]uint32)(p)
		*s = append(*s, uint32(b[i])|uint32(b[i+1])<<8|uint32(b[i+2])<<16|uint32(b[i+3])<<24)
		return i + 4, nil
	default:
		if i+8 > len(b) {
			return 0, io.ErrUnexpectedEOF
		}
		s := (*[]uint64)(p)
		*s = append(*s, fixed64(b[i:]))
		return i + 8, nil
	}
}

// mapEntry decodes one map entry (a message with the key as field 1 and the value as
// field 2) into the map at p, as the generated code does: the wire types of key and
// value are not checked, their lengths are bounded by the enclosing message, a missing
// key or value is the zero value (an empty, non-nil []byte for bytes), and the last of
// repeated keys or values wins.
func (st *decodeState) mapEntry(f *fieldPlan, p unsafe.Pointer, b []byte, pre, i int) (int, error) {
	n, i, err := varint(b, i)
	if err != nil {
		return 0, err
	}
	msglen := int(n)
	if msglen < 0 {
		return 0, errProtoInvalidLength
	}
	end := i + msglen
	if end < 0 {
		return 0, errProtoInvalidLength
	}
	if end > len(b) {
		return 0, io.ErrUnexpectedEOF
	}

	var (
		key      string
		strVal   string
		bytesVal = []byte{}
		quantity resource.Quantity
		msgVal   reflect.Value
	)
	if f.kind == kindMapGeneric {
		msgVal = reflect.New(f.elemType)
	}
	for i < end {
		entryPre := i
		var wire uint64
		if wire, i, err = varint(b, i); err != nil {
			return 0, err
		}
		switch int32(wire >> 3) {
		case 1:
			s, j, err := lengthDelimited(b, i)
			if err != nil {
				return 0, err
			}
			key = aliasString(b[j-s : j])
			i = j
		case 2:
			s, j, err := lengthDelimited(b, i)
			if err != nil {
				return 0, err
			}
			v := b[j-s : j]
			switch f.kind {
			case kindMapStringString:
				strVal = aliasString(v)
			case kindMapStringBytes:
				bytesVal = make([]byte, s)
				copy(bytesVal, v)
			case kindMapStringQuantity:
				quantity = resource.Quantity{}
				if err := unmarshalQuantity(unsafe.Pointer(&quantity), v); err != nil {
					return 0, err
				}
			default:
				msgVal = reflect.New(f.elemType)
				if err := st.message(f.sub, msgVal.UnsafePointer(), v); err != nil {
					return 0, err
				}
			}
			i = j
		default:
			i = entryPre
			skip, err := skipField(b[i:])
			if err != nil {
				return 0, err
			}
			if skip < 0 || i+skip < 0 {
				return 0, errProtoInvalidLength
			}
			if i+skip > end {
				return 0, io.ErrUnexpectedEOF
			}
			i += skip
		}
	}

	// The map is created at the number of entries of the field in the rest of the
	// message. Map types are reinterpreted as the unnamed map of the same key and
	// element layout (a named string key hashes and compares as a string).
	switch f.kind {
	case kindMapStringString:
		m := (*map[string]string)(p)
		if *m == nil {
			*m = make(map[string]string, countField(b, pre, f.num))
		}
		(*m)[key] = strVal
	case kindMapStringBytes:
		m := (*map[string][]byte)(p)
		if *m == nil {
			*m = make(map[string][]byte, countField(b, pre, f.num))
		}
		(*m)[key] = bytesVal
	case kindMapStringQuantity:
		m := (*map[string]resource.Quantity)(p)
		if *m == nil {
			*m = make(map[string]resource.Quantity, countField(b, pre, f.num))
		}
		(*m)[key] = quantity
	default:
		m := reflect.NewAt(f.mapType, p).Elem()
		if m.IsNil() {
			m.Set(reflect.MakeMapWithSize(f.mapType, countField(b, pre, f.num)))
		}
		m.SetMapIndex(reflect.ValueOf(key).Convert(f.mapType.Key()), msgVal.Elem())
	}
	return end, nil
}

// varint reads the varint at b[i] as the generated code does: at most ten bytes, bits
// beyond 64 dropped.
func varint(b []byte, i int) (uint64, int, error) {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= 64 {
			return 0, 0, errProtoIntOverflow
		}
		if i >= len(b) {
			return 0, 0, io.ErrUnexpectedEOF
		}
		c := b[i]
		i++
		v |= uint64(c&0x7F) << shift
		if c < 0x80 {
			return v, i, nil
		}
	}
}

// lengthDelimited reads the length at b[i] and checks that many bytes follow; it returns
// the length and the index after the bytes.
func lengthDelimited(b []byte, i int) (int, int, error) {
	var n uint64
	if i < len(b) && b[i] < 0x80 {
		n = uint64(b[i])
		i++
	} else {
		var err error
		if n, i, err = varint(b, i); err != nil {
			return 0, 0, err
		}
	}
	s := int(n)
	if s < 0 {
		return 0, 0, errProtoInvalidLength
	}
	end := i + s
	if end < 0 {
		return 0, 0, errProtoInvalidLength
	}
	if end > len(b) {
		return 0, 0, io.ErrUnexpectedEOF
	}
	return s, end, nil
}

func fixed64(b []byte) uint64 {
	_ = b[7]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// aliasString is b as a string without a copy.
func aliasString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// skipProto returns the index after the field whose tag wire starts at b[i]
// and ends before b[j]: strings, messages and varints directly, other wire
// types (groups included) as skipField does.
func skipProto(b []byte, i, j int, wire uint64) (int, error) {
	switch wire & 7 {
	case wireBytes:
		_, end, err := lengthDelimited(b, j)
		return end, err
	case wireVarint:
		_, end, err := varint(b, j)
		return end, err
	}
	n, err := skipField(b[i:])
	if err != nil {
		return 0, err
	}
	if n <= 0 || i+n > len(b) {
		return 0, errProtoInvalidLength
	}
	return i + n, nil
}

// skipField returns the length of the field (tag included) that starts b, as the
// generated skipGenerated does, groups included.
func skipField(b []byte) (int, error) {
	l := len(b)
	i := 0
	depth := 0
	for i < l {
		wire, j, err := varint(b, i)
		if err != nil {
			return 0, err
		}
		i = j
		switch wire & 7 {
		case wireVarint:
			for {
				if i >= l {
					return 0, io.ErrUnexpectedEOF
				}
				i++
				if b[i-1] < 0x80 {
					break
				}
				if i-j >= 10 {
					return 0, errProtoIntOverflow
				}
			}
		case wireFixed64:
			i += 8
		case wireBytes:
			n, k, err := varint(b, i)
			if err != nil {
				return 0, err
			}
			s := int(n)
			if s < 0 {
				return 0, errProtoInvalidLength
			}
			i = k + s
		case wireStart:
			depth++
		case wireEnd:
			if depth == 0 {
				return 0, errProtoEndOfGroup
			}
			depth--
		case wireFixed32:
			i += 4
		default:
			return 0, fmt.Errorf("proto: illegal wireType %d", wire&7)
		}
		if i < 0 {
			return 0, errProtoInvalidLength
		}
		if depth == 0 {
			return i, nil
		}
	}
	return 0, io.ErrUnexpectedEOF
}

// countField counts the fields numbered num in the run of them that starts at b[i] (a
// tag), to size a slice or map once. Encoders write a repeated field's elements and a
// map's entries one after the other (the generated Marshal does, in field order), so the
// run is all of them; an encoding that splits them (valid, but no Kubernetes encoder
// writes one) only makes the slice or map grow past its first size. It stops at
// malformed input, counting at least one.
func countField(b []byte, i int, num int32) int {
	n := 0
	for i < len(b) {
		wire, j, err := varint(b, i)
		if err != nil {
			break
		}
		if int32(wire>>3) != num {
			break
		}
		n++
		switch wire & 7 {
		case wireVarint:
			_, j, err = varint(b, j)
		case wireFixed64:
			j += 8
		case wireBytes:
			j, err = skipBytes(b, j)
		case wireFixed32:
			j += 4
		default:
			err = errProtoEndOfGroup
		}
		if err != nil || j > len(b) {
			break
		}
		i = j
	}
	return max(n, 1)
}

func skipBytes(b []byte, i int) (int, error) {
	_, j, err := lengthDelimited(b, i)
	return j, err
}

// Hand-written protobuf methods.

func unmarshalTime(p unsafe.Pointer, b []byte) error {
	return (*metav1.Time)(p).Unmarshal(b)
}

func unmarshalMicroTime(p unsafe.Pointer, b []byte) error {
	return (*metav1.MicroTime)(p).Unmarshal(b)
}

// unmarshalQuantity is (*resource.Quantity).Unmarshal without the copy of the string it
// parses, through the cache of the strings parsed last (quantity_cache.go).
func unmarshalQuantity(p unsafe.Pointer, b []byte) error {
	l := len(b)
	i := 0
	for i < l {
		pre := i
		wire, j, err := varint(b, i)
		if err != nil {
			return err
		}
		i = j
		num := int32(wire >> 3)
		wt := wire & 7
		if wt == wireEnd {
			return fmt.Errorf("proto: Quantity: wiretype end group for non-group")
		}
		if num <= 0 {
			return fmt.Errorf("proto: Quantity: illegal tag %d (wire type %d)", num, wire)
		}
		if num != 1 {
			n, err := skipField(b[pre:])
			if err != nil {
				return err
			}
			if n < 0 || pre+n < 0 {
				return errProtoInvalidLength
			}
			if pre+n > l {
				return io.ErrUnexpectedEOF
			}
			i = pre + n
			continue
		}
		if wt != wireBytes {
			return fmt.Errorf("proto: wrong wireType = %d for field String_", wt)
		}
		s, end, err := lengthDelimited(b, i)
		if err != nil {
			return err
		}
		q, err := parseQuantity(b[end-s : end])
		if err != nil {
			return err
		}
		*(*resource.Quantity)(p) = q
		i = end
	}
	return nil
}
