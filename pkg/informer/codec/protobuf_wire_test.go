package codec

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
)

// wireCodec returns a Protobuf codec of pods with a WireCapture, and the
// protobuf decoder of a REST client whose serializer the capture wraps (what
// client-go's watch decodes each event's object with).
func wireCodec(t *testing.T, strip bool) (*Protobuf, *WireCapture, runtime.Decoder) {
	t.Helper()
	c, err := NewProtobuf(&corev1.Pod{})
	must(t, err)
	w := c.CaptureWire(strip)
	ns := w.NegotiatedSerializer(serializer.WithoutConversionCodecFactory{CodecFactory: scheme.Codecs})
	info, ok := runtime.SerializerInfoForMediaType(ns.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		t.Fatal("no protobuf serializer")
	}
	return c, w, ns.DecoderToVersion(info.Serializer, corev1.SchemeGroupVersion)
}

// enveloped returns pod as the API server sends it in protobuf ("k8s\x00" and a
// runtime.Unknown), its message followed by extra (fields the client's type may
// not know).
func enveloped(t *testing.T, pod *corev1.Pod, extra []byte) []byte {
	t.Helper()
	msg, err := pod.Marshal()
	must(t, err)
	msg = append(msg, extra...)
	unk := runtime.Unknown{
		TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		Raw:      msg,
	}
	b, err := unk.Marshal()
	must(t, err)
	return append(append([]byte{}, protoEnvelopePrefix...), b...)
}

// stripped is what pkg/cache's transform does to a decoded typed object before
// it is encoded: an empty TypeMeta and, with strip, no managedFields.
func stripped(pod *corev1.Pod, strip bool) {
	pod.TypeMeta = metav1.TypeMeta{}
	if strip {
		pod.ManagedFields = nil
	}
}

// An object decoded through the capture is stored as the bytes it came in,
// without its managedFields: the stored bytes keep a field the client's type
// does not know (a Marshal would drop it), and decode to the object Encode was
// given.
func TestWireCaptureStoresTheServerMessageWithoutManagedFields(t *testing.T) {
	c, _, dec := wireCodec(t, true)
	pod := serverPod(3)
	if len(pod.ManagedFields) == 0 {
		t.Fatal("serverPod has no managedFields")
	}
	unknown := binary.AppendUvarint(nil, 99<<3|wireBytes)
	unknown = append(binary.AppendUvarint(unknown, 3), "new"...)
	obj, _, err := dec.Decode(enveloped(t, pod, unknown), nil, nil)
	must(t, err)
	got := obj.(*corev1.Pod)
	stripped(got, true)

	data, err := c.Encode(got)
	must(t, err)
	want := pod.DeepCopy()
	want.ManagedFields = nil
	wantMsg, err := want.Marshal()
	must(t, err)
	if !bytes.Equal(data, append(wantMsg, unknown...)) {
		t.Fatalf("stored %d bytes, want the server's message without managedFields (%d bytes) and the unknown field", len(data), len(wantMsg)+len(unknown))
	}
	back, err := c.Decode(data)
	must(t, err)
	if !reflect.DeepEqual(back, got) {
		t.Fatalf("decoded object differs from the encoded one:\n%#v\n%#v", back, got)
	}
}

// With managedFields kept, the stored bytes are the server's message itself (the
// field the client's type does not know included, which a Marshal would drop),
// copied out of the buffer it was decoded from.
func TestWireCaptureKeepsManagedFieldsWhenTheTransformDoes(t *testing.T) {
	c, _, dec := wireCodec(t, false)
	pod := serverPod(1)
	unknown := binary.AppendUvarint(nil, 99<<3|wireVarint)
	unknown = binary.AppendUvarint(unknown, 7)
	data := enveloped(t, pod, unknown)
	obj, _, err := dec.Decode(data, nil, nil)
	must(t, err)
	stripped(obj.(*corev1.Pod), false)
	stored, err := c.Encode(obj)
	must(t, err)
	msg, err := pod.Marshal()
	must(t, err)
	msg = append(msg, unknown...)
	if !bytes.Equal(stored, msg) {
		t.Fatalf("stored %d bytes, want the server's %d", len(stored), len(msg))
	}
	if i := bytes.Index(data, msg); i < 0 || &stored[0] == &data[i] {
		t.Fatal("stored bytes alias the decoder's buffer")
	}
	back, err := c.Decode(stored)
	must(t, err)
	if !reflect.DeepEqual(back, obj) {
		t.Fatal("decoded object differs from the encoded one")
	}
}

