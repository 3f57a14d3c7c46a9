package codec

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

var _ Codec = (*Compressed)(nil)

func mustCompressed(t testing.TB, inner Codec) *Compressed {
	t.Helper()
	c, err := NewCompressed(inner, CompressedOptions{})
	must(t, err)
	return c
}

func podCodec(t testing.TB) *Protobuf {
	t.Helper()
	c, err := NewProtobuf(&corev1.Pod{})
	must(t, err)
	return c
}

// encoded is one object through a Compressed codec: the inner codec's
// encoding, the record, and the object the inner codec decodes from its
// encoding (what the record must decode to).
type encoded struct {
	raw, record []byte
	want        any
}

func encodeEach[T runtime.Object](t testing.TB, c *Compressed, inner Codec, objs []T) []encoded {
	t.Helper()
	out := make([]encoded, len(objs))
	for i, o := range objs {
		raw, err := inner.Encode(o)
		must(t, err)
		rec, err := c.Encode(o)
		must(t, err)
		want, err := inner.Decode(raw)
		must(t, err)
		out[i] = encoded{raw: raw, record: rec, want: want}
	}
	return out
}

// checkDecodes checks that every record decodes (Decode and DecodeInto) to
// what the inner codec decodes from its encoding, and that its labels read as
// the inner codec reads them.
func checkDecodes(t *testing.T, c *Compressed, inner *Protobuf, es []encoded) {
	t.Helper()
	for i, e := range es {
		got, err := c.Decode(e.record)
		must(t, err)
		if !reflect.DeepEqual(got, e.want) {
			t.Fatalf("record %d (dictionary %d) decodes to another object", i, e.record[0])
		}
		into := reflect.New(reflect.TypeOf(e.want).Elem()).Interface()
		must(t, c.DecodeInto(e.record, into))
		if !reflect.DeepEqual(into, e.want) {
			t.Fatalf("record %d (dictionary %d): DecodeInto gives another object", i, e.record[0])
		}
		labels, err := c.AppendLabels(nil, e.record)
		must(t, err)
		want, err := inner.AppendLabels(nil, e.raw)
		must(t, err)
		equalStrings(t, "labels", labels, want)
	}
}

