package codec

import (
	"encoding/binary"
	"errors"
	"io"
	"math/bits"
	"reflect"
	"time"
	"unsafe"
)

// The Plan codec's decoder: follows a plan over the bytes and writes each
// value at the plan's offsets (unsafe), into memory that is zero (the fields
// the encoding marks zero are left as they are). On
// input it did not encode it returns an error, never panics: every length is
// checked against the bytes left, and since every value encodes to at least
// one byte, a count larger than the bytes left is an error before anything is
// allocated for it.

var (
	errPCOverflow = errors.New("plan codec: varint overflows 64 bits")
	errPCTrailing = errors.New("plan codec: bytes after the value")
	errPCBadByte  = errors.New("plan codec: invalid presence or location byte")
)

type pcDecoder struct {
	b     []byte
	i     int
	depth int
}

func (d *pcDecoder) uvarint() (uint64, error) {
	if d.i < len(d.b) && d.b[d.i] < 0x80 {
		v := uint64(d.b[d.i])
		d.i++
		return v, nil
	}
	v, n := binary.Uvarint(d.b[d.i:])
	if n <= 0 {
		if n == 0 {
			return 0, io.ErrUnexpectedEOF
		}
		return 0, errPCOverflow
	}
	d.i += n
	return v, nil
}

func (d *pcDecoder) varint() (int64, error) {
	u, err := d.uvarint()
	return int64(u>>1) ^ -int64(u&1), err
}

func (d *pcDecoder) byte() (byte, error) {
	if d.i >= len(d.b) {
		return 0, io.ErrUnexpectedEOF
	}
	c := d.b[d.i]
	d.i++
	return c, nil
}

// count reads a length: for nilable values (nilable), 0 means nil and n+1
// means n. It checks n against the bytes left (every value takes one byte or
// more).
func (d *pcDecoder) count(nilable bool) (n int, isNil bool, err error) {
	u, err := d.uvarint()
	if err != nil {
		return 0, false, err
	}
	if nilable {
		if u == 0 {
			return 0, true, nil
		}
		u--
	}
	if u > uint64(len(d.b)-d.i) {
		return 0, false, io.ErrUnexpectedEOF
	}
	return int(u), false, nil
}

func (d *pcDecoder) str() (string, error) {
	n, _, err := d.count(false)
	if err != nil {
		return "", err
	}
	s := aliasString(d.b[d.i : d.i+n])
	d.i += n
	return s, nil
}

// bytes reads a []byte (nil, or a copy of the bytes).
func (d *pcDecoder) bytes() ([]byte, error) {
	n, isNil, err := d.count(true)
	if err != nil || isNil {
		return nil, err
	}
	b := make([]byte, n)
	copy(b, d.b[d.i:])
	d.i += n
	return b, nil
}

// fields decodes the fields of the struct at base, which is zero: those the
// bitmap that opens the encoding marks, the others left zero.
func (d *pcDecoder) fields(fs []pcField, base unsafe.Pointer) error {
	nb := (len(fs) + 7) / 8
	if len(d.b)-d.i < nb {
		return io.ErrUnexpectedEOF
	}
	bitmap := d.b[d.i : d.i+nb]
	d.i += nb
	for j, m := range bitmap {
		for m != 0 {
			i := j*8 + bits.TrailingZeros8(m)
			m &= m - 1
			if i >= len(fs) {
				return errPCBadByte
			}
			if err := d.field(&fs[i], base); err != nil {
				return err
			}
		}
	}
	return nil
}

// field decodes field f of the struct at base.
func (d *pcDecoder) field(f *pcField, base unsafe.Pointer) error {
	ptr := unsafe.Add(base, f.offset)
	// The most common fields first, without a call.
	switch f.plan.op {
	case opString:
		s, err := d.str()
		if err != nil {
			return err
		}
		*(*string)(ptr) = s
		return nil
	case opInt:
		v, err := d.varint()
		if err != nil {
			return err
		}
		writeInt(ptr, f.plan.size, v)
		return nil
	}
	return d.value(f.plan, ptr)
}

// value decodes a value of plan p into ptr.
func (d *pcDecoder) value(p *pcPlan, ptr unsafe.Pointer) error {
	switch p.op {
	case opBool:
		c, err := d.byte()
		if err != nil {
			return err
		}
		*(*bool)(ptr) = c != 0
	case opInt:
		v, err := d.varint()
		if err != nil {
			return err
		}
		writeInt(ptr, p.size, v)
	case opUint:
		v, err := d.uvarint()
		if err != nil {
			return err
		}
		writeInt(ptr, p.size, int64(v))
	case opFloat32:
		if len(d.b)-d.i < 4 {
			return io.ErrUnexpectedEOF
		}
		*(*uint32)(ptr) = binary.LittleEndian.Uint32(d.b[d.i:])
		d.i += 4
	case opFloat64:
		if len(d.b)-d.i < 8 {
			return io.ErrUnexpectedEOF
		}
		*(*uint64)(ptr) = binary.LittleEndian.Uint64(d.b[d.i:])
		d.i += 8
	case opString:
		s, err := d.str()
		if err != nil {
			return err
		}
		*(*string)(ptr) = s
	case opBytes:
		b, err := d.bytes()
		if err != nil {
			return err
		}
		*(*[]byte)(ptr) = b
	case opStruct:
		return d.fields(p.fields, ptr)
	case opEmpty:
		_, err := d.byte()
		return err
	case opArray:
		for i := range p.n {
			if err := d.value(p.elem, unsafe.Add(ptr, uintptr(i)*p.elem.size)); err != nil {
				return err
			}
		}
	case opTime:
		return d.time((*time.Time)(ptr))
	case opQuantity:
		return d.quantity(&p.quant, ptr)
	case opRawExtension:
		b, err := d.bytes()
		if err != nil {
			return err
		}
		*(*[]byte)(ptr) = b
		*(*any)(unsafe.Add(ptr, p.rawObj)) = nil
	default:
		return d.nested(p, ptr)
	}
	return nil
}