// Encode takes an object's bytes once and forgets the objects decoded before
// it; an object it has no bytes for (or no longer) is marshalled.
func TestWireCaptureTakesInDecodingOrder(t *testing.T) {
	c, w, dec := wireCodec(t, true)
	var objs []*corev1.Pod
	for i := range 3 {
		pod := serverPod(i)
		pod.Status.Message = "from the wire" // tells the wire's bytes from a Marshal's below
		obj, _, err := dec.Decode(enveloped(t, pod, nil), nil, nil)
		must(t, err)
		objs = append(objs, obj.(*corev1.Pod))
	}
	stripped(objs[1], true)
	if _, err := c.Encode(objs[1]); err != nil {
		t.Fatal(err)
	}
	if _, ok := w.take(objs[0]); ok {
		t.Fatal("the object decoded before the one encoded is still remembered")
	}
	if _, ok := w.take(objs[1]); ok {
		t.Fatal("the encoded object's bytes are still remembered")
	}

	// objs[2] changed after decoding, as only a transform this capture must not be
	// used with would: what proves that its bytes came from the wire.
	objs[2].Status.Message = "changed"
	stripped(objs[2], true)
	data, err := c.Encode(objs[2])
	must(t, err)
	back, err := c.Decode(data)
	must(t, err)
	if got := back.(*corev1.Pod).Status.Message; got != "from the wire" {
		t.Fatalf("stored message %q, want the wire's", got)
	}
	// Encoded again, it is marshalled.
	data, err = c.Encode(objs[2])
	must(t, err)
	back, err = c.Decode(data)
	must(t, err)
	if got := back.(*corev1.Pod).Status.Message; got != "changed" {
		t.Fatalf("stored message %q after a second Encode, want a Marshal's", got)
	}
}

// The capture remembers at most wireQueueLen objects, the newest, and no more
// than wireQueueBytes of their messages but for the newest; a LIST's object (a
// PodList) is not remembered.
func TestWireCaptureIsBounded(t *testing.T) {
	_, w, dec := wireCodec(t, true)
	data := enveloped(t, serverPod(0), nil)
	var first, last runtime.Object
	for i := range wireQueueLen + 10 {
		obj, _, err := dec.Decode(data, nil, nil)
		must(t, err)
		if i == 0 {
			first = obj
		}
		last = obj
	}
	if len(w.queue) != wireQueueLen {
		t.Fatalf("remembers %d objects, want %d", len(w.queue), wireQueueLen)
	}
	if _, ok := w.take(first); ok {
		t.Fatal("the oldest object is still remembered")
	}
	if _, ok := w.take(last); !ok {
		t.Fatal("the newest object is not remembered")
	}
	if len(w.queue) != 0 || w.queued != 0 {
		t.Fatalf("after the newest was taken: %d entries, %d bytes", len(w.queue), w.queued)
	}

	// Large objects: the bytes bound. Each message is over a third of it, so two
	// fit and a third pushes the oldest out; one larger than the bound is kept alone.
	big := serverPod(2)
	big.Annotations = map[string]string{"blob": strings.Repeat("x", wireQueueBytes/3)}
	var bigs []runtime.Object
	for range 3 {
		obj, _, err := dec.Decode(enveloped(t, big, nil), nil, nil)
		must(t, err)
		bigs = append(bigs, obj)
	}
	if len(w.queue) != 2 || w.queued > wireQueueBytes {
		t.Fatalf("three large objects: %d remembered, %d bytes (bound %d)", len(w.queue), w.queued, wireQueueBytes)
	}
	if _, ok := w.take(bigs[0]); ok {
		t.Fatal("the oldest large object is still remembered")
	}
	big.Annotations["blob"] = strings.Repeat("x", wireQueueBytes+1)
	huge, _, err := dec.Decode(enveloped(t, big, nil), nil, nil)
	must(t, err)
	if len(w.queue) != 1 {
		t.Fatalf("after an object larger than the bound: %d remembered, want it alone", len(w.queue))
	}
	if _, ok := w.take(huge); !ok {
		t.Fatal("the object larger than the bound is not remembered")
	}

	list := &corev1.PodList{Items: []corev1.Pod{*serverPod(1)}}
	msg, err := list.Marshal()
	must(t, err)
	unk, err := (&runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "PodList"}, Raw: msg}).Marshal()
	must(t, err)
	if _, _, err := dec.Decode(append(append([]byte{}, protoEnvelopePrefix...), unk...), nil, nil); err != nil {
		t.Fatal(err)
	}
	if len(w.queue) != 0 {
		t.Fatalf("a PodList was remembered (%d entries)", len(w.queue))
	}
}

