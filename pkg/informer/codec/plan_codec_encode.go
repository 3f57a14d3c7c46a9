package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"time"
	"unsafe"
)

// The Plan codec's encoder: follows a plan over a value in memory (unsafe
// reads at the plan's offsets) and appends its encoding. The format is
// described at pcPlan's ops (plan_codec_plan.go); it has no field names or
// numbers, since the plan of the same Go type reads it back.

// pcMaxDepth bounds the nesting of pointers, slices and maps the encoder
// follows and the decoder accepts: what encodes also decodes.
const pcMaxDepth = 1000

var (
	errPCDepth     = errors.New("plan codec: value nested too deeply")
	errPCTime      = errors.New("plan codec: time.Time with a monotonic reading or a location other than UTC and Local")
	errPCQuantity  = errors.New("plan codec: resource.Quantity in inf.Dec form")
	errPCRawObject = errors.New("plan codec: runtime.RawExtension with an Object")
)

type pcEncoder struct {
	buf   []byte
	depth int
}

func (e *pcEncoder) uvarint(v uint64) { e.buf = binary.AppendUvarint(e.buf, v) }

func (e *pcEncoder) varint(v int64) { e.uvarint(uint64(v<<1) ^ uint64(v>>63)) }

func (e *pcEncoder) str(s string) {
	e.uvarint(uint64(len(s)))
	e.buf = append(e.buf, s...)
}

// fields encodes the fields of the struct at base: a bitmap of the fields
// that are not zero (bit i%8 of byte i/8 for field i), then those fields. A
// zero field costs one bit, and the decoder leaves it as it finds it (zero).
func (e *pcEncoder) fields(fs []pcField, base unsafe.Pointer) error {
	start := len(e.buf)
	for range (len(fs) + 7) / 8 {
		e.buf = append(e.buf, 0)
	}
	for i := range fs {
		ptr := unsafe.Add(base, fs[i].offset)
		if isZero(fs[i].plan, ptr) {
			continue
		}
		e.buf[start+i/8] |= 1 << (i % 8)
		if err := e.value(fs[i].plan, ptr); err != nil {
			return err
		}
	}
	return nil
}

// isZero reports whether the value of plan p at ptr is its type's zero value
// (a nil slice, map or pointer; an empty non-nil one is not zero).
func isZero(p *pcPlan, ptr unsafe.Pointer) bool {
	switch p.op {
	case opBool:
		return !*(*bool)(ptr)
	case opInt, opUint:
		return readUint(ptr, p.size) == 0
	case opFloat32:
		return *(*uint32)(ptr) == 0
	case opFloat64:
		return *(*uint64)(ptr) == 0
	case opString:
		return len(*(*string)(ptr)) == 0
	case opBytes, opSlice:
		return (*sliceHeader)(ptr).data == nil
	case opPtr, opMap:
		return *(*unsafe.Pointer)(ptr) == nil
	case opTime:
		return *(*time.Time)(ptr) == time.Time{}
	case opQuantity:
		l := &p.quant
		return *(*unsafe.Pointer)(unsafe.Add(ptr, l.dec)) == nil && *(*int64)(unsafe.Add(ptr, l.value)) == 0 &&
			*(*int32)(unsafe.Add(ptr, l.scale)) == 0 && len(*(*string)(unsafe.Add(ptr, l.str))) == 0 &&
			len(*(*string)(unsafe.Add(ptr, l.format))) == 0
	case opRawExtension:
		return (*sliceHeader)(ptr).data == nil && *(*any)(unsafe.Add(ptr, p.rawObj)) == nil
	}
	return false // arrays and structs are encoded whole
}

// value encodes the value of plan p at ptr.
func (e *pcEncoder) value(p *pcPlan, ptr unsafe.Pointer) error {
	switch p.op {
	case opBool:
		if *(*bool)(ptr) {
			e.buf = append(e.buf, 1)
		} else {
			e.buf = append(e.buf, 0)
		}
	case opInt:
		e.varint(readInt(ptr, p.size))
	case opUint:
		e.uvarint(readUint(ptr, p.size))
	case opFloat32:
		e.buf = binary.LittleEndian.AppendUint32(e.buf, *(*uint32)(ptr))
	case opFloat64:
		e.buf = binary.LittleEndian.AppendUint64(e.buf, *(*uint64)(ptr))
	case opString:
		e.str(*(*string)(ptr))
	case opBytes:
		e.bytes(*(*[]byte)(ptr))
	case opStruct:
		return e.fields(p.fields, ptr)
	case opEmpty:
		e.buf = append(e.buf, 0)
	case opArray:
		for i := range p.n {
			if err := e.value(p.elem, unsafe.Add(ptr, uintptr(i)*p.elem.size)); err != nil {
				return err
			}
		}
	case opTime:
		return e.time(*(*time.Time)(ptr))
	case opQuantity:
		return e.quantity(&p.quant, ptr)
	case opRawExtension:
		if *(*any)(unsafe.Add(ptr, p.rawObj)) != nil {
			return errPCRawObject
		}
		e.bytes(*(*[]byte)(ptr))
	default:
		return e.nested(p, ptr)
	}
	return nil
}

// nested encodes a pointer, slice or map, one level deeper.
func (e *pcEncoder) nested(p *pcPlan, ptr unsafe.Pointer) error {
	if e.depth++; e.depth > pcMaxDepth {
		return errPCDepth
	}
	err := e.nestedValue(p, ptr)
	e.depth--
	return err
}

