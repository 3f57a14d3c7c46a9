package codec

import (
	"fmt"
	goruntime "runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/dict"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The candidates for compressed payloads (issue 23), per object, on the
// bench's pods, the realistic pods and the realistic ConfigMaps (in key
// order, as an initial list delivers them; compressed_corpus_test.go):
//
//	protobuf        the inner codec alone (today's payload): the reference
//	s2              S2 per object, no dictionary
//	s2-dict         Compressed: S2 against its dictionaries (the choice)
//	zstd            zstd per object, no dictionary
//	zstd-dict-6K    zstd with a 6 KB dictionary trained (klauspost/compress/dict)
//	                on the first 2,000 objects
//	zstd-dict-64K   the same with a 64 KB dictionary
//
// Each figure is measured interleaved with the protobuf codec's on the same
// objects, so that the ratio (…-x, candidate ÷ protobuf) holds on a busy
// machine: B/obj (the records' bytes, as held), heap-B/obj (the heap they
// take, Go's size classes included), decode (decompression and decode into
// a new object: a Get's copy) with its allocations, encode, and for
// reference controller-runtime's deep copy of the decoded object (its Get).

// corpus is one population, encoded by the protobuf codec.
type corpus struct {
	name  string
	inner *Protobuf
	raw   [][]byte // the protobuf encodings, in key order
	// sample holds every sampleStride-th object, decoded: the objects the
	// encode and deep-copy figures are taken on (all of them would make the
	// garbage collector's marking a large part of every figure).
	sample []runtime.Object

	once  sync.Once
	cands []*candidate // see candidates
}

var corpora = sync.OnceValue(func() []*corpus {
	pod, err := NewProtobuf(&corev1.Pod{})
	if err != nil {
		panic(err)
	}
	cm, err := NewProtobuf(&corev1.ConfigMap{})
	if err != nil {
		panic(err)
	}
	var out []*corpus
	add := func(name string, inner *Protobuf, objs []runtime.Object) {
		c := &corpus{name: name, inner: inner}
		for i, o := range objs {
			data, err := inner.Encode(o)
			if err != nil {
				panic(err)
			}
			c.raw = append(c.raw, data)
			if i%sampleStride == 0 {
				c.sample = append(c.sample, o)
			}
		}
		out = append(out, c)
	}
	add("bench-pods", pod, objects(benchPods(20000)))
	add("realistic-pods", pod, objects(realisticPods(20000)))
	add("realistic-configmaps", cm, objects(realisticConfigMaps(5000)))
	return out
})

// sampleStride: see corpus.sample.
const sampleStride = 10

// batch is the number of objects timed together, so that reading the clock
// costs little of each figure.
const batch = 16

func objects[T runtime.Object](in []T) []runtime.Object {
	out := make([]runtime.Object, len(in))
	for i, o := range in {
		out[i] = o
	}
	return out
}

// candidate is one way of holding a corpus: its records, made in order by
// encoding the objects the corpus was encoded from (decoded again: the
// corpus keeps their protobuf encodings only), and the codec that decodes
// them.
type candidate struct {
	name     string
	codec    Codec
	records  [][]byte
	dictSize int           // bytes of dictionary (all of Compressed's)
	build    time.Duration // time to build the dictionary (zstd's), 0 when online
}

// candidates returns the candidates of c, made once per process (the zstd
// dictionaries take seconds to train).
func candidates(c *corpus) []*candidate {
	c.once.Do(func() { c.cands = makeCandidates(c) })
	return c.cands
}

func makeCandidates(c *corpus) []*candidate {
	var out []*candidate
	add := func(name string, codec Codec, dictSize int, build time.Duration) {
		cand := &candidate{name: name, codec: codec, dictSize: dictSize, build: build}
		for _, raw := range c.raw {
			o, err := c.inner.Decode(raw)
			if err != nil {
				panic(err)
			}
			rec, err := codec.Encode(o)
			if err != nil {
				panic(err)
			}
			cand.records = append(cand.records, rec)
		}
		if z, ok := codec.(*Compressed); ok {
			cand.dictSize = z.Stats().DictionaryBytes
		}
		out = append(out, cand)
	}
	add("protobuf", c.inner, 0, 0)
	add("s2", s2Codec{c.inner}, 0, 0)
	z, err := NewCompressed(c.inner, CompressedOptions{})
	if err != nil {
		panic(err)
	}
	add("s2-dict", z, 0, 0)
	add("zstd", newZstdCodec(c.inner, nil), 0, 0)
	for _, size := range []int{6 << 10, 64 << 10} {
		start := time.Now()
		zd, err := dict.BuildZstdDict(c.raw[:2000], dict.Options{MaxDictSize: size, HashBytes: 6, ZstdDictID: 1})
		if err != nil {
			panic(err)
		}
		add(fmt.Sprintf("zstd-dict-%dK", size>>10), newZstdCodec(c.inner, zd), len(zd), time.Since(start))
	}
	return out
}

// s2Codec compresses each encoding with S2 alone.
type s2Codec struct{ inner Codec }

func (c s2Codec) Encode(obj any) ([]byte, error) {
	raw, err := c.inner.Encode(obj)
	if err != nil {
		return nil, err
	}
	return s2.Encode(nil, raw), nil
}

func (c s2Codec) Decode(data []byte) (any, error) {
	raw, err := s2.Decode(nil, data)
	if err != nil {
		return nil, err
	}
	return c.inner.Decode(raw)
}

// zstdCodec compresses each encoding with zstd (without the frame's
// checksum), against a dictionary if it has one.
type zstdCodec struct {
	inner Codec
	enc   *zstd.Encoder
	dec   *zstd.Decoder
}

func newZstdCodec(inner Codec, dictionary []byte) *zstdCodec {
	eo := []zstd.EOption{zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false)}
	do := []zstd.DOption{zstd.WithDecoderConcurrency(0)}
	if dictionary != nil {
		eo = append(eo, zstd.WithEncoderDict(dictionary))
		do = append(do, zstd.WithDecoderDicts(dictionary))
	}
	enc, err := zstd.NewWriter(nil, eo...)
	if err != nil {
		panic(err)
	}
	dec, err := zstd.NewReader(nil, do...)
	if err != nil {
		panic(err)
	}
	return &zstdCodec{inner: inner, enc: enc, dec: dec}
}

