package codec

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
)

// CBOR stores typed objects as CBOR (RFC 8949) through apimachinery's
// CBOR encoding (k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct),
// which follows the types' JSON field names and omitempty rules. For Go types
// without generated protobuf code, such as CRD types; apiVersion and kind are
// part of the encoding.
type CBOR struct {
	typ reflect.Type // the struct type T of *T
	// metaLabels: typ embeds ObjectMeta as "metadata", so AppendLabels can
	// read the labels from the bytes (cbor_labels.go).
	metaLabels bool
}

// NewCBOR returns the CBOR codec of example's Go type, a pointer to a
// struct.
func NewCBOR(example runtime.Object) (*CBOR, error) {
	t := reflect.TypeOf(example)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("CBOR codec: %T is not a pointer to a struct", example)
	}
	return &CBOR{typ: t.Elem(), metaLabels: embedsObjectMeta(t.Elem())}, nil
}

// Encode returns obj's CBOR encoding; an error for another Go type.
func (c *CBOR) Encode(obj any) ([]byte, error) {
	if reflect.TypeOf(obj) != reflect.PointerTo(c.typ) {
		return nil, fmt.Errorf("CBOR codec of %v cannot encode %T", c.typ, obj)
	}
	return direct.Marshal(obj)
}

// Decode returns a new *T decoded from data.
func (c *CBOR) Decode(data []byte) (any, error) {
	obj := reflect.New(c.typ).Interface()
	if err := direct.Unmarshal(data, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// UnstructuredCBOR stores *unstructured.Unstructured objects as the CBOR
// encoding of their content. Content outside the JSON data model that
// unstructured objects are made of (map[string]any, []any, string, int64,
// float64, bool, nil; json.Number too) would not decode back to what it was:
// Encode refuses it, so the Indexer keeps such an object decoded.
type UnstructuredCBOR struct{}

// NewUnstructuredCBOR returns the codec of unstructured objects.
func NewUnstructuredCBOR() UnstructuredCBOR { return UnstructuredCBOR{} }

// Encode returns the CBOR encoding of obj's content; an error if obj is not
// an *unstructured.Unstructured or holds a value outside the JSON data model.
func (UnstructuredCBOR) Encode(obj any) ([]byte, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("unstructured CBOR codec cannot encode %T", obj)
	}
	if err := checkJSONValue(u.Object, "object"); err != nil {
		return nil, err
	}
	return direct.Marshal(u.Object)
}

// Decode returns a new *unstructured.Unstructured decoded from data.
func (UnstructuredCBOR) Decode(data []byte) (any, error) {
	var m map[string]any
	if err := direct.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// checkJSONValue returns an error naming the path of the first value of v
// that the JSON data model of unstructured objects does not hold, or that
// would not come back equal from CBOR (a json.Number, which decodes as a
// number; a NaN or infinite float, which JSON cannot carry).
func checkJSONValue(v any, path string) error {
	switch v := v.(type) {
	case nil, string, int64, bool:
		return nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%s: %v cannot be represented in JSON", path, v)
		}
		return nil
	case map[string]any:
		for k, e := range v {
			if err := checkJSONValue(e, path+"."+k); err != nil {
				return err
			}
		}
		return nil
	case []any:
		for i, e := range v {
			if err := checkJSONValue(e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	case json.Number:
		return fmt.Errorf("%s: json.Number %q would decode as a number", path, v)
	default:
		return fmt.Errorf("%s: %T is not a JSON value", path, v)
	}
}
