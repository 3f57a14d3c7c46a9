package codec

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// labelCodec is a codec that also reads labels from its bytes.
type labelCodec interface {
	storageCodec
	AppendLabels(dst []string, data []byte) ([]string, error)
}

// cborCodecs are the CBOR codecs with what they decode to, for the tests.
func cborCodecs(t testing.TB) map[string]labelCodec {
	typed, err := NewCBOR(&corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]labelCodec{"CBOR": typed, "UnstructuredCBOR": NewUnstructuredCBOR()}
}

// checkCBORLabels asserts that c.AppendLabels reads from data the labels of the
// object c decodes; it returns whether it read them.
func checkCBORLabels(t *testing.T, c labelCodec, data []byte) bool {
	t.Helper()
	obj, decodeErr := c.Decode(data)
	pairs, err := c.AppendLabels([]string{"kept", "pair"}, data)
	if len(pairs) < 2 || pairs[0] != "kept" || pairs[1] != "pair" {
		t.Fatalf("AppendLabels lost dst's content: %q", pairs)
	}
	if err != nil {
		if len(pairs) != 2 {
			t.Fatalf("AppendLabels failed (%v) but returned %q", err, pairs)
		}
		return false
	}
	if decodeErr != nil {
		return true
	}
	want := obj.(metav1.Object).GetLabels()
	if got := labelsOfPairs(pairs[2:]); !sameLabels(got, want) {
		t.Fatalf("labels read %v, decoded %v", got, want)
	}
	return true
}

// cborObjects returns serverPod(i) with labels, in the form each codec encodes.
func cborObjects(t testing.TB, labels map[string]string) map[string]any {
	pod := serverPod(1)
	pod.Labels = labels
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]any{"CBOR": pod, "UnstructuredCBOR": &unstructured.Unstructured{Object: u}}
}

func TestCBORAppendLabelsMatchesTheDecodedObject(t *testing.T) {
	codecs := cborCodecs(t)
	for name, labels := range labelCases() {
		for codecName, obj := range cborObjects(t, labels) {
			t.Run(codecName+"/"+name, func(t *testing.T) {
				c := codecs[codecName]
				data, err := c.Encode(obj)
				must(t, err)
				if !checkCBORLabels(t, c, data) {
					t.Fatal("labels of an encoded object not read")
				}
				pairs, _ := c.AppendLabels(nil, data)
				if got := labelsOfPairs(pairs); !sameLabels(got, labels) {
					t.Fatalf("read %v, want %v", got, labels)
				}
			})
		}
	}
}

func TestCBORAppendLabelsDoesNotAllocateAndAliasesTheBytes(t *testing.T) {
	for name, c := range cborCodecs(t) {
		data, err := c.Encode(cborObjects(t, map[string]string{"app": "web", "tier": "db"})[name])
		must(t, err)
		scratch := make([]string, 0, 8)
		if allocs := testing.AllocsPerRun(100, func() { scratch, _ = c.AppendLabels(scratch[:0], data) }); allocs != 0 {
			t.Errorf("%s: %v allocations with room in dst, want 0", name, allocs)
		}
		for _, s := range scratch {
			if !aliases(s, data) {
				t.Errorf("%s: %q is a copy", name, s)
			}
		}
	}
}

func TestCBORAppendLabelsOfATypeWithoutObjectMeta(t *testing.T) {
	c, err := NewCBOR(&metav1.Status{})
	must(t, err)
	if _, err := c.AppendLabels(nil, []byte{0xa0}); !errors.Is(err, ErrNoLabels) {
		t.Errorf("got %v, want ErrNoLabels", err)
	}
}