// nested decodes a pointer, slice or map, one level deeper.
func (d *pcDecoder) nested(p *pcPlan, ptr unsafe.Pointer) error {
	if d.depth++; d.depth > pcMaxDepth {
		return errPCDepth
	}
	err := d.nestedValue(p, ptr)
	d.depth--
	return err
}

func (d *pcDecoder) nestedValue(p *pcPlan, ptr unsafe.Pointer) error {
	switch p.op {
	case opPtr:
		c, err := d.byte()
		if err != nil {
			return err
		}
		switch c {
		case 0:
			*(*unsafe.Pointer)(ptr) = nil
			return nil
		case 1:
		default:
			return errPCBadByte
		}
		q := reflect.New(p.elem.typ).UnsafePointer()
		if err := d.value(p.elem, q); err != nil {
			return err
		}
		*(*unsafe.Pointer)(ptr) = q
		return nil
	case opSlice:
		return d.slice(p, ptr)
	case opMap:
		return d.mapValue(p, ptr)
	}
	return errors.New("plan codec: unknown op")
}

func (d *pcDecoder) slice(p *pcPlan, ptr unsafe.Pointer) error {
	n, isNil, err := d.count(true)
	if err != nil {
		return err
	}
	h := (*sliceHeader)(ptr)
	if isNil {
		*h = sliceHeader{}
		return nil
	}
	if p.elem.op == opString && p.elem.typ.Kind() == reflect.String {
		s := make([]string, n)
		for i := range s {
			if s[i], err = d.str(); err != nil {
				return err
			}
		}
		*h = sliceHeader{data: unsafe.Pointer(unsafe.SliceData(s)), len: n, cap: n}
		return nil
	}
	data := reflect.MakeSlice(p.typ, n, n).UnsafePointer()
	for i := range n {
		if err := d.value(p.elem, unsafe.Add(data, uintptr(i)*p.elem.size)); err != nil {
			return err
		}
	}
	*h = sliceHeader{data: data, len: n, cap: n}
	return nil
}

func (d *pcDecoder) mapValue(p *pcPlan, ptr unsafe.Pointer) error {
	n, isNil, err := d.count(true)
	if err != nil {
		return err
	}
	switch {
	case isNil:
		*(*unsafe.Pointer)(ptr) = nil // a map is one pointer
		return nil
	case p.fast == mapStringString:
		m := make(map[string]string, n)
		for range n {
			k, err := d.str()
			if err != nil {
				return err
			}
			if m[k], err = d.str(); err != nil {
				return err
			}
		}
		*(*map[string]string)(ptr) = m
		return nil
	case p.fast == mapStringInt32:
		m := make(map[string]int32, n)
		for range n {
			k, err := d.str()
			if err != nil {
				return err
			}
			v, err := d.varint()
			if err != nil {
				return err
			}
			m[k] = int32(v)
		}
		*(*map[string]int32)(ptr) = m
		return nil
	}
	m := reflect.MakeMapWithSize(p.typ, n)
	k, v := reflect.New(p.key.typ), reflect.New(p.elem.typ)
	for range n {
		k.Elem().SetZero()
		v.Elem().SetZero()
		if err := d.value(p.key, k.UnsafePointer()); err != nil {
			return err
		}
		if err := d.value(p.elem, v.UnsafePointer()); err != nil {
			return err
		}
		m.SetMapIndex(k.Elem(), v.Elem())
	}
	reflect.NewAt(p.typ, ptr).Elem().Set(m)
	return nil
}

// time decodes what pcEncoder.time encoded.
func (d *pcDecoder) time(t *time.Time) error {
	loc, err := d.byte()
	if err != nil {
		return err
	}
	if loc == 0 {
		*t = time.Time{}
		return nil
	}
	if loc > 2 {
		return errPCBadByte
	}
	sec, err := d.varint()
	if err != nil {
		return err
	}
	nsec, err := d.uvarint()
	if err != nil {
		return err
	}
	*t = restoreTime(loc, sec, int64(nsec))
	return nil
}

// quantity decodes what pcEncoder.quantity encoded: a Quantity in int64 form.
func (d *pcDecoder) quantity(l *quantityLayout, ptr unsafe.Pointer) error {
	v, err := d.varint()
	if err != nil {
		return err
	}
	scale, err := d.varint()
	if err != nil {
		return err
	}
	s, err := d.str()
	if err != nil {
		return err
	}
	format, err := d.str()
	if err != nil {
		return err
	}
	*(*int64)(unsafe.Add(ptr, l.value)) = v
	*(*int32)(unsafe.Add(ptr, l.scale)) = int32(scale)
	*(*unsafe.Pointer)(unsafe.Add(ptr, l.dec)) = nil
	*(*string)(unsafe.Add(ptr, l.str)) = s
	*(*string)(unsafe.Add(ptr, l.format)) = format
	return nil
}

func writeInt(ptr unsafe.Pointer, size uintptr, v int64) {
	switch size {
	case 1:
		*(*int8)(ptr) = int8(v)
	case 2:
		*(*int16)(ptr) = int16(v)
	case 4:
		*(*int32)(ptr) = int32(v)
	default:
		*(*int64)(ptr) = v
	}
}