func (c *zstdCodec) Encode(obj any) ([]byte, error) {
	raw, err := c.inner.Encode(obj)
	if err != nil {
		return nil, err
	}
	return c.enc.EncodeAll(raw, nil), nil
}

func (c *zstdCodec) Decode(data []byte) (any, error) {
	raw, err := c.dec.DecodeAll(data, nil)
	if err != nil {
		return nil, err
	}
	return c.inner.Decode(raw)
}

// heapOf returns the heap that records take, per record.
func heapOf(records [][]byte) float64 {
	before := heapAlloc()
	held := make([][]byte, len(records))
	for i, r := range records {
		held[i] = append(make([]byte, 0, len(r)), r...)
	}
	after := heapAlloc()
	goruntime.KeepAlive(held)
	return float64(after-before-uint64(len(held))*24) / float64(len(held))
}

func meanLen(records [][]byte) float64 {
	n := 0
	for _, r := range records {
		n += len(r)
	}
	return float64(n) / float64(len(records))
}

// BenchmarkCompressedGet measures a Get's copy per candidate: the decode of a
// record into a new object, interleaved with the protobuf codec's decode of
// the same object and controller-runtime's deep copy of it.
// decode-vs-protobuf-x and decode-vs-deepcopy-x are the candidate's time over
// theirs; B/obj, heap-B/obj and bytes-vs-protobuf-x what the records hold;
// allocs/decode the candidate's allocations per decode; dict-B its
// dictionaries' bytes.
func BenchmarkCompressedGet(b *testing.B) {
	for _, c := range corpora() {
		cands := candidates(c)
		proto := cands[0]
		protoHeap := heapOf(proto.records)
		for _, cand := range cands {
			b.Run(c.name+"/"+cand.name, func(b *testing.B) {
				n := len(cand.records)
				allocs := testing.AllocsPerRun(200, func() {
					if _, err := cand.codec.Decode(cand.records[n/2]); err != nil {
						b.Fatal(err)
					}
				})
				decode := func(cand *candidate, i int) time.Duration {
					start := time.Now()
					for k := range batch {
						if _, err := cand.codec.Decode(cand.records[(i+k)%n]); err != nil {
							b.Fatal(err)
						}
					}
					return time.Since(start)
				}
				var own, theirs, deep time.Duration
				i, round := 0, 0
				for b.Loop() {
					i = (i + 7919*batch) % n   // a stride through the corpus: objects of every template
					if round++; round%2 == 0 { // each first in turn: the first of the two pays the cache misses
						own += decode(cand, i)
						theirs += decode(proto, i)
					} else {
						theirs += decode(proto, i)
						own += decode(cand, i)
					}
					start := time.Now()
					for k := range batch {
						_ = c.sample[(i/sampleStride+k)%len(c.sample)].DeepCopyObject()
					}
					deep += time.Since(start)
				}
				heap := heapOf(cand.records)
				b.ReportMetric(float64(own)/float64(b.N*batch), "decode-ns/obj")
				b.ReportMetric(float64(own)/float64(theirs), "decode-vs-protobuf-x")
				b.ReportMetric(float64(own)/float64(deep), "decode-vs-deepcopy-x")
				b.ReportMetric(allocs, "allocs/decode")
				b.ReportMetric(meanLen(cand.records), "B/obj")
				b.ReportMetric(meanLen(cand.records)/meanLen(proto.records), "bytes-vs-protobuf-x")
				b.ReportMetric(heap, "heap-B/obj")
				b.ReportMetric(heap/protoHeap, "heap-vs-protobuf-x")
				b.ReportMetric(float64(cand.dictSize), "dict-B")
				if cand.build > 0 {
					b.ReportMetric(float64(cand.build.Milliseconds()), "dict-build-ms")
				}
			})
		}
	}
}

