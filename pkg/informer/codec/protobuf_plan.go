package codec

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The plans of protoDecoder: for every message type, what to do with each field number,
// compiled once from the type's protobuf struct tags and Go types.

// fieldKind is what decoding one field does.
type fieldKind uint8

const (
	kindNone fieldKind = iota // no field of that number: skip it

	kindString  // string (or a named string)
	kindBytes   // []byte, copied
	kindBool    // bool from a varint
	kindVarint4 // int32 or uint32 (or named) from a varint, truncated
	kindVarint8 // int64, uint64, int (or named) from a varint
	kindFixed4  // 4 little-endian bytes: float32, int32, uint32
	kindFixed8  // 8 little-endian bytes: float64, int64, uint64

	// The pointer and repeated kinds are in the order of the plain ones.
	kindPtrString
	kindPtrBytes // unused: a *[]byte is no Kubernetes field
	kindPtrBool
	kindPtrVarint4
	kindPtrVarint8
	kindPtrFixed4
	kindPtrFixed8

	kindMessage    // a struct field: decoded in place (merged, as the generated code does)
	kindPtrMessage // a pointer to a struct: allocated if nil, then decoded in place

	kindRepString
	kindRepBytes
	kindRepBool
	kindRepVarint4
	kindRepVarint8
	kindRepFixed4
	kindRepFixed8
	kindRepMessage // a slice of structs

	kindMapStringString   // map[~string]~string
	kindMapStringBytes    // map[~string][]byte
	kindMapStringQuantity // map[~string]resource.Quantity (corev1.ResourceList)
	kindMapGeneric        // any other map with string keys, through reflect
)

// messagePlan is how to decode one message type.
type messagePlan struct {
	typ reflect.Type
	// fields is indexed by field number; numbers beyond it are unknown fields.
	fields []fieldPlan
	// unmarshal, when set, decodes the whole message instead of fields: the type's own
	// (hand-written) Unmarshal method, or our equivalent of it.
	unmarshal func(p unsafe.Pointer, b []byte) error
	// A small type (metav1.Time, FieldsV1...) that pointer fields point to is allocated
	// slabLen at a time, in an array of type slab, from decodeState.slabs[slabID-1].
	slabID int
	slab   reflect.Type
}

const (
	slabLen     = 4
	maxSlabs    = 16
	maxSlabElem = 32 // bytes
)

// slabIDs is the number of slab IDs given out (under planMu), to the first small types
// that pointer fields point to.
var slabIDs int

// fieldPlan is how to decode one field of a message.
type fieldPlan struct {
	kind   fieldKind
	wire   uint8 // the wire type the field accepts (repeated scalars also accept wireBytes)
	num    int32
	offset uintptr
	name   string

	sub    *messagePlan // kindMessage, kindPtrMessage, kindRepMessage, kindMapGeneric
	nonNil bool         // kindMessage of a slice or map type: made non-nil before the decode

	// Slices of structs.
	sliceType reflect.Type
	elemSize  uintptr
	arrays    []reflect.Type // arrays[n] is [n]elem for small n: allocates a backing array in one step

	// Maps; the plan of a message value is sub.
	mapType  reflect.Type
	elemType reflect.Type
}

type protoUnmarshaler interface {
	Unmarshal([]byte) error
}

var (
	unmarshalerType = reflect.TypeFor[protoUnmarshaler]()
	quantityType    = reflect.TypeFor[resource.Quantity]()
	// handWritten are the types whose protobuf methods are written by hand, with our
	// equivalent of their Unmarshal.
	handWritten = map[reflect.Type]func(unsafe.Pointer, []byte) error{
		reflect.TypeFor[metav1.Time]():      unmarshalTime,
		reflect.TypeFor[metav1.MicroTime](): unmarshalMicroTime,
		quantityType:                        unmarshalQuantity,
	}
)

// Plans, compiled once per type. A planning holds planMu and publishes its plans only
// when all of them are complete, so readers of plans never see one being built.
var (
	plans  sync.Map // reflect.Type → *messagePlan
	planMu sync.Mutex
)

