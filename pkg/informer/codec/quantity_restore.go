package codec

import (
	"reflect"
	"sync"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Encoding without a trace. The generated protobuf Marshal of Kubernetes'
// types writes a resource.Quantity as (*Quantity).String(), which caches the
// string in the Quantity the first time. A Marshal therefore fills the cache
// of every Quantity it reaches in place: through a pointer (an emptyDir's
// sizeLimit, an HPA's averageValue), a struct field or a slice element. It
// copies map values, so the Quantities of a ResourceList are left alone, but
// not what a map value points to (a ResourceSlice capacity's request
// policy). A decoded object holds the cache only where resource.ParseQuantity
// set it ("100m" and "1Gi" yes, "64Mi" and "512Mi" no), so an encoded object
// no longer equals, by reflect.DeepEqual, the same object decoded, which is
// what controller-runtime's cache hands out. Protobuf.Encode saves those
// Quantities before Marshal and puts them back after (quantityPlan).
//
// The other codecs leave objects alone: CBOR marshals Quantity by value (its
// MarshalCBOR has a value receiver, so String caches into a copy), and
// unstructured content holds no Quantity.

// quantityPlan says where, in a value of one Go type, a Marshal may fill a
// Quantity's cached string: a tree of the fields, pointers, slices, arrays
// and maps that lead to such a Quantity, walked on the value's memory by
// offsets (as protoDecoder decodes). A Pod's walk visits its volumes, its
// containers' env vars and little else (about 80 ns for a typical pod); a
// kind whose Quantities all sit in ResourceLists (Node), or that has none,
// has no plan and costs nothing.
type quantityPlan struct {
	kind quantityStep
	// fields of a struct: where each field that leads to a Quantity is.
	fields []quantityField
	// elem is what a pointer points to, or the element of a slice or an
	// array (elemSize apart, n of them for an array), or a map's value.
	elem     *quantityPlan
	elemSize uintptr
	n        int
	// mapType is the type of a map: its values are copies (Marshal copies
	// them too), walked for the pointers and slices they hold.
	mapType reflect.Type
}

type quantityStep uint8

const (
	stepQuantity quantityStep = iota
	stepPointer
	stepSlice
	stepArray
	stepMap
	stepStruct
)

type quantityField struct {
	offset uintptr
	plan   *quantityPlan
}

// savedQuantity is a Quantity of the object being encoded, as it was.
type savedQuantity struct {
	at  *resource.Quantity
	was resource.Quantity
}

// savedPool recycles the slices Encode saves Quantities in.
var savedPool = sync.Pool{New: func() any { return new([]savedQuantity) }}

// quantityPlans caches plans per type (reflect.Type → *quantityPlan; a nil
// plan for types without such Quantities).
var quantityPlans sync.Map

// quantityPlanOf returns the plan of type t, nil when no Marshal of a t can
// modify a Quantity.
func quantityPlanOf(t reflect.Type) *quantityPlan {
	if p, ok := quantityPlans.Load(t); ok {
		return p.(*quantityPlan)
	}
	p := newQuantityPlan(t)
	quantityPlans.Store(t, p)
	return p
}

// newQuantityPlan decides, for every type reachable from t, whether a value
// of it leads to a Quantity in place, when the value itself is in place
// (addr) and when it is a copy (copied), as a least fixed point so that
// recursive types are decided right; then builds the plan of t in place.
func newQuantityPlan(t reflect.Type) *quantityPlan {
	var types []reflect.Type
	seen := map[reflect.Type]bool{}
	var collect func(reflect.Type)
	collect = func(t reflect.Type) {
		if seen[t] {
			return
		}
		seen[t] = true
		types = append(types, t)
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			collect(t.Elem())
		case reflect.Struct:
			if t == quantityType {
				return
			}
			for i := range t.NumField() {
				collect(t.Field(i).Type)
			}
		}
	}
	collect(t)
	addr, copied := map[reflect.Type]bool{quantityType: true}, map[reflect.Type]bool{}
	for changed := true; changed; {
		changed = false
		for _, t := range types {
			a, c := reaches(t, addr, copied)
			if a != addr[t] || c != copied[t] {
				addr[t], copied[t], changed = a, c, true
			}
		}
	}
	if !addr[t] {
		return nil
	}
	b := planBuilder{addr: addr, copied: copied, built: map[planKey]*quantityPlan{}}
	return b.plan(t, true)
}