// BenchmarkCompressedEncode measures an encode per candidate (the inner
// encode included; for s2-dict, with the dictionary it ends with, the policy
// included), interleaved with the protobuf codec's encode of the same object:
// encode-vs-protobuf-x.
func BenchmarkCompressedEncode(b *testing.B) {
	for _, c := range corpora() {
		cands := candidates(c)
		proto := cands[0]
		for _, cand := range cands[1:] {
			b.Run(c.name+"/"+cand.name, func(b *testing.B) {
				n := len(c.sample)
				encode := func(cand *candidate, i int) time.Duration {
					start := time.Now()
					for k := range batch {
						if _, err := cand.codec.Encode(c.sample[(i+k)%n]); err != nil {
							b.Fatal(err)
						}
					}
					return time.Since(start)
				}
				var own, theirs time.Duration
				i, round := 0, 0
				for b.Loop() {
					i = (i + 7919*batch) % n
					if round++; round%2 == 0 {
						own += encode(cand, i)
						theirs += encode(proto, i)
					} else {
						theirs += encode(proto, i)
						own += encode(cand, i)
					}
				}
				b.ReportMetric(float64(own)/float64(b.N*batch), "encode-ns/obj")
				b.ReportMetric(float64(own)/float64(theirs), "encode-vs-protobuf-x")
			})
		}
	}
}

// compressedOf returns the s2-dict candidate of c: its codec, and its records.
func compressedOf(c *corpus) (*Compressed, [][]byte) {
	for _, cand := range candidates(c) {
		if z, ok := cand.codec.(*Compressed); ok {
			return z, cand.records
		}
	}
	panic("no s2-dict candidate")
}