func planMessage(t reflect.Type) (*messagePlan, error) {
	if mp, ok := plans.Load(t); ok {
		return mp.(*messagePlan), nil
	}
	planMu.Lock()
	defer planMu.Unlock()
	pl := planner{pending: map[reflect.Type]*messagePlan{}}
	mp, err := pl.message(t)
	if err != nil {
		return nil, err
	}
	for t, mp := range pl.pending {
		plans.Store(t, mp)
	}
	return mp, nil
}

type planner struct {
	pending map[reflect.Type]*messagePlan
}

// message plans the message type t. t must be a struct with protobuf tags, a type with
// hand-written protobuf methods, or a type with an Unmarshal method and no tags.
func (pl *planner) message(t reflect.Type) (*messagePlan, error) {
	if mp, ok := plans.Load(t); ok {
		return mp.(*messagePlan), nil
	}
	if mp, ok := pl.pending[t]; ok { // a recursive type: the plan is being built
		return mp, nil
	}
	mp := &messagePlan{typ: t}
	pl.pending[t] = mp
	if u, ok := handWritten[t]; ok {
		mp.unmarshal = u
		return mp, nil
	}
	if t.Kind() != reflect.Struct || !hasProtobufTags(t) {
		if !reflect.PointerTo(t).Implements(unmarshalerType) {
			return nil, fmt.Errorf("protobuf decoder: %v has neither protobuf tags nor an Unmarshal method", t)
		}
		mp.unmarshal = func(p unsafe.Pointer, b []byte) error {
			return reflect.NewAt(t, p).Interface().(protoUnmarshaler).Unmarshal(b)
		}
		return mp, nil
	}
	var fields []fieldPlan
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, ok := sf.Tag.Lookup("protobuf")
		if !ok || tag == "-" {
			continue
		}
		f, err := pl.field(sf, tag)
		if err != nil {
			return nil, fmt.Errorf("protobuf decoder: field %v.%s: %w", t, sf.Name, err)
		}
		if int(f.num) >= len(fields) {
			fields = append(fields, make([]fieldPlan, int(f.num)+1-len(fields))...)
		}
		if fields[f.num].kind != kindNone {
			return nil, fmt.Errorf("protobuf decoder: field %v.%s: number %d is also %s", t, sf.Name, f.num, fields[f.num].name)
		}
		fields[f.num] = f
	}
	mp.fields = fields
	return mp, nil
}

// giveSlab gives the plan mp of a type that a pointer field points to a slab, if the
// type is small, the plan is not published yet, and slabs remain.
func (pl *planner) giveSlab(mp *messagePlan) {
	size := mp.typ.Size()
	if mp.slabID != 0 || pl.pending[mp.typ] != mp || size == 0 || size > maxSlabElem || slabIDs == maxSlabs {
		return
	}
	slabIDs++
	mp.slabID, mp.slab = slabIDs, reflect.ArrayOf(slabLen, mp.typ)
}

func hasProtobufTags(t reflect.Type) bool {
	for i := range t.NumField() {
		if tag, ok := t.Field(i).Tag.Lookup("protobuf"); ok && tag != "-" {
			return true
		}
	}
	return false
}

const maxFieldNumber = 1 << 12 // plans index fields by number; Kubernetes uses small ones

// field plans one tagged field: `protobuf:"<wire>,<number>,<opt|req|rep>,name=...,..."`.
// Only the number is taken from the tag as written: the wire type and repetition are
// those of the Go type (tags of Kubernetes types say "bytes" for some ints and "rep" for
// a bool, and their generated code follows the type), except that an integer tagged
// fixed32 or fixed64 is fixed-size.
func (pl *planner) field(sf reflect.StructField, tag string) (fieldPlan, error) {
	parts := strings.Split(tag, ",")
	if len(parts) < 3 {
		return fieldPlan{}, fmt.Errorf("malformed protobuf tag %q", tag)
	}
	num, err := strconv.Atoi(parts[1])
	if err != nil || num <= 0 || num > maxFieldNumber {
		return fieldPlan{}, fmt.Errorf("unsupported field number in protobuf tag %q", tag)
	}
	if strings.HasPrefix(parts[0], "zigzag") {
		return fieldPlan{}, fmt.Errorf("unsupported wire type %q", parts[0])
	}
	f := fieldPlan{num: int32(num), offset: sf.Offset, name: sf.Name, wire: wireBytes}
	return f, pl.fieldOfType(&f, sf.Type, parts[0])
}