// cborHeadOf encodes a head of major type major with argument n, in the
// shortest form or, with wide, in eight bytes.
func cborHeadOf(major byte, n uint64, wide bool) []byte {
	switch {
	case wide:
		return []byte{major<<5 | 27, byte(n >> 56), byte(n >> 48), byte(n >> 40), byte(n >> 32),
			byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
	case n < 24:
		return []byte{major<<5 | byte(n)}
	case n < 256:
		return []byte{major<<5 | 24, byte(n)}
	default:
		return []byte{major<<5 | 25, byte(n >> 8), byte(n)}
	}
}

func cborStr(major byte, s string) []byte {
	return append(cborHeadOf(major, uint64(len(s)), false), s...)
}

func cborCat(items ...[]byte) []byte { return bytes.Join(items, nil) }

// Hand-built encodings the encoder does not produce (indefinite lengths, text
// strings, wide heads, tags, floats, metadata after and before other keys):
// the labels of what decodes, or an error the caller answers with a decode.
func TestCBORAppendLabelsOnEveryItemForm(t *testing.T) {
	const bs, ts = cborBytes, cborText
	labels := cborCat(cborHeadOf(cborMap, 2, false), cborStr(bs, "app"), cborStr(ts, "web"),
		cborStr(ts, "tier"), cborStr(bs, ""))
	indefLabels := cborCat([]byte{0xbf}, cborStr(bs, "app"), cborStr(bs, "web"), []byte{0xff})
	meta := func(labels []byte) []byte {
		return cborCat(cborHeadOf(cborMap, 2, false), cborStr(bs, "name"), cborStr(bs, "p"),
			cborStr(bs, "labels"), labels)
	}
	skippable := cborCat(
		cborHeadOf(cborArray, 6, false),
		cborHeadOf(cborUint, 1<<40, false), cborHeadOf(cborNint, 3, true),
		[]byte{0xf9, 0x3c, 0x00}, []byte{0xfb, 0, 0, 0, 0, 0, 0, 0, 0}, // float16 1.0, float64 0
		[]byte{0x5f, 0x42, 'a', 'b', 0x41, 'c', 0xff}, // indefinite byte string
		[]byte{0x9f, 0xf5, 0xf4, 0xf6, 0xff},          // indefinite array: true, false, null
	)
	top := func(entries ...[]byte) []byte {
		return cborCat(cborHeadOf(cborMap, uint64(len(entries)/2), false), cborCat(entries...))
	}
	cases := map[string]struct {
		data []byte
		read bool // the reader must read the labels (not fall back)
	}{
		"definite":                {top(cborStr(bs, "kind"), cborStr(bs, "Pod"), cborStr(bs, "metadata"), meta(labels)), true},
		"text keys":               {top(cborStr(ts, "metadata"), meta(labels)), true},
		"indefinite labels":       {top(cborStr(bs, "metadata"), meta(indefLabels)), true},
		"indefinite top":          {cborCat([]byte{0xbf}, cborStr(bs, "spec"), skippable, cborStr(bs, "metadata"), meta(labels), []byte{0xff}), true},
		"metadata after others":   {top(cborStr(bs, "a"), skippable, cborStr(bs, "zzz"), top(cborStr(bs, "x"), skippable), cborStr(bs, "metadata"), meta(labels)), true},
		"metadata first":          {top(cborStr(bs, "metadata"), meta(labels), cborStr(bs, "spec"), skippable), true},
		"wide heads":              {cborCat(cborHeadOf(cborMap, 1, true), cborHeadOf(bs, 8, true), []byte("metadata"), meta(labels)), true},
		"tagged other value":      {top(cborStr(bs, "spec"), cborCat([]byte{0xd8, 0x16}, cborStr(bs, "x")), cborStr(bs, "metadata"), meta(labels)), true},
		"null metadata":           {top(cborStr(bs, "metadata"), []byte{cborNull}), true},
		"null labels":             {top(cborStr(bs, "metadata"), meta([]byte{cborNull})), true},
		"no labels":               {top(cborStr(bs, "metadata"), top(cborStr(bs, "name"), cborStr(bs, "p"))), true},
		"no metadata":             {top(cborStr(bs, "spec"), skippable), true},
		"empty labels":            {top(cborStr(bs, "metadata"), meta(cborHeadOf(cborMap, 0, false))), true},
		"labels not a map":        {top(cborStr(bs, "metadata"), meta(cborStr(bs, "x"))), false},
		"label value a number":    {top(cborStr(bs, "metadata"), meta(cborCat(cborHeadOf(cborMap, 1, false), cborStr(bs, "a"), []byte{0x01}))), false},
		"tagged label value":      {top(cborStr(bs, "metadata"), meta(cborCat(cborHeadOf(cborMap, 1, false), cborStr(bs, "a"), []byte{0xd8, 0x16}, cborStr(bs, "x")))), false},
		"indefinite label string": {top(cborStr(bs, "metadata"), meta(cborCat(cborHeadOf(cborMap, 1, false), cborStr(bs, "a"), []byte{0x5f, 0x41, 'x', 0xff}))), false},
		"metadata not a map":      {top(cborStr(bs, "metadata"), []byte{0x01}), false},
		"not a map":               {cborStr(bs, "x"), false},
		"empty":                   {nil, false},
		"reserved head":           {[]byte{0xbf, 0x1c}, false},
		"unterminated":            {[]byte{0xbf, 0x41, 'a'}, false},
		"huge count":              {cborCat(cborHeadOf(cborMap, 1, false), cborStr(bs, "a"), cborHeadOf(cborArray, 1<<62, true)), false},
		"huge length":             {cborCat(cborHeadOf(cborMap, 1, false), cborStr(bs, "a"), cborHeadOf(bs, 1<<63, true)), false},
	}
	for name, c := range cborCodecs(t) {
		for caseName, tc := range cases {
			t.Run(name+"/"+caseName, func(t *testing.T) {
				if read := checkCBORLabels(t, c, tc.data); read != tc.read {
					t.Errorf("labels read: %v, want %v", read, tc.read)
				}
			})
		}
	}
}

// cborTestSeed is the seed of the corruption test, printed to replay it.
func cborTestSeed(t *testing.T) uint64 {
	seed := uint64(protoTestSeed(t))
	return seed
}

// Random truncations and byte changes of encoded objects: never a panic, and the
// labels of what still decodes.
func TestCBORAppendLabelsOnCorruptedInput(t *testing.T) {
	rng := rand.New(rand.NewPCG(cborTestSeed(t), 19))
	codecs := cborCodecs(t)
	for name, obj := range cborObjects(t, map[string]string{"app": "web", "tier": "db", "x": ""}) {
		c := codecs[name]
		data, err := c.Encode(obj)
		must(t, err)
		for n := range len(data) {
			checkCBORLabels(t, c, data[:n])
		}
		for range 5000 {
			corrupted := bytes.Clone(data)
			for range 1 + rng.IntN(3) {
				corrupted[rng.IntN(len(corrupted))] = byte(rng.Uint32())
			}
			checkCBORLabels(t, c, corrupted)
		}
	}
}

func FuzzCBORLabels(f *testing.F) {
	codecs := cborCodecs(f)
	for _, labels := range labelCases() {
		for name, obj := range cborObjects(f, labels) {
			data, err := codecs[name].Encode(obj)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(name == "UnstructuredCBOR", data)
		}
	}
	f.Fuzz(func(t *testing.T, unstructured bool, data []byte) {
		name := "CBOR"
		if unstructured {
			name = "UnstructuredCBOR"
		}
		checkCBORLabels(t, codecs[name], data)
	})
}