// BenchmarkCompressedAppendLabels measures a label read (Indexer.Select's
// check before a decode): the protobuf codec's AppendLabels on its encoding
// against Compressed's (decompression, then the same read), interleaved:
// labels-vs-protobuf-x. labels-beside-B/obj is what keeping each object's
// labels uncompressed beside its record would cost instead (their protobuf
// map entries), and labels-compressed-B/obj what they take in the record now,
// about (their share of the inner encoding times the compression ratio).
func BenchmarkCompressedAppendLabels(b *testing.B) {
	for _, c := range corpora() {
		z, records := compressedOf(c)
		b.Run(c.name, func(b *testing.B) {
			beside := 0
			for _, o := range c.sample {
				for k, v := range o.(interface{ GetLabels() map[string]string }).GetLabels() {
					beside += 2 + len(k) + 2 + len(v) + 2 // the map entry: its tag and length, and the key's and value's
				}
			}
			n := len(records)
			var pairs []string
			read := func(lr labelReader, data [][]byte, i int) time.Duration {
				start := time.Now()
				for k := range batch {
					var err error
					if pairs, err = lr.AppendLabels(pairs[:0], data[(i+k)%n]); err != nil {
						b.Fatal(err)
					}
				}
				return time.Since(start)
			}
			var own, theirs time.Duration
			i, round := 0, 0
			for b.Loop() {
				i = (i + 7919*batch) % n
				if round++; round%2 == 0 {
					own += read(z, records, i)
					theirs += read(c.inner, c.raw, i)
				} else {
					theirs += read(c.inner, c.raw, i)
					own += read(z, records, i)
				}
			}
			ratio := z.Stats().Ratio()
			b.ReportMetric(float64(own)/float64(b.N*batch), "labels-ns/obj")
			b.ReportMetric(float64(theirs)/float64(b.N*batch), "protobuf-labels-ns/obj")
			b.ReportMetric(float64(own)/float64(theirs), "labels-vs-protobuf-x")
			b.ReportMetric(float64(beside)/float64(len(c.sample)), "labels-beside-B/obj")
			b.ReportMetric(float64(beside)/float64(len(c.sample))/ratio, "labels-compressed-B/obj")
		})
	}
}

// BenchmarkCompressedChecksum measures the records' CRC-32C, which every
// decode checks: checksum-ns/obj, and its share of the decode
// (checksum-vs-decode-x, against the same record's Decode, interleaved). Its
// bytes are 4 per record.
func BenchmarkCompressedChecksum(b *testing.B) {
	for _, c := range corpora() {
		z, records := compressedOf(c)
		b.Run(c.name, func(b *testing.B) {
			var sum, decode time.Duration
			n := len(records)
			i := 0
			for b.Loop() {
				i = (i + 7919*batch) % n
				start := time.Now()
				for k := range batch {
					if _, _, err := openRecord(records[(i+k)%n]); err != nil {
						b.Fatal(err)
					}
				}
				mid := time.Now()
				for k := range batch {
					if _, err := z.Decode(records[(i+k)%n]); err != nil {
						b.Fatal(err)
					}
				}
				decode += time.Since(mid)
				sum += mid.Sub(start)
			}
			b.ReportMetric(float64(sum)/float64(b.N*batch), "checksum-ns/obj")
			b.ReportMetric(float64(sum)/float64(decode), "checksum-vs-decode-x")
			b.ReportMetric(4/meanLen(records), "checksum-bytes-x")
		})
	}
}