// fieldRun finds the run of a field's entries wherever it is, nothing in a
// message without them, and refuses entries apart or a truncated field.
func TestFieldRun(t *testing.T) {
	field := func(num uint64, s string) []byte {
		f := binary.AppendUvarint(nil, num<<3|wireBytes)
		return append(binary.AppendUvarint(f, uint64(len(s))), s...)
	}
	name := field(1, "name")
	gen := binary.AppendUvarint(binary.AppendUvarint(nil, 5<<3|wireVarint), 300)
	run := append(field(17, "a"), field(17, "bb")...)
	for _, c := range []struct {
		what     string
		b        []byte
		from, to int
		ok       bool
	}{
		{"last", slices.Concat(name, gen, run), len(name) + len(gen), len(name) + len(gen) + len(run), true},
		{"first", slices.Concat(run, name), 0, len(run), true},
		{"between", slices.Concat(name, run, gen), len(name), len(name) + len(run), true},
		{"none", slices.Concat(name, gen), 0, 0, true},
		{"apart", slices.Concat(field(17, "a"), name, field(17, "b")), 0, 0, false},
		{"truncated", slices.Concat(name, []byte{0x0a, 0x05, 'x'}), 0, 0, false},
	} {
		from, to, ok := fieldRun(c.b, 17)
		if from != c.from || to != c.to || ok != c.ok {
			t.Errorf("%s: fieldRun = %d, %d, %v; want %d, %d, %v", c.what, from, to, ok, c.from, c.to, c.ok)
		}
	}
}

// A metadata whose length varint shrinks when its managedFields are cut (from
// two bytes to one) is spliced with the shorter length, and the size pass agrees.
func TestSplicedShortensTheMetadataLength(t *testing.T) {
	w := &WireCapture{stripManagedFields: true}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "n", ManagedFields: serverPod(2).ManagedFields}}
	if pod.ObjectMeta.Size() < 128 {
		t.Fatalf("metadata of %d bytes: its length takes one byte already", pod.ObjectMeta.Size())
	}
	msg, err := pod.Marshal()
	must(t, err)
	got, ok := w.encoding(nil, msg)
	if !ok {
		t.Fatal("encoding failed")
	}
	pod.ManagedFields = nil
	want, err := pod.Marshal()
	must(t, err)
	if pod.ObjectMeta.Size() >= 128 || !bytes.Equal(got, want) {
		t.Fatalf("spliced %d bytes, want %d (metadata of %d bytes after the cut)", len(got), len(want), pod.ObjectMeta.Size())
	}
	if cap(got) != len(got) {
		t.Fatalf("result allocated %d bytes for %d", cap(got), len(got))
	}
}
