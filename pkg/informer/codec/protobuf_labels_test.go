package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// labelsOfPairs is the map of key, value pairs, the later pair of a key
// counting (as AppendLabels' contract says).
func labelsOfPairs(pairs []string) map[string]string {
	out := map[string]string{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[pairs[i]] = pairs[i+1]
	}
	return out
}

// sameLabels compares label maps, nil and empty alike (both select the same).
func sameLabels(a, b map[string]string) bool {
	return len(a) == len(b) && (len(a) == 0 || maps.Equal(a, b))
}

// labelCases are the label maps every reader is tested on.
func labelCases() map[string]map[string]string {
	many := map[string]string{}
	for i := range 200 {
		many[fmt.Sprintf("example.com/key-%03d", i)] = fmt.Sprintf("value-%d", i)
	}
	return map[string]map[string]string{
		"absent":       nil,
		"empty map":    {},
		"empty value":  {"app": "", "tier": "web"},
		"empty key":    {"": "x"},
		"unicode":      {"名前": "値", "emoji": "🚀", "app": "ünïcödé"},
		"many":         many,
		"one":          {"app": "web"},
		"long value":   {"app": string(make([]byte, 300))},
		"prefixed key": {"app.kubernetes.io/name": "web", "app": "x"},
	}
}

// checkProtobufLabels asserts that AppendLabels reads from data the labels
// that the codec's decode finds, with dst's existing content kept.
func checkProtobufLabels(t *testing.T, c *Protobuf, data []byte) {
	t.Helper()
	obj, decodeErr := c.Decode(data)
	dst := []string{"kept", "pair"}
	pairs, err := c.AppendLabels(dst, data)
	if len(pairs) < 2 || pairs[0] != "kept" || pairs[1] != "pair" {
		t.Fatalf("AppendLabels lost dst's content: %q", pairs)
	}
	if err != nil {
		if len(pairs) != 2 {
			t.Fatalf("AppendLabels failed (%v) but returned %q", err, pairs)
		}
		return
	}
	if decodeErr != nil {
		return // invalid elsewhere: the caller's decode reports it
	}
	want := obj.(metav1.Object).GetLabels()
	if got := labelsOfPairs(pairs[2:]); !sameLabels(got, want) {
		t.Fatalf("labels read %v, decoded %v", got, want)
	}
}

func TestProtobufAppendLabelsMatchesTheDecodedObject(t *testing.T) {
	c, err := NewProtobuf(&corev1.Pod{})
	must(t, err)
	for name, labels := range labelCases() {
		t.Run(name, func(t *testing.T) {
			pod := serverPod(1)
			pod.Labels = labels
			data, err := c.Encode(pod)
			must(t, err)
			checkProtobufLabels(t, c, data)
			pairs, err := c.AppendLabels(nil, data)
			must(t, err)
			if got := labelsOfPairs(pairs); !sameLabels(got, labels) {
				t.Fatalf("read %v, want %v", got, labels)
			}
		})
	}
}

// Random objects of every top-level type of the decoder's tests.
func TestProtobufAppendLabelsMatchesOnRandomObjects(t *testing.T) {
	seed := protoTestSeed(t)
	for i, m := range protoTestTypes {
		c, err := NewProtobuf(m.(runtime.Object))
		must(t, err)
		t.Run(reflect.TypeOf(m).Elem().String(), func(t *testing.T) {
			f := newFiller(seed + int64(i))
			for range 100 {
				obj := newOf(m)
				f.Fill(obj)
				data, err := obj.Marshal()
				must(t, err)
				if !c.metaFirst {
					if _, err := c.AppendLabels(nil, data); !errors.Is(err, ErrNoLabels) {
						t.Fatalf("a type without ObjectMeta as field 1: %v, want ErrNoLabels", err)
					}
					return
				}
				if _, err := c.AppendLabels(nil, data); err != nil {
					t.Fatalf("labels of a Marshal's output not read: %v", err)
				}
				checkProtobufLabels(t, c, data)
			}
		})
	}
}