// BenchmarkCompressedDictionaryBuild measures the build of a first dictionary
// from the first 256 objects of each corpus, and of a rebuild from 256
// objects spread over the corpus with the first one's exemplars: dict-B the
// bytes of the dictionary made.
func BenchmarkCompressedDictionaryBuild(b *testing.B) {
	for _, c := range corpora() {
		first := c.raw[:256]
		var spread [][]byte
		for i := range 256 {
			spread = append(spread, c.raw[i*len(c.raw)/256])
		}
		previous := buildDictionary(1, first, nil)
		b.Run(c.name+"/first", func(b *testing.B) {
			var d *dictionary
			for b.Loop() {
				d = buildDictionary(1, first, nil)
			}
			b.ReportMetric(float64(d.size), "dict-B")
		})
		b.Run(c.name+"/rebuild", func(b *testing.B) {
			var d *dictionary
			for b.Loop() {
				d = buildDictionary(2, spread, previous.exemplars)
			}
			b.ReportMetric(float64(d.size), "dict-B")
		})
	}
}

// BenchmarkCompressedS2Level compares the package's encoder (Own,
// compressed_encoder.go: the codec's for objects up to ownEncodeMax bytes)
// with S2's two on Compressed's last dictionary: Encode (the codec's for the
// others: a 64 KiB table zeroed per call) and EncodeBetter (two tables of 576
// KiB zeroed per call), bytes and time per object of the corpus.
func BenchmarkCompressedS2Level(b *testing.B) {
	for _, c := range corpora() {
		z, _ := compressedOf(c)
		d := z.current.Load()
		for _, level := range []string{"Own", "Encode", "EncodeBetter"} {
			b.Run(c.name+"/"+level, func(b *testing.B) {
				encode := d.s2.Encode
				switch level {
				case "Own":
					encode = d.enc.encode
				case "EncodeBetter":
					encode = d.s2.EncodeBetter
				}
				size := 0
				for _, raw := range c.raw {
					size += len(encode(nil, raw))
				}
				i := 0
				for b.Loop() {
					i = (i + 7919) % len(c.raw)
					encode(nil, c.raw[i])
				}
				b.ReportMetric(float64(size)/float64(len(c.raw)), "block-B/obj")
			})
		}
	}
}

// metadataPods returns the protobuf encodings of n pods of metadata only
// (namespace, name, resourceVersion, generation, two labels: about 116
// bytes), the smallest objects a Compressed codec stores.
func metadataPods(b testing.TB, n int) [][]byte {
	inner, err := NewProtobuf(&corev1.Pod{})
	if err != nil {
		b.Fatal(err)
	}
	raws := make([][]byte, n)
	for i := range raws {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: fmt.Sprintf("ns-%d", i%50), Name: fmt.Sprintf("pod-%07d", i),
			ResourceVersion: strconv.Itoa(i + 1), Generation: int64(i),
			Labels: map[string]string{"app": fmt.Sprintf("app-%d", i%500), "tier": "backend"},
		}}
		if raws[i], err = inner.Encode(p); err != nil {
			b.Fatal(err)
		}
	}
	return raws
}

// BenchmarkCompressedEncoderSmall measures the compression of a small object
// (metadataPods) against a dictionary built from the first 256: the
// codec's encoder (own) and S2's Encode on the same dictionary (s2, whose
// 64 KiB table is zeroed per call); block-B/obj the block's bytes.
func BenchmarkCompressedEncoderSmall(b *testing.B) {
	raws := metadataPods(b, 1000)
	d := buildDictionary(1, raws[:256], nil)
	for _, enc := range []struct {
		name   string
		encode func(dst, src []byte) []byte
	}{{"own", d.enc.encode}, {"s2", d.s2.Encode}} {
		b.Run(enc.name, func(b *testing.B) {
			dst := make([]byte, 0, 4096)
			size, i := 0, 0
			for b.Loop() {
				i = (i + 7) % len(raws)
				dst = enc.encode(dst[:0], raws[i])
				size += len(dst)
			}
			b.ReportMetric(float64(len(raws[0])), "obj-B")
			b.ReportMetric(float64(size)/float64(b.N), "block-B/obj")
		})
	}
}