// reaches is one step of newQuantityPlan's fixed point for t: whether a value
// of t in place (a) or copied (c) leads to a Quantity in place, given what is
// known of the types it holds. Interfaces are not followed: Marshal writes a
// RawExtension's bytes, not its Object.
func reaches(t reflect.Type, addr, copied map[reflect.Type]bool) (a, c bool) {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice:
		// What they point to is in place, whether they are or not.
		return addr[t.Elem()], addr[t.Elem()]
	case reflect.Array:
		return addr[t.Elem()], copied[t.Elem()]
	case reflect.Map:
		// Marshal copies map values.
		return copied[t.Elem()], copied[t.Elem()]
	case reflect.Struct:
		if t == quantityType {
			return true, false
		}
		for i := range t.NumField() {
			ft := t.Field(i).Type
			a = a || addr[ft]
			c = c || copied[ft]
		}
		return a, c
	}
	return false, false
}

type planKey struct {
	t       reflect.Type
	inPlace bool
}

type planBuilder struct {
	addr, copied map[reflect.Type]bool
	built        map[planKey]*quantityPlan
}

// plan returns the plan of t, in place or copied, which must lead to a
// Quantity in place (b.addr[t] or b.copied[t]).
func (b *planBuilder) plan(t reflect.Type, inPlace bool) *quantityPlan {
	key := planKey{t, inPlace}
	if p := b.built[key]; p != nil {
		return p
	}
	p := &quantityPlan{}
	b.built[key] = p // before its elements: recursive types refer to it
	switch t.Kind() {
	case reflect.Pointer:
		p.kind, p.elem = stepPointer, b.plan(t.Elem(), true)
	case reflect.Slice:
		p.kind, p.elem, p.elemSize = stepSlice, b.plan(t.Elem(), true), t.Elem().Size()
	case reflect.Array:
		p.kind, p.elem, p.elemSize, p.n = stepArray, b.plan(t.Elem(), inPlace), t.Elem().Size(), t.Len()
	case reflect.Map:
		p.kind, p.elem, p.mapType = stepMap, b.plan(t.Elem(), false), t
	case reflect.Struct:
		if t == quantityType {
			p.kind = stepQuantity
			break
		}
		p.kind = stepStruct
		for i := range t.NumField() {
			f := t.Field(i)
			if inPlace && b.addr[f.Type] || !inPlace && b.copied[f.Type] {
				p.fields = append(p.fields, quantityField{offset: f.Offset, plan: b.plan(f.Type, inPlace)})
			}
		}
	}
	return p
}

// save appends to saved every Quantity that a Marshal may modify in the
// value at v, with its value.
func (p *quantityPlan) save(v unsafe.Pointer, saved []savedQuantity) []savedQuantity {
	switch p.kind {
	case stepQuantity:
		q := (*resource.Quantity)(v)
		saved = append(saved, savedQuantity{at: q, was: *q})
	case stepPointer:
		if e := *(*unsafe.Pointer)(v); e != nil {
			saved = p.elem.save(e, saved)
		}
	case stepSlice:
		h := (*sliceHeader)(v)
		for i := range h.len {
			saved = p.elem.save(unsafe.Add(h.data, uintptr(i)*p.elemSize), saved)
		}
	case stepArray:
		for i := range p.n {
			saved = p.elem.save(unsafe.Add(v, uintptr(i)*p.elemSize), saved)
		}
	case stepMap:
		m := reflect.NewAt(p.mapType, v).Elem()
		if m.Len() == 0 {
			break
		}
		// A copy of each value, for the pointers and slices it holds.
		value := reflect.New(p.mapType.Elem()).Elem()
		for it := m.MapRange(); it.Next(); {
			value.SetIterValue(it)
			saved = p.elem.save(value.Addr().UnsafePointer(), saved)
		}
	case stepStruct:
		for _, f := range p.fields {
			saved = f.plan.save(unsafe.Add(v, f.offset), saved)
		}
	}
	return saved
}

// marshalUntouched appends m's encoding to dst (nil: returns a new slice, as
// m.Marshal does; see appendMarshal) and leaves obj, m's object (a pointer to a
// value of p's type), as it was (p may be nil: nothing to save).
func (p *quantityPlan) marshalUntouched(dst []byte, obj any, m protoMessage) ([]byte, error) {
	if p == nil {
		return appendMarshal(dst, m)
	}
	sp := savedPool.Get().(*[]savedQuantity)
	saved := p.save(reflect.ValueOf(obj).UnsafePointer(), (*sp)[:0])
	data, err := appendMarshal(dst, m)
	for _, s := range saved {
		*s.at = s.was
	}
	clear(saved)
	*sp = saved[:0]
	savedPool.Put(sp)
	return data, err
}
