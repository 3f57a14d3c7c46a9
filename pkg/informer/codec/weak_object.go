package codec

import (
	"reflect"
	"unsafe"
	"weak"
)

// WeakObject is a weak reference to a decoded object of any pointer type (a
// *corev1.Pod, an *unstructured.Unstructured ...): it does not keep the
// object alive, and Value returns the object for as long as something else
// does. pkg/informer uses it to hand a handler the object a list or a
// stream decoded, instead of decoding the stored bytes again, when that
// object is still in memory (the Reflector let it go once it was encoded).
//
// The weak package's Pointer is typed; an object reaches pkg/informer as an
// interface whose pointer type only reflection knows, so WeakObject keeps
// that type beside a weak pointer to the object's first byte (an interior
// pointer, such as an element of a list's Items, is allowed: the weak
// pointer follows the allocation that holds it). The unsafe conversions are
// the only ones: a pointer to the object's memory becomes a *byte for
// weak.Make, and back into a pointer of the object's type for Value.
//
// The zero WeakObject refers to nothing. A WeakObject is a value, safe to
// copy and to use from several goroutines.
type WeakObject struct {
	typ reflect.Type // the object's pointer type
	ptr weak.Pointer[byte]
}

// MakeWeakObject returns a weak reference to obj: obj must be a non-nil
// pointer (anything else, and a pointer to a zero-size type, gives the zero
// WeakObject).
func MakeWeakObject(obj any) WeakObject {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Type().Elem().Size() == 0 {
		return WeakObject{}
	}
	return WeakObject{typ: v.Type(), ptr: weak.Make((*byte)(v.UnsafePointer()))}
}

// Value returns the object w refers to, as the pointer MakeWeakObject was
// given; nil when the object is no longer in memory (or w is zero). Go's
// weak pointers may keep returning an unreachable object until the garbage
// collector has run: that object is still whole and unchanged by anyone.
func (w WeakObject) Value() any {
	if w.typ == nil {
		return nil
	}
	p := w.ptr.Value()
	if p == nil {
		return nil
	}
	return reflect.NewAt(w.typ.Elem(), unsafe.Pointer(p)).Interface()
}