func (pl *planner) fieldOfType(f *fieldPlan, t reflect.Type, wireName string) error {
	if k, w, ok := scalarKind(t, wireName); ok {
		f.kind, f.wire = k, w
		return nil
	}
	switch {
	case t.Kind() == reflect.String:
		f.kind = kindString
	case isBytes(t):
		f.kind = kindBytes
	case t.Kind() == reflect.Pointer:
		e := t.Elem()
		if k, w, ok := scalarKind(e, wireName); ok {
			f.kind, f.wire = k+kindPtrString-kindString, w
			return nil
		}
		if e.Kind() == reflect.String {
			f.kind = kindPtrString
			return nil
		}
		sub, err := pl.message(e)
		if err != nil {
			return err
		}
		f.kind, f.sub = kindPtrMessage, sub
		pl.giveSlab(sub)
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Map) && reflect.PointerTo(t).Implements(unmarshalerType):
		// A message of a named slice or map type (metav1.Verbs): the generated code
		// makes the field non-nil before it decodes into it.
		sub, err := pl.message(t)
		if err != nil {
			return err
		}
		f.kind, f.sub, f.nonNil = kindMessage, sub, true
	case t.Kind() == reflect.Map:
		return pl.mapField(f, t)
	case t.Kind() == reflect.Slice:
		e := t.Elem()
		if k, w, ok := scalarKind(e, wireName); ok {
			f.kind, f.wire = k+kindRepString-kindString, w
			return nil
		}
		switch {
		case e.Kind() == reflect.String:
			f.kind = kindRepString
		case isBytes(e):
			f.kind = kindRepBytes
		case e.Kind() == reflect.Struct:
			sub, err := pl.message(e)
			if err != nil {
				return err
			}
			f.kind, f.sub = kindRepMessage, sub
			f.sliceType, f.elemSize = t, e.Size()
			f.arrays = make([]reflect.Type, 9)
			for n := 1; n < len(f.arrays); n++ {
				f.arrays[n] = reflect.ArrayOf(n, e)
			}
		default:
			return fmt.Errorf("unsupported repeated type %v", t)
		}
	case t.Kind() == reflect.Struct:
		sub, err := pl.message(t)
		if err != nil {
			return err
		}
		f.kind, f.sub = kindMessage, sub
	default:
		return fmt.Errorf("unsupported type %v", t)
	}
	return nil
}

// scalarKind is the kind (of a plain field) and wire type of the scalar type t, if it
// is one.
func scalarKind(t reflect.Type, wireName string) (fieldKind, uint8, bool) {
	size := t.Size()
	switch t.Kind() {
	case reflect.Bool:
		return kindBool, wireVarint, true
	case reflect.Int32, reflect.Uint32, reflect.Int64, reflect.Uint64, reflect.Int, reflect.Uint:
		switch {
		case wireName == "fixed32" && size == 4:
			return kindFixed4, wireFixed32, true
		case wireName == "fixed64" && size == 8:
			return kindFixed8, wireFixed64, true
		case size == 4:
			return kindVarint4, wireVarint, true
		default:
			return kindVarint8, wireVarint, true
		}
	case reflect.Float32:
		return kindFixed4, wireFixed32, true
	case reflect.Float64:
		return kindFixed8, wireFixed64, true
	}
	return kindNone, 0, false
}

func (pl *planner) mapField(f *fieldPlan, t reflect.Type) error {
	if t.Key().Kind() != reflect.String {
		return fmt.Errorf("map key of type %v", t.Key())
	}
	e := t.Elem()
	f.mapType, f.elemType = t, e
	switch {
	case e.Kind() == reflect.String:
		f.kind = kindMapStringString
	case isBytes(e):
		f.kind = kindMapStringBytes
	case e == quantityType:
		f.kind = kindMapStringQuantity
	default:
		sub, err := pl.message(e)
		if err != nil {
			return err
		}
		f.kind, f.sub = kindMapGeneric, sub
	}
	return nil
}

func isBytes(t reflect.Type) bool {
	return t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8
}
