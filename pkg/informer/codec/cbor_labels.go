package codec

import (
	"errors"
	"io"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Reading an object's labels from its CBOR encoding without decoding it, for
// a List that selects by label (see UnstructuredCBOR.AppendLabels). The walk
// follows RFC 8949: the top-level map's "metadata" entry, a map, and its
// "labels" entry, a map of strings; every other item is skipped by its head,
// whatever its major type, definite or indefinite length. Anything it is not
// sure to read as the decoder would (a tag, an indefinite-length string, a
// value that is not a string) is an error, and the caller decodes instead.

var (
	errCBORMalformed   = errors.New("cbor: malformed item")
	errCBORUnsupported = errors.New("cbor: labels not read from this encoding")
)

// cborMaxDepth bounds the nesting the walk follows (the decoder's own bound,
// 10000, is checked by the decode the caller falls back to).
const cborMaxDepth = 1000

// AppendLabels appends the labels of the object encoded in data to dst as
// Protobuf.AppendLabels does (key, value pairs aliasing data; dst unchanged
// on an error). It reads what the object's GetLabels returns: the string map
// metadata.labels; an object without metadata or labels has none. A metadata
// or labels value it cannot read as a map of strings (GetLabels' rules for
// such content are the decoder's) is an error, and so is malformed data.
func (UnstructuredCBOR) AppendLabels(dst []string, data []byte) ([]string, error) {
	return appendCBORLabels(dst, data)
}

// AppendLabels is UnstructuredCBOR.AppendLabels for the codec's Go type; it
// returns ErrNoLabels for a type that does not embed metav1.ObjectMeta as its
// "metadata".
func (c *CBOR) AppendLabels(dst []string, data []byte) ([]string, error) {
	if !c.metaLabels {
		return dst, ErrNoLabels
	}
	return appendCBORLabels(dst, data)
}

// embedsObjectMeta reports whether struct type t embeds metav1.ObjectMeta
// under the JSON (and so CBOR) name "metadata".
func embedsObjectMeta(t reflect.Type) bool {
	f, ok := t.FieldByName("ObjectMeta")
	if !ok || !f.Anonymous || f.Type != reflect.TypeFor[metav1.ObjectMeta]() {
		return false
	}
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name == "metadata"
}

func appendCBORLabels(dst []string, data []byte) ([]string, error) {
	n := len(dst)
	out, err := cborLabels(dst, data)
	if err != nil {
		return dst[:n], err
	}
	return out, nil
}

// cborLabels finds metadata.labels in the top-level map of b.
func cborLabels(dst []string, b []byte) ([]string, error) {
	meta, ok, err := cborMapEntry(b, 0, "metadata")
	if err != nil || !ok {
		return dst, err
	}
	labels, ok, err := cborMapEntry(b, meta, "labels")
	if err != nil || !ok {
		return dst, err
	}
	return cborStringMap(dst, b, labels)
}

// cborMapEntry returns the position of the value of key in the map at b[i]: ok
// is false when the map does not hold key or the item is null (as a nil map).
// The map's other entries are skipped; a key other than a string is an error.
func cborMapEntry(b []byte, i int, key string) (int, bool, error) {
	h, err := cborHead(b, i)
	if err != nil {
		return 0, false, err
	}
	if h.null() {
		return 0, false, nil
	}
	if h.major != cborMap {
		return 0, false, errCBORUnsupported
	}
	i = h.next
	for n := uint64(0); h.indef || n < h.arg; n++ {
		if h.indef && i < len(b) && b[i] == cborBreak {
			break
		}
		k, j, err := cborString(b, i)
		if err != nil {
			return 0, false, err
		}
		if k == key {
			return j, true, nil
		}
		if i, err = cborSkip(b, j, 0); err != nil {
			return 0, false, err
		}
	}
	return 0, false, nil
}

// cborStringMap appends the entries of the map of strings at b[i] (null: none).
func cborStringMap(dst []string, b []byte, i int) ([]string, error) {
	h, err := cborHead(b, i)
	if err != nil {
		return dst, err
	}
	if h.null() {
		return dst, nil
	}
	if h.major != cborMap {
		return dst, errCBORUnsupported
	}
	i = h.next
	for n := uint64(0); h.indef || n < h.arg; n++ {
		if h.indef {
			if i >= len(b) {
				return dst, io.ErrUnexpectedEOF
			}
			if b[i] == cborBreak {
				break
			}
		}
		k, j, err := cborString(b, i)
		if err != nil {
			return dst, err
		}
		v, j, err := cborString(b, j)
		if err != nil {
			return dst, err
		}
		dst = append(dst, k, v)
		i = j
	}
	return dst, nil
}

// CBOR major types and special bytes.
const (
	cborUint = iota
	cborNint
	cborBytes
	cborText
	cborArray
	cborMap
	cborTag
	cborSimple

	cborBreak = 0xff
	cborNull  = 0xf6
)

// cborItemHead is the head of a data item: its major type, argument (a value,
// a length or a count) and whether its length is indefinite.
type cborItemHead struct {
	major uint8
	ai    uint8
	arg   uint64
	indef bool
	next  int // the position after the head
}

func (h cborItemHead) null() bool { return h.major == cborSimple && h.ai == cborNull&0x1f }

// cborHead reads the head at b[i].
func cborHead(b []byte, i int) (cborItemHead, error) {
	if i >= len(b) {
		return cborItemHead{}, io.ErrUnexpectedEOF
	}
	h := cborItemHead{major: b[i] >> 5, ai: b[i] & 0x1f, next: i + 1}
	switch {
	case h.ai < 24:
		h.arg = uint64(h.ai)
	case h.ai <= 27:
		size := 1 << (h.ai - 24)
		if len(b)-h.next < size {
			return cborItemHead{}, io.ErrUnexpectedEOF
		}
		for _, c := range b[h.next : h.next+size] {
			h.arg = h.arg<<8 | uint64(c)
		}
		h.next += size
	case h.ai == 31 && h.major >= cborBytes && h.major <= cborMap:
		h.indef = true
	default:
		// Reserved values, and a break outside an indefinite-length item.
		return cborItemHead{}, errCBORMalformed
	}
	return h, nil
}

// cborString returns the definite-length byte or text string at b[i], aliasing
// b, and the position after it.
func cborString(b []byte, i int) (string, int, error) {
	h, err := cborHead(b, i)
	if err != nil {
		return "", 0, err
	}
	if (h.major != cborBytes && h.major != cborText) || h.indef {
		return "", 0, errCBORUnsupported
	}
	if h.arg > uint64(len(b)-h.next) {
		return "", 0, io.ErrUnexpectedEOF
	}
	end := h.next + int(h.arg)
	return aliasString(b[h.next:end]), end, nil
}

// cborSkip returns the position after the data item at b[i].
func cborSkip(b []byte, i, depth int) (int, error) {
	if depth > cborMaxDepth {
		return 0, errCBORUnsupported
	}
	h, err := cborHead(b, i)
	if err != nil {
		return 0, err
	}
	i = h.next
	switch h.major {
	case cborUint, cborNint, cborSimple:
		// A simple value or float is all head (ai 24–27 carry its bytes).
		return i, nil
	case cborTag:
		return cborSkip(b, i, depth+1)
	case cborBytes, cborText:
		if !h.indef {
			if h.arg > uint64(len(b)-i) {
				return 0, io.ErrUnexpectedEOF
			}
			return i + int(h.arg), nil
		}
		// Chunks: definite-length strings of the same major type, then a break.
		for {
			if i >= len(b) {
				return 0, io.ErrUnexpectedEOF
			}
			if b[i] == cborBreak {
				return i + 1, nil
			}
			if b[i]>>5 != h.major {
				return 0, errCBORMalformed
			}
			_, j, err := cborString(b, i)
			if err != nil {
				return 0, err
			}
			i = j
		}
	}
	// An array or a map: its items, pairs for a map.
	items := h.arg
	if h.major == cborMap && !h.indef {
		if items > uint64(len(b)) {
			return 0, io.ErrUnexpectedEOF
		}
		items *= 2
	}
	for n := uint64(0); h.indef || n < items; n++ {
		if i >= len(b) {
			return 0, io.ErrUnexpectedEOF
		}
		if h.indef && b[i] == cborBreak {
			return i + 1, nil
		}
		if i, err = cborSkip(b, i, depth+1); err != nil {
			return 0, err
		}
	}
	return i, nil
}