func (e *pcEncoder) nestedValue(p *pcPlan, ptr unsafe.Pointer) error {
	switch p.op {
	case opPtr:
		q := *(*unsafe.Pointer)(ptr)
		if q == nil {
			e.buf = append(e.buf, 0)
			return nil
		}
		e.buf = append(e.buf, 1)
		return e.value(p.elem, q)
	case opSlice:
		h := (*sliceHeader)(ptr)
		if h.data == nil {
			e.buf = append(e.buf, 0)
			return nil
		}
		e.uvarint(uint64(h.len) + 1)
		for i := range h.len {
			if err := e.value(p.elem, unsafe.Add(h.data, uintptr(i)*p.elem.size)); err != nil {
				return err
			}
		}
		return nil
	case opMap:
		return e.mapValue(p, ptr)
	}
	return fmt.Errorf("plan codec: op %d", p.op)
}

func (e *pcEncoder) bytes(b []byte) {
	if b == nil {
		e.buf = append(e.buf, 0)
		return
	}
	e.uvarint(uint64(len(b)) + 1)
	e.buf = append(e.buf, b...)
}

// mapValue encodes a map with its entries in the order of their keys'
// encodings, so that equal maps encode to equal bytes.
func (e *pcEncoder) mapValue(p *pcPlan, ptr unsafe.Pointer) error {
	if p.fast == mapStringString {
		m := *(*map[string]string)(ptr)
		if m == nil {
			e.buf = append(e.buf, 0)
			return nil
		}
		e.uvarint(uint64(len(m)) + 1)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			e.str(k)
			e.str(m[k])
		}
		return nil
	}
	mv := reflect.NewAt(p.typ, ptr).Elem()
	if mv.IsNil() {
		e.buf = append(e.buf, 0)
		return nil
	}
	e.uvarint(uint64(mv.Len()) + 1)
	type entry struct {
		key []byte
		val reflect.Value
	}
	entries := make([]entry, 0, mv.Len())
	k := reflect.New(p.key.typ)
	ke := pcEncoder{depth: e.depth}
	for it := mv.MapRange(); it.Next(); {
		k.Elem().Set(it.Key())
		ke.buf = nil
		if err := ke.value(p.key, k.UnsafePointer()); err != nil {
			return err
		}
		entries = append(entries, entry{key: ke.buf, val: it.Value()})
	}
	sort.Slice(entries, func(i, j int) bool { return bytes.Compare(entries[i].key, entries[j].key) < 0 })
	v := reflect.New(p.elem.typ)
	for _, en := range entries {
		e.buf = append(e.buf, en.key...)
		v.Elem().Set(en.val)
		if err := e.value(p.elem, v.UnsafePointer()); err != nil {
			return err
		}
	}
	return nil
}

// time encodes t as a byte, 0 for the zero Time, 1 for a time in UTC, 2 for
// one in Local, then (unless zero) its Unix seconds (zigzag varint) and
// nanoseconds (varint). A Time that decodeTime would not restore exactly (==,
// so also reflect.DeepEqual: one with a monotonic clock reading or another
// location) is an error, and the object stays decoded.
func (e *pcEncoder) time(t time.Time) error {
	if t == (time.Time{}) {
		e.buf = append(e.buf, 0)
		return nil
	}
	loc := byte(1)
	if t.Location() == time.Local {
		loc = 2
	}
	sec, nsec := t.Unix(), int64(t.Nanosecond())
	if restoreTime(loc, sec, nsec) != t {
		return errPCTime
	}
	e.buf = append(e.buf, loc)
	e.varint(sec)
	e.uvarint(uint64(nsec))
	return nil
}

// restoreTime is the Time that time encodes as loc, sec, nsec.
func restoreTime(loc byte, sec, nsec int64) time.Time {
	t := time.Unix(sec, nsec)
	if loc == 1 {
		return t.UTC()
	}
	return t
}

// quantity encodes a resource.Quantity's int64 amount (value, scale), its
// cached string and its Format, all it holds in int64 form; one in inf.Dec
// form is an error, and the object stays decoded.
func (e *pcEncoder) quantity(l *quantityLayout, ptr unsafe.Pointer) error {
	if *(*unsafe.Pointer)(unsafe.Add(ptr, l.dec)) != nil {
		return errPCQuantity
	}
	e.varint(*(*int64)(unsafe.Add(ptr, l.value)))
	e.varint(int64(*(*int32)(unsafe.Add(ptr, l.scale))))
	e.str(*(*string)(unsafe.Add(ptr, l.str)))
	e.str(*(*string)(unsafe.Add(ptr, l.format)))
	return nil
}

func readInt(ptr unsafe.Pointer, size uintptr) int64 {
	switch size {
	case 1:
		return int64(*(*int8)(ptr))
	case 2:
		return int64(*(*int16)(ptr))
	case 4:
		return int64(*(*int32)(ptr))
	}
	return *(*int64)(ptr)
}

func readUint(ptr unsafe.Pointer, size uintptr) uint64 {
	switch size {
	case 1:
		return uint64(*(*uint8)(ptr))
	case 2:
		return uint64(*(*uint16)(ptr))
	case 4:
		return uint64(*(*uint32)(ptr))
	}
	return *(*uint64)(ptr)
}
