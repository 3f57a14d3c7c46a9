package codec

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestProtobufCodecRejectsTypesWithoutProtobuf(t *testing.T) {
	if _, err := NewProtobuf(&unstructured.Unstructured{}); !errors.Is(err, ErrNoProtobuf) {
		t.Fatalf("err = %v, want ErrNoProtobuf", err)
	}
	c, err := NewProtobuf(&corev1.Pod{})
	must(t, err)
	if _, err := c.Encode(&corev1.ConfigMap{}); err == nil {
		t.Fatal("a pod codec encoded a ConfigMap")
	}
}