// Objects of both corpora come back from their records as the inner codec
// decodes them: the first 256 stored as they are (before the first
// dictionary), the later ones compressed against a dictionary.
func TestCompressedRoundTripsBenchAndRealisticObjects(t *testing.T) {
	pods := podCodec(t)
	cms, err := NewProtobuf(&corev1.ConfigMap{})
	must(t, err)
	for _, tc := range []struct {
		name  string
		inner *Protobuf
		es    func(c *Compressed) []encoded
	}{
		{"bench pods", pods, func(c *Compressed) []encoded { return encodeEach(t, c, pods, benchPods(2000)) }},
		{"realistic pods", pods, func(c *Compressed) []encoded { return encodeEach(t, c, pods, realisticPods(2000)) }},
		{"realistic ConfigMaps", cms, func(c *Compressed) []encoded { return encodeEach(t, c, cms, realisticConfigMaps(2000)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustCompressed(t, tc.inner)
			es := tc.es(c)
			checkDecodes(t, c, tc.inner, es)
			compressed := 0
			for i, e := range es {
				switch {
				case i < 256 && (e.record[0] != asIs || len(e.record) != len(e.raw)+recordOverhead):
					t.Fatalf("record %d of %d bytes, dictionary %d: want the %d-byte encoding as it is", i, len(e.record), e.record[0], len(e.raw))
				case e.record[0] != asIs:
					compressed++
					if len(e.record) >= len(e.raw) {
						t.Fatalf("record %d: %d bytes compressed from %d", i, len(e.record), len(e.raw))
					}
				}
			}
			if es[256].record[0] != 1 || compressed < len(es)/2 {
				t.Fatalf("record 256 names dictionary %d; %d of %d records compressed", es[256].record[0], compressed, len(es))
			}
		})
	}
}

// Stats counts every encode: the bytes in and out, the records stored as
// they are, the dictionaries.
func TestCompressedStatsCountEveryEncode(t *testing.T) {
	inner := podCodec(t)
	c := mustCompressed(t, inner)
	if s := c.Stats(); s != (CompressionStats{}) || s.Ratio() != 1 {
		t.Fatalf("new codec: %+v, ratio %v", s, s.Ratio())
	}
	es := encodeEach(t, c, inner, benchPods(1000))
	var want CompressionStats
	for _, e := range es {
		want.BytesIn += int64(len(e.raw))
		want.BytesOut += int64(len(e.record))
		if e.record[0] == asIs {
			want.AsIs++
		}
	}
	want.Dictionaries = 1
	want.DictionaryBytes = c.current.Load().size
	if got := c.Stats(); got != want {
		t.Fatalf("stats %+v, want %+v", got, want)
	}
	if got, want := c.Stats().Ratio(), float64(want.BytesIn)/float64(want.BytesOut); got != want {
		t.Fatalf("ratio %v, want %v", got, want)
	}
}

// When the objects change so that they compress worse than the bound (here
// bench pods, then pods of other templates), the codec builds a new
// dictionary; records made with the first one still decode.
func TestCompressedRebuildsItsDictionaryAndOldRecordsStillDecode(t *testing.T) {
	inner := podCodec(t)
	c := mustCompressed(t, inner)
	before := encodeEach(t, c, inner, benchPods(2000))
	if n := c.Stats().Dictionaries; n != 1 {
		t.Fatalf("%d dictionaries after 2000 bench pods, want 1", n)
	}
	after := encodeEach(t, c, inner, realisticPods(3000))
	if n := c.Stats().Dictionaries; n < 2 {
		t.Fatalf("%d dictionaries after pods of other templates, want a second", n)
	}
	if after[0].record[0] != 1 && after[0].record[0] != asIs {
		t.Fatalf("the first pod after the change names dictionary %d, want the first (or none)", after[0].record[0])
	}
	last := after[len(after)-1].record[0]
	if int(last) != c.Stats().Dictionaries {
		t.Fatalf("the last record names dictionary %d of %d", last, c.Stats().Dictionaries)
	}
	for _, e := range before {
		if e.record[0] != 1 && e.record[0] != asIs {
			t.Fatalf("a bench pod's record names dictionary %d", e.record[0])
		}
	}
	checkDecodes(t, c, inner, before)
	checkDecodes(t, c, inner, after)
}

// An object that does not compress (random data) is stored as it is, decided
// per object, while its neighbours are compressed.
func TestCompressedStoresAnObjectThatDoesNotCompressAsItIs(t *testing.T) {
	inner, err := NewProtobuf(&corev1.ConfigMap{})
	must(t, err)
	c := mustCompressed(t, inner)
	cms := realisticConfigMaps(1000)
	encodeEach(t, c, inner, cms)
	random := cms[0].DeepCopy()
	random.Name, random.Data, random.BinaryData = "random", nil, map[string][]byte{"seed.bin": randomBytes(8 << 10)}
	plain := cms[1].DeepCopy()
	es := encodeEach(t, c, inner, []*corev1.ConfigMap{random, plain})
	if r := es[0]; r.record[0] != asIs || len(r.record) != len(r.raw)+recordOverhead {
		t.Fatalf("random ConfigMap: record of %d bytes, dictionary %d, from %d", len(r.record), r.record[0], len(r.raw))
	}
	if r := es[1]; r.record[0] == asIs {
		t.Fatalf("ConfigMap %s stored as it is", plain.Name)
	}
	checkDecodes(t, c, inner, es)
}

// randomBytes returns n bytes of a fixed pseudo-random stream (xorshift).
func randomBytes(n int) []byte {
	b := make([]byte, n)
	x := uint64(0x9E3779B97F4A7C15)
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}

// Two objects decoded from one record share nothing either may modify, and
// modifying them leaves the record as it was (doc.go's contract, with the
// decompressed buffer in the place of the bytes).
func TestCompressedDecodedObjectsShareNothingModifiable(t *testing.T) {
	inner := podCodec(t)
	c := mustCompressed(t, inner)
	es := encodeEach(t, c, inner, benchPods(300))
	for _, e := range []encoded{es[0], es[299]} { // stored as it is, compressed
		original := bytes.Clone(e.record)
		a, err := c.Decode(e.record)
		must(t, err)
		b, err := c.Decode(e.record)
		must(t, err)
		p := a.(*corev1.Pod)
		p.Labels["app"] = "changed"
		p.Spec.Containers[0].Args[0] = "--changed"
		*p.Spec.TerminationGracePeriodSeconds = 1
		if !bytes.Equal(e.record, original) {
			t.Fatalf("modifying a pod decoded from a record of dictionary %d modified the record", e.record[0])
		}
		if !reflect.DeepEqual(b, e.want) {
			t.Fatalf("modifying a pod decoded from a record of dictionary %d modified another decoded from it", e.record[0])
		}
	}
}

// With an inner codec that has no DecodeInto, DecodeInto decodes and copies
// the object into dst; an object of another type is refused.
func TestCompressedDecodeIntoCopiesWhenTheInnerCodecCannot(t *testing.T) {
	c := mustCompressed(t, NewUnstructuredCBOR())
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "a", "labels": map[string]any{"app": "web"}}, "data": map[string]any{"k": "v"}}}
	rec, err := c.Encode(u)
	must(t, err)
	var got unstructured.Unstructured
	must(t, c.DecodeInto(rec, &got))
	if !reflect.DeepEqual(&got, u) {
		t.Fatalf("DecodeInto: %v, want %v", got.Object, u.Object)
	}
	if err := c.DecodeInto(rec, &corev1.ConfigMap{}); err == nil {
		t.Fatal("DecodeInto a *corev1.ConfigMap of an Unstructured's record: no error")
	}
	labels, err := c.AppendLabels(nil, rec)
	must(t, err)
	equalStrings(t, "labels", labels, []string{"app", "web"})
}

