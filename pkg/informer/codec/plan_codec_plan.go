package codec

import (
	"fmt"
	"reflect"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The plans of the Plan codec (plan_codec.go): for a Go type, how its values
// are laid out in memory (offsets and kinds, from package reflect) and in the
// encoding. A plan is built once per type, cached, and never changes after it
// is published.

// valueOp is how a value of a plan is encoded and decoded.
type valueOp uint8

const (
	opBool         valueOp = iota
	opInt                  // signed integers of size bytes: zigzag varint
	opUint                 // unsigned integers of size bytes: varint
	opFloat32              // IEEE 754 bits, 4 bytes little-endian
	opFloat64              // IEEE 754 bits, 8 bytes little-endian
	opString               // varint length, bytes
	opBytes                // a slice of a byte kind: varint length+1 (0: nil), bytes
	opPtr                  // a presence byte, then the pointed-to value
	opSlice                // varint length+1 (0: nil), the elements
	opArray                // the elements
	opMap                  // varint length+1 (0: nil), key/value pairs in key order
	opStruct               // the fields, in the plan's order
	opEmpty                // a struct or array without content: one byte, 0
	opTime                 // time.Time: see encodeTime
	opQuantity             // resource.Quantity: see encodeQuantity
	opRawExtension         // runtime.RawExtension: Raw as opBytes; Object must be nil
)

// pcPlan is the plan of one Go type.
type pcPlan struct {
	op     valueOp
	typ    reflect.Type
	size   uintptr        // typ.Size()
	elem   *pcPlan        // opPtr, opSlice, opArray: the element; opMap: the value
	key    *pcPlan        // opMap
	fields []pcField      // opStruct: nested structs flattened, in encoding order
	n      int            // opArray: the length
	fast   mapFastPath    // opMap: a map type decoded without reflect
	quant  quantityLayout // opQuantity
	rawObj uintptr        // opRawExtension: offset of Object (Raw is at 0)
}

// pcField is a field of a struct plan at offset from the struct's start.
type pcField struct {
	offset uintptr
	plan   *pcPlan
}

// mapFastPath names the map types the decoder fills without reflect.
type mapFastPath uint8

const (
	mapGeneric mapFastPath = iota
	mapStringString
	mapStringInt32
)

// quantityLayout is where resource.Quantity keeps its unexported state, read
// from package reflect when the plan is built (see pcQuantityLayout).
type quantityLayout struct {
	value, scale, dec, str, format uintptr
}

var (
	timeType         = reflect.TypeFor[time.Time]()
	rawExtensionType = reflect.TypeFor[runtime.RawExtension]()
	objectMetaType   = reflect.TypeFor[metav1.ObjectMeta]()
	typeMetaType     = reflect.TypeFor[metav1.TypeMeta]()
)

// pcCache holds the plans built so far, and the error of each type that
// could not be planned. pcMu serializes building (plans of recursive types
// refer to themselves while they are built).
var (
	pcMu    sync.Mutex
	pcCache sync.Map // reflect.Type → pcResult
)

type pcResult struct {
	plan *pcPlan
	err  error
}

// pcPlanOf returns the plan of t, building it (and the plans it refers to) on
// first use, or an error naming the first field it cannot plan.
func pcPlanOf(t reflect.Type) (*pcPlan, error) {
	if r, ok := pcCache.Load(t); ok {
		return r.(pcResult).plan, r.(pcResult).err
	}
	pcMu.Lock()
	defer pcMu.Unlock()
	if r, ok := pcCache.Load(t); ok {
		return r.(pcResult).plan, r.(pcResult).err
	}
	b := pcBuilder{building: map[reflect.Type]*pcPlan{}}
	p, err := b.plan(t, t.String())
	if err != nil {
		pcCache.Store(t, pcResult{err: err})
		return nil, err
	}
	for bt, bp := range b.building {
		pcCache.Store(bt, pcResult{plan: bp})
	}
	return p, nil
}

// pcBuilder builds the plans of one pcPlanOf call. building holds every plan
// started, so that a recursive type refers to its own plan; none is published
// unless all succeed.
type pcBuilder struct {
	building map[reflect.Type]*pcPlan
}

func (b *pcBuilder) plan(t reflect.Type, path string) (*pcPlan, error) {
	if p, ok := b.building[t]; ok {
		return p, nil
	}
	if r, ok := pcCache.Load(t); ok {
		return r.(pcResult).plan, r.(pcResult).err
	}
	p := &pcPlan{typ: t, size: t.Size()}
	b.building[t] = p
	if err := b.fill(p, t, path); err != nil {
		return nil, err
	}
	return p, nil
}

// fill sets p's op and parts for type t.
func (b *pcBuilder) fill(p *pcPlan, t reflect.Type, path string) error {
	switch t {
	case timeType:
		p.op = opTime
		return nil
	case quantityType:
		l, err := pcQuantityLayout()
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		p.op, p.quant = opQuantity, l
		return nil
	case rawExtensionType:
		raw, _ := t.FieldByName("Raw")
		obj, _ := t.FieldByName("Object")
		if raw.Offset != 0 || raw.Type != reflect.TypeFor[[]byte]() || obj.Type.Kind() != reflect.Interface {
			return fmt.Errorf("%s: unexpected layout of runtime.RawExtension", path)
		}
		p.op, p.rawObj = opRawExtension, obj.Offset
		return nil
	}
	var err error
	switch t.Kind() {
	case reflect.Bool:
		p.op = opBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		p.op = opInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		p.op = opUint
	case reflect.Float32:
		p.op = opFloat32
	case reflect.Float64:
		p.op = opFloat64
	case reflect.String:
		p.op = opString
	case reflect.Pointer:
		p.op = opPtr
		p.elem, err = b.plan(t.Elem(), path)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			p.op = opBytes
			return nil
		}
		p.op = opSlice
		p.elem, err = b.plan(t.Elem(), path+"[]")
	case reflect.Array:
		p.op, p.n = opArray, t.Len()
		if p.n == 0 {
			p.op = opEmpty
			return nil
		}
		p.elem, err = b.plan(t.Elem(), path+"[]")
	case reflect.Map:
		p.op = opMap
		if p.key, err = b.plan(t.Key(), path+"{key}"); err != nil {
			return err
		}
		p.elem, err = b.plan(t.Elem(), path+"{}")
		switch t {
		case reflect.TypeFor[map[string]string]():
			p.fast = mapStringString
		case reflect.TypeFor[map[string]int32]():
			p.fast = mapStringInt32
		}
	case reflect.Struct:
		p.op = opStruct
		if p.fields, err = b.structFields(nil, t, 0, path); err == nil && len(p.fields) == 0 {
			p.op = opEmpty
		}
	default:
		return fmt.Errorf("%s: cannot plan a field of kind %v", path, t.Kind())
	}
	return err
}

