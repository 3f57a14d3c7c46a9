package codec

import (
	"bytes"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestProtobufAppendEncodeIsMarshalAfterDst: appendEncode appends exactly
// the generated Marshal's bytes after what dst holds, leaves the object as it
// was (its Quantities' cached strings put back), allocates no slice for them
// when dst has room (one allocation fewer than Encode: the generated code
// still sorts map keys, and formats Quantities), and Encode (dst nil)
// returns a slice of its own of that size.
func TestProtobufAppendEncodeIsMarshalAfterDst(t *testing.T) {
	c, err := NewProtobuf(&corev1.Pod{})
	must(t, err)
	pod := serverPod(3)
	before := pod.DeepCopy()
	want, err := pod.DeepCopy().Marshal()
	must(t, err)
	prefix := []byte("prefix")
	got, err := c.appendEncode(append([]byte(nil), prefix...), pod)
	must(t, err)
	if !bytes.Equal(got, append(append([]byte(nil), prefix...), want...)) {
		t.Fatalf("appendEncode after a prefix: %d bytes, want the prefix and Marshal's %d", len(got), len(want))
	}
	if !reflect.DeepEqual(pod, before) {
		t.Fatal("appendEncode changed the object")
	}
	own, err := c.Encode(pod)
	must(t, err)
	if !bytes.Equal(own, want) || cap(own) != len(want) {
		t.Fatalf("Encode: %d bytes (cap %d), want Marshal's %d", len(own), cap(own), len(want))
	}
	buf := make([]byte, 0, 2*len(want))
	into := testing.AllocsPerRun(50, func() {
		if _, err := c.appendEncode(buf[:0], pod); err != nil {
			t.Fatal(err)
		}
	})
	fresh := testing.AllocsPerRun(50, func() {
		if _, err := c.Encode(pod); err != nil {
			t.Fatal(err)
		}
	})
	if into != fresh-1 {
		t.Errorf("appendEncode into a buffer with room: %v allocations, Encode %v; want one fewer", into, fresh)
	}
}

// TestCompressedRecordsDoNotShareItsBuffer: Compressed encodes every object
// into one reused buffer; the records it returns are copies, so a record
// made before another encode still decodes to its own object.
func TestCompressedRecordsDoNotShareItsBuffer(t *testing.T) {
	pc, err := NewProtobuf(&corev1.Pod{})
	must(t, err)
	c, err := NewCompressed(pc, CompressedOptions{SampleObjects: 4})
	must(t, err)
	var recs [][]byte
	var pods []*corev1.Pod
	for i := range 12 { // past the first dictionary build
		p := serverPod(i)
		rec, err := c.Encode(p)
		must(t, err)
		recs, pods = append(recs, rec), append(pods, p)
	}
	for i, rec := range recs {
		got, err := c.Decode(rec)
		must(t, err)
		data, err := pods[i].Marshal()
		must(t, err)
		want := &corev1.Pod{} // as the generated code decodes it (times in time.Local)
		must(t, want.Unmarshal(data))
		want.Kind, want.APIVersion = got.(*corev1.Pod).Kind, got.(*corev1.Pod).APIVersion
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("record %d decodes to another object than the one encoded: %s", i,
				firstDifference(reflect.ValueOf(got), reflect.ValueOf(want), "pod"))
		}
	}
}