// An inner codec that reads no labels makes AppendLabels fail (the Indexer
// then decodes), leaving dst as it was.
func TestCompressedAppendLabelsFailsWithoutAnInnerLabelReader(t *testing.T) {
	c := mustCompressed(t, decodeOnly{podCodec(t)})
	rec, err := c.Encode(benchPods(1)[0])
	must(t, err)
	dst := []string{"kept"}
	got, err := c.AppendLabels(dst, rec)
	if err == nil || !slices.Equal(got, dst) {
		t.Fatalf("AppendLabels = %q, %v; want %q and an error", got, err, dst)
	}
}

// decodeOnly hides every method of its codec but Encode and Decode.
type decodeOnly struct{ c Codec }

func (d decodeOnly) Encode(obj any) ([]byte, error)  { return d.c.Encode(obj) }
func (d decodeOnly) Decode(data []byte) (any, error) { return d.c.Decode(data) }

func TestNewCompressedRefusesBadOptions(t *testing.T) {
	for _, opts := range []CompressedOptions{{SampleObjects: -1}, {MaxDictionaries: -1}, {MaxDictionaries: 256}} {
		if _, err := NewCompressed(podCodec(t), opts); err == nil {
			t.Errorf("NewCompressed(%+v): no error", opts)
		}
	}
	if _, err := NewCompressed(nil, CompressedOptions{}); err == nil {
		t.Error("NewCompressed(nil): no error")
	}
}