// structFields appends the fields of struct type t at offset base to dst in
// encoding order: those of nested structs (without custom handling) flattened
// into their parent's list. In ObjectMeta, Labels comes first, so that
// AppendLabels finds them at a known place.
func (b *pcBuilder) structFields(dst []pcField, t reflect.Type, base uintptr, path string) ([]pcField, error) {
	order := make([]int, 0, t.NumField())
	if t == objectMetaType {
		l, _ := t.FieldByName("Labels")
		order = append(order, l.Index[0])
	}
	for i := range t.NumField() {
		if t != objectMetaType || t.Field(i).Name != "Labels" {
			order = append(order, i)
		}
	}
	for _, i := range order {
		var err error
		if dst, err = b.field(dst, t.Field(i), base, path); err != nil {
			return nil, err
		}
	}
	return dst, nil
}

// field appends the plan of field f of a struct at offset base to dst: a
// nested struct without custom handling as its own fields.
func (b *pcBuilder) field(dst []pcField, f reflect.StructField, base uintptr, path string) ([]pcField, error) {
	fpath := path + "." + f.Name
	if !f.IsExported() {
		return nil, fmt.Errorf("%s: unexported field", fpath)
	}
	ft := f.Type
	if ft.Kind() == reflect.Struct && ft != timeType && ft != quantityType && ft != rawExtensionType {
		return b.structFields(dst, ft, base+f.Offset, fpath)
	}
	fp, err := b.plan(ft, fpath)
	if err != nil {
		return nil, err
	}
	if fp.op == opEmpty && fp.size == 0 {
		return dst, nil // nothing to keep
	}
	return append(dst, pcField{offset: base + f.Offset, plan: fp}), nil
}

