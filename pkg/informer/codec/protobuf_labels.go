package codec

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Reading an object's labels from its protobuf encoding without decoding it,
// for a List that selects by label (see Protobuf.AppendLabels).
//
// The wire layout, from k8s.io/apimachinery's generated.proto: every
// top-level kind (and PartialObjectMetadata) has
// `optional ObjectMeta metadata = 1`; ObjectMeta has
// `map<string, string> labels = 11`, each entry a message {key = 1, value = 2}.

// ErrNoLabels is returned by AppendLabels when it cannot read the labels from
// the bytes: the caller decodes the object instead.
var ErrNoLabels = errors.New("labels cannot be read from the encoding")

const (
	protoMetadataField = 1  // ObjectMeta metadata = 1 of a top-level kind
	protoLabelsField   = 11 // map<string, string> labels = 11 of ObjectMeta
)

// metadataFirst reports whether struct type t embeds metav1.ObjectMeta as
// protobuf field 1, the layout AppendLabels reads.
func metadataFirst(t reflect.Type) bool {
	f, ok := t.FieldByName("ObjectMeta")
	if !ok || !f.Anonymous || f.Type != reflect.TypeFor[metav1.ObjectMeta]() {
		return false
	}
	return strings.HasPrefix(f.Tag.Get("protobuf"), "bytes,1,")
}

// AppendLabels appends to dst the labels (metadata.labels) of the object
// encoded in data, as key, value pairs: dst[2i] a key, dst[2i+1] its value,
// strings that alias data (which must not be modified while they are used),
// and returns the extended slice. It allocates only when dst must grow. As
// with the generated Unmarshal, a later entry of a key overrides an earlier
// one, so a reader looks a key up from the end (see informer's label view).
// It returns ErrNoLabels (dst unchanged) for a Go type without ObjectMeta as
// its field 1, and an error for data that is not a valid encoding of the
// metadata (the caller then decodes the object, which reports the error);
// the rest of the object is skipped, not validated.
func (c *Protobuf) AppendLabels(dst []string, data []byte) ([]string, error) {
	if !c.metaFirst {
		return dst, ErrNoLabels
	}
	n := len(dst)
	out, err := appendProtoLabels(dst, data)
	if err != nil {
		return dst[:n], err
	}
	return out, nil
}

// appendProtoLabels appends the labels of every occurrence of field 1 (a
// repeated embedded message merges, as in the generated Unmarshal) and skips
// every other field.
func appendProtoLabels(dst []string, b []byte) ([]string, error) {
	for i := 0; i < len(b); {
		wire, j, err := varint(b, i)
		if err != nil {
			return dst, err
		}
		if wire>>3 != protoMetadataField {
			if i, err = skipProto(b, i, j, wire); err != nil {
				return dst, err
			}
			continue
		}
		if wire&7 != wireBytes {
			return dst, fmt.Errorf("proto: wrong wireType %d for field metadata", wire&7)
		}
		s, end, err := lengthDelimited(b, j)
		if err != nil {
			return dst, err
		}
		if dst, err = appendMetaLabels(dst, b[end-s:end]); err != nil {
			return dst, err
		}
		i = end
	}
	return dst, nil
}

// appendMetaLabels appends the labels of one encoded ObjectMeta.
func appendMetaLabels(dst []string, b []byte) ([]string, error) {
	for i := 0; i < len(b); {
		wire, j, err := varint(b, i)
		if err != nil {
			return dst, err
		}
		if wire>>3 != protoLabelsField {
			if i, err = skipProto(b, i, j, wire); err != nil {
				return dst, err
			}
			continue
		}
		if wire&7 != wireBytes {
			return dst, fmt.Errorf("proto: wrong wireType %d for field labels", wire&7)
		}
		s, end, err := lengthDelimited(b, j)
		if err != nil {
			return dst, err
		}
		key, value, err := labelEntry(b[end-s : end])
		if err != nil {
			return dst, err
		}
		dst = append(dst, key, value)
		i = end
	}
	return dst, nil
}

// labelEntry reads one map entry {key = 1, value = 2}: a missing key or value
// is "", a repeated one the last, other fields skipped (as the generated
// Unmarshal does).
func labelEntry(b []byte) (key, value string, err error) {
	for i := 0; i < len(b); {
		wire, j, err := varint(b, i)
		if err != nil {
			return "", "", err
		}
		num := wire >> 3
		if num != 1 && num != 2 {
			n, err := skipField(b[i:])
			if err != nil {
				return "", "", err
			}
			if n <= 0 || i+n > len(b) {
				return "", "", errProtoInvalidLength
			}
			i += n
			continue
		}
		if wire&7 != wireBytes {
			return "", "", fmt.Errorf("proto: wrong wireType %d in a labels entry", wire&7)
		}
		s, end, err := lengthDelimited(b, j)
		if err != nil {
			return "", "", err
		}
		if num == 1 {
			key = aliasString(b[end-s : end])
		} else {
			value = aliasString(b[end-s : end])
		}
		i = end
	}
	return key, value, nil
}