// Once the codec holds MaxDictionaries, it builds no more and keeps
// compressing with the last.
func TestCompressedStopsRebuildingAtMaxDictionaries(t *testing.T) {
	inner := podCodec(t)
	c, err := NewCompressed(inner, CompressedOptions{MaxDictionaries: 1})
	must(t, err)
	encodeEach(t, c, inner, benchPods(1000))
	es := encodeEach(t, c, inner, realisticPods(3000))
	if n := c.Stats().Dictionaries; n != 1 {
		t.Fatalf("%d dictionaries, want 1", n)
	}
	if p := c.policy; p.reservoir != nil || p.worse != nil || p.first != nil {
		t.Fatalf("samples kept after the last dictionary: %d, %d, %d", len(p.reservoir), len(p.worse), len(p.first))
	}
	checkDecodes(t, c, inner, es[len(es)-100:])
}

// Encodes and decodes run at once (the informer's writer encodes while
// readers decode; under -race): every record decodes to its object, through a
// dictionary build, with two encoding goroutines sharing the codec.
func TestCompressedEncodesAndDecodesConcurrently(t *testing.T) {
	inner := podCodec(t)
	c := mustCompressed(t, inner)
	pods := realisticPods(1200)
	want := make([]any, len(pods))
	for i, p := range pods {
		raw, err := inner.Encode(p)
		must(t, err)
		want[i], err = inner.Decode(raw)
		must(t, err)
	}
	records := make([]atomic.Pointer[[]byte], len(pods))
	var encoders, readers sync.WaitGroup
	for e := range 2 {
		encoders.Go(func() {
			for i := e; i < len(pods); i += 2 {
				rec, err := c.Encode(pods[i])
				if err != nil {
					t.Error(err)
					return
				}
				records[i].Store(&rec)
			}
		})
	}
	done := make(chan struct{})
	var decoded atomic.Int64
	for r := range 4 {
		readers.Go(func() {
			for i := r; ; i = (i + 7) % len(pods) {
				select {
				case <-done:
					return
				default:
				}
				rec := records[i].Load()
				if rec == nil {
					continue
				}
				got, err := c.Decode(*rec)
				if err != nil {
					t.Error(err)
					return
				}
				if !reflect.DeepEqual(got, want[i]) {
					t.Errorf("record %d decodes to another pod", i)
					return
				}
				decoded.Add(1)
			}
		})
	}
	encoders.Wait()
	close(done)
	readers.Wait()
	if c.Stats().Dictionaries == 0 || decoded.Load() == 0 {
		t.Fatalf("%d dictionaries, %d concurrent decodes", c.Stats().Dictionaries, decoded.Load())
	}
	for i := range records {
		got, err := c.Decode(*records[i].Load())
		must(t, err)
		if !reflect.DeepEqual(got, want[i]) {
			t.Fatalf("record %d decodes to another pod", i)
		}
	}
}

// An encode that loaded the current dictionary just before a rebuild retired
// it raises the dictionary's bound after the retired copy was made; the record
// it makes must decode with the retired copy, not be refused as corrupt (which
// costs its informer a relist).
func TestRetiredDictionarySharesTheBoundOfEncodesInFlight(t *testing.T) {
	inner := podCodec(t)
	pods := benchPods(258)
	raws := make([][]byte, len(pods))
	for i, p := range pods {
		raw, err := inner.Encode(p)
		must(t, err)
		raws[i] = raw
	}
	d := buildDictionary(1, raws[:256], nil)
	if d == nil {
		t.Fatal("no dictionary built of 256 bench pods")
	}
	d.compress(nil, raws[256])
	retired := d.retired() // a rebuild retires d ...
	long := pods[257].DeepCopy()
	long.Annotations = map[string]string{"bench/long": strings.Repeat("x", 4096)}
	raw, err := inner.Encode(long)
	must(t, err)
	if len(raw) <= len(raws[256]) {
		t.Fatalf("the late object is %d bytes, not longer than the %d before", len(raw), len(raws[256]))
	}
	block := d.compress(nil, raw) // ... while an encode that loaded it goes on
	got, err := retired.decompress(block)
	if err != nil {
		t.Fatalf("the retired dictionary refuses a record of its in-flight encode: %v", err)
	}
	if !bytes.Equal(got, raw) {
		t.Fatal("the retired dictionary decompresses the record to other bytes")
	}
}
