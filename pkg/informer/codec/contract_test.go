package codec

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The ownership and aliasing contract of doc.go, codec by codec.

// Two pods decoded from the same bytes share nothing either may modify: a
// caller that changes maps, slice elements, pointed-to scalars and structs of
// one changes neither the other nor the bytes.
func TestProtobufDecodedObjectsShareNothingModifiable(t *testing.T) {
	c, err := NewProtobuf(&corev1.Pod{})
	must(t, err)
	data, err := c.Encode(serverPod(1))
	must(t, err)
	original := bytes.Clone(data)
	a, err := c.Decode(data)
	must(t, err)
	b, err := c.Decode(data)
	must(t, err)

	p := a.(*corev1.Pod)
	p.Labels["app"] = "changed"
	p.Spec.Containers[0].Args[0] = "--changed"
	p.Spec.Containers[0].Env[1].Value = "changed"
	*p.Spec.TerminationGracePeriodSeconds = 1
	*p.Spec.Tolerations[1].TolerationSeconds = 2
	*p.Spec.Priority = 3
	*p.OwnerReferences[0].Controller = false
	p.ManagedFields[0].Time.Time = time.Unix(0, 0)
	p.ManagedFields[0].FieldsV1.Raw[0] = 'X'
	p.Status.StartTime.Time = time.Unix(0, 0)

	if !bytes.Equal(data, original) {
		t.Fatal("modifying a decoded pod modified the bytes it was decoded from")
	}
	want, err := c.Decode(original)
	must(t, err)
	if !reflect.DeepEqual(b, want) {
		t.Fatal("modifying a decoded pod modified another pod decoded from the same bytes")
	}
	if q := b.(*corev1.Pod); q.Labels["app"] != "web" || *q.Spec.Tolerations[1].TolerationSeconds != 300 {
		t.Fatalf("second pod: app=%q, tolerationSeconds=%d", q.Labels["app"], *q.Spec.Tolerations[1].TolerationSeconds)
	}
}

// Protobuf sets on every decoded object the GroupVersionKind of the last
// encoded object that had one, also on objects encoded before it; none
// before any object had one.
func TestProtobufDecodeSetsTheLastEncodedGVK(t *testing.T) {
	c, err := NewProtobuf(&corev1.Pod{})
	must(t, err)
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare"}}
	data, err := c.Encode(bare)
	must(t, err)
	got, err := c.Decode(data)
	must(t, err)
	if gvk := got.(runtime.Object).GetObjectKind().GroupVersionKind(); !gvk.Empty() {
		t.Fatalf("before any object with a GVK: decoded GVK = %v, want none", gvk)
	}
	typed := bare.DeepCopy()
	typed.APIVersion, typed.Kind = "v1", "Pod"
	_, err = c.Encode(typed)
	must(t, err)
	got, err = c.Decode(data)
	must(t, err)
	if gvk, want := got.(runtime.Object).GetObjectKind().GroupVersionKind(), (schema.GroupVersionKind{Version: "v1", Kind: "Pod"}); gvk != want {
		t.Fatalf("decoded GVK = %v, want %v", gvk, want)
	}
}

// What the CBOR codecs decode shares no memory with the bytes: overwriting
// the bytes afterwards leaves the decoded object as it was.
func TestCBORDecodedObjectsShareNoMemoryWithTheBytes(t *testing.T) {
	typed, err := NewCBOR(&corev1.Pod{})
	must(t, err)
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(serverPod(2))
	must(t, err)
	for _, c := range []struct {
		name  string
		codec storageCodec
		obj   any
	}{
		{"CBOR", typed, serverPod(2)},
		{"UnstructuredCBOR", NewUnstructuredCBOR(), &unstructured.Unstructured{Object: u}},
	} {
		t.Run(c.name, func(t *testing.T) {
			data, err := c.codec.Encode(c.obj)
			must(t, err)
			got, err := c.codec.Decode(data)
			must(t, err)
			want, err := c.codec.Decode(bytes.Clone(data))
			must(t, err)
			for i := range data {
				data[i] = 'X'
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatal("overwriting the bytes changed the object decoded from them")
			}
		})
	}
}