// pcQuantityLayout reads where resource.Quantity keeps its int64 amount
// (value, scale), its inf.Dec pointer, its cached string and its Format, and
// checks their kinds, so that a change of the type's layout in a later
// apimachinery makes the planner refuse it instead of misreading it.
func pcQuantityLayout() (quantityLayout, error) {
	t := quantityType
	i, ok1 := t.FieldByName("i")
	d, ok2 := t.FieldByName("d")
	s, ok3 := t.FieldByName("s")
	f, ok4 := t.FieldByName("Format")
	if !ok1 || !ok2 || !ok3 || !ok4 || t.NumField() != 4 {
		return quantityLayout{}, fmt.Errorf("unexpected layout of resource.Quantity")
	}
	v, ok5 := i.Type.FieldByName("value")
	sc, ok6 := i.Type.FieldByName("scale")
	if !ok5 || !ok6 || i.Type.NumField() != 2 || v.Type.Kind() != reflect.Int64 || sc.Type.Kind() != reflect.Int32 ||
		d.Type.Kind() != reflect.Struct || d.Type.NumField() != 1 || d.Type.Field(0).Type.Kind() != reflect.Pointer ||
		s.Type.Kind() != reflect.String || f.Type.Kind() != reflect.String {
		return quantityLayout{}, fmt.Errorf("unexpected layout of resource.Quantity")
	}
	return quantityLayout{
		value:  i.Offset + v.Offset,
		scale:  i.Offset + sc.Offset,
		dec:    d.Offset + d.Type.Field(0).Offset,
		str:    s.Offset,
		format: f.Offset,
	}, nil
}

// pcRoot is the plan of a top-level kind: its fields in encoding order with
// an embedded ObjectMeta first (Labels first in it), and the offset of an
// embedded TypeMeta, which the codec encodes on its own (plan_codec.go).
type pcRoot struct {
	typ      reflect.Type
	fields   []pcField
	typeMeta uintptr // offset of TypeMeta; valid if hasTypeMeta
	// hasTypeMeta: typ embeds metav1.TypeMeta; metaFirst: typ embeds
	// metav1.ObjectMeta, whose Labels open the encoding after the TypeMeta.
	hasTypeMeta, metaFirst bool
}

// pcRootOf builds the plan of struct type t as a top-level kind.
func pcRootOf(t reflect.Type) (*pcRoot, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("plan codec: %v is not a struct type", t)
	}
	// Every field type must plan; pcPlanOf also checks the unexported fields.
	if _, err := pcPlanOf(t); err != nil {
		return nil, err
	}
	pcMu.Lock()
	defer pcMu.Unlock()
	r := &pcRoot{typ: t}
	b := pcBuilder{building: map[reflect.Type]*pcPlan{}}
	var rest []pcField
	for i := range t.NumField() {
		f := t.Field(i)
		var err error
		switch {
		case f.Anonymous && f.Type == typeMetaType && !r.hasTypeMeta:
			r.hasTypeMeta, r.typeMeta = true, f.Offset
		case f.Anonymous && f.Type == objectMetaType && !r.metaFirst:
			r.metaFirst = true
			r.fields, err = b.field(nil, f, 0, t.String())
		default:
			rest, err = b.field(rest, f, 0, t.String())
		}
		if err != nil {
			return nil, err
		}
	}
	r.fields = append(r.fields, rest...)
	return r, nil
}