// Wire forms the generated Marshal does not produce but Unmarshal accepts: the
// labels must still be the decoded object's.
func TestProtobufAppendLabelsFollowsUnmarshalOnUnusualWireForms(t *testing.T) {
	c, err := NewProtobuf(&corev1.Pod{})
	must(t, err)
	entry := func(fields ...[]byte) []byte {
		var b []byte
		for _, f := range fields {
			b = append(b, f...)
		}
		return appendBytesField(nil, protoLabelsField, b)
	}
	key := func(s string) []byte { return appendBytesField(nil, 1, []byte(s)) }
	value := func(s string) []byte { return appendBytesField(nil, 2, []byte(s)) }
	meta := func(fields ...[]byte) []byte {
		var b []byte
		for _, f := range fields {
			b = append(b, f...)
		}
		return appendBytesField(nil, protoMetadataField, b)
	}
	name := appendBytesField(nil, 1, []byte("p"))
	unknownVarint := binary.AppendUvarint(appendTag(nil, 7, 0), 300)
	spec := appendBytesField(nil, 2, appendBytesField(nil, 2, []byte("node")))
	for label, data := range map[string][]byte{
		"value before key":       meta(name, entry(value("v"), key("k"))),
		"key only":               meta(entry(key("k"))),
		"value only":             meta(entry(value("v"))),
		"duplicate key":          meta(entry(key("k"), value("1")), entry(key("k"), value("2"))),
		"repeated key field":     meta(entry(key("a"), key("b"), value("v"))),
		"unknown entry field":    meta(entry(key("k"), unknownVarint, value("v"))),
		"metadata twice":         append(meta(entry(key("a"), value("1"))), meta(entry(key("b"), value("2")))...),
		"metadata after spec":    append(spec, meta(name, entry(key("k"), value("v")))...),
		"labels after other":     meta(name, unknownVarint, entry(key("k"), value("v")), name),
		"empty entry":            meta(entry()),
		"no metadata":            spec,
		"empty":                  {},
		"key with varint wire":   meta(appendBytesField(nil, protoLabelsField, binary.AppendUvarint(appendTag(nil, 1, 0), 1))),
		"labels with varint":     meta(binary.AppendUvarint(appendTag(nil, protoLabelsField, 0), 1)),
		"metadata with varint":   binary.AppendUvarint(appendTag(nil, protoMetadataField, 0), 1),
		"truncated entry":        meta(entry(key("k"), value("v")))[:8],
		"group in metadata":      meta(appendTag(nil, 20, 3), appendTag(nil, 20, 4), entry(key("k"), value("v"))),
		"overlong length":        {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"unterminated varint":    {0x0a, 0x80},
		"fixed fields in entry":  meta(entry(key("k"), appendTag(nil, 9, 1), make([]byte, 8), value("v"))),
		"fixed32 field in entry": meta(entry(key("k"), appendTag(nil, 9, 5), make([]byte, 4), value("v"))),
	} {
		t.Run(label, func(t *testing.T) { checkProtobufLabels(t, c, data) })
	}
	pairs, err := c.AppendLabels(nil, meta(entry(key("k"), value("1")), entry(key("k"), value("2"))))
	must(t, err)
	if got := labelsOfPairs(pairs); got["k"] != "2" {
		t.Errorf("duplicate key: %v, want the later value", got)
	}
}

func TestProtobufAppendLabelsAliasesTheBytesAndDoesNotAllocate(t *testing.T) {
	c, err := NewProtobuf(&corev1.Pod{})
	must(t, err)
	data, err := c.Encode(serverPod(3))
	must(t, err)
	scratch := make([]string, 0, 16)
	if allocs := testing.AllocsPerRun(100, func() {
		scratch, _ = c.AppendLabels(scratch[:0], data)
	}); allocs != 0 {
		t.Errorf("AppendLabels allocated %v times with room in dst, want 0", allocs)
	}
	if len(scratch) != 6 {
		t.Fatalf("read %q, want 3 labels", scratch)
	}
	for _, s := range scratch {
		if !aliases(s, data) {
			t.Errorf("%q is a copy, want a string over the bytes", s)
		}
	}
}

// aliases reports whether s points into b.
func aliases(s string, b []byte) bool {
	if len(s) == 0 {
		return true
	}
	p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return p >= start && p < start+uintptr(len(b))
}

func FuzzProtobufLabels(f *testing.F) {
	var codecs []*Protobuf
	for i, m := range protoTestTypes {
		c, err := NewProtobuf(m.(runtime.Object))
		if err != nil {
			f.Fatal(err)
		}
		codecs = append(codecs, c)
		fill := newFiller(int64(i))
		for range 3 {
			obj := newOf(m)
			fill.Fill(obj)
			if data, err := obj.Marshal(); err == nil {
				f.Add(uint8(i), data)
			}
		}
	}
	for _, labels := range labelCases() {
		pod := serverPod(0)
		pod.Labels = labels
		if data, err := pod.Marshal(); err == nil {
			f.Add(uint8(0), data)
		}
	}
	f.Fuzz(func(t *testing.T, typ uint8, data []byte) {
		c := codecs[int(typ)%len(codecs)]
		if !c.metaFirst {
			return
		}
		checkProtobufLabels(t, c, data)
	})
}

// BenchmarkLabelsOfStoredPod is the cost per candidate of the two ways to
// check a label selector on a compact record that issue #19 names: reading the
// labels from the protobuf bytes (AppendLabels, what the Indexer does), and
// keeping them beside the bytes in the record (a []string of key, value pairs
// aliasing the bytes, so only its header and string headers are extra: see
// held-B/object). Both then look up one key as the selector would.
func BenchmarkLabelsOfStoredPod(b *testing.B) {
	c, err := NewProtobuf(&corev1.Pod{})
	if err != nil {
		b.Fatal(err)
	}
	pod := serverPod(3)
	data, err := c.Encode(pod)
	if err != nil {
		b.Fatal(err)
	}
	lookup := func(pairs []string, key string) string {
		for i := len(pairs) - 2; i >= 0; i -= 2 {
			if pairs[i] == key {
				return pairs[i+1]
			}
		}
		return ""
	}
	b.Run("read-from-bytes", func(b *testing.B) {
		scratch := make([]string, 0, 16)
		b.ReportAllocs()
		for b.Loop() {
			scratch, _ = c.AppendLabels(scratch[:0], data)
			if lookup(scratch, "app") != "web" {
				b.Fatal("label app not read")
			}
		}
		b.ReportMetric(0, "held-B/object")
	})
	b.Run("kept-beside-bytes", func(b *testing.B) {
		kept, _ := c.AppendLabels(nil, data)
		kept = kept[:len(kept):len(kept)]
		b.ReportAllocs()
		for b.Loop() {
			if lookup(kept, "app") != "web" {
				b.Fatal("label app not found")
			}
		}
		// A slice header in the record, and the pairs' string headers.
		held := int(reflect.TypeFor[[]string]().Size()) + len(kept)*int(reflect.TypeFor[string]().Size())
		b.ReportMetric(float64(held), "held-B/object")
	})
}

// Every truncation of an encoded pod, and every byte of it overwritten with a
// few values: never a panic, and the labels of what still decodes.
func TestProtobufAppendLabelsOnTruncatedAndCorruptedInput(t *testing.T) {
	c, err := NewProtobuf(&corev1.Pod{})
	must(t, err)
	data, err := c.Encode(serverPod(3))
	must(t, err)
	for n := range len(data) {
		checkProtobufLabels(t, c, data[:n])
	}
	for i := range len(data) {
		for _, b := range []byte{0x00, 0x07, 0x80, 0xff, data[i] ^ 0x10} {
			corrupted := bytes.Clone(data)
			corrupted[i] = b
			checkProtobufLabels(t, c, corrupted)
		}
	}
}
