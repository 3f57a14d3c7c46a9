package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/klauspost/compress/s2"
)

// rawCodec is an inner codec whose objects are their encodings ([]byte): a
// Compressed codec over a corpus's encodings builds the dictionaries it
// would over the objects, without encoding them again.
type rawCodec struct{}

func (rawCodec) Encode(obj any) ([]byte, error)  { return obj.([]byte), nil }
func (rawCodec) Decode(data []byte) (any, error) { return data, nil }

// noDictionary encodes without a dictionary (s2.Decode decodes its blocks).
var noDictionary dictEncoder

// finalDictionary returns the current dictionary of a Compressed codec that
// has encoded raws, in order, and the codec.
func finalDictionary(t testing.TB, raws [][]byte) (*dictionary, *Compressed) {
	t.Helper()
	c := mustCompressed(t, rawCodec{})
	for _, r := range raws {
		_, err := c.Encode(r)
		must(t, err)
	}
	d := c.current.Load()
	if d == nil {
		t.Fatal("no dictionary made")
	}
	return d, c
}

// blockShape is what a block holds, as parseBlock reads it.
type blockShape struct {
	literals, copies, dictCopies int
	lastDictCopyAt               int // output position of the last copy from the dictionary; -1: none
}

// parseBlock reads an S2 block made against a dictionary of dictLen bytes (0:
// none) as the encoder must make it: literals and copies that S2 decodes, no
// repeat code (a copy1 of offset 0), each copy from the dictionary starting
// at an output position up to s2.MaxDictSrcOffset and within the dictionary,
// and as many bytes as the block's length says.
func parseBlock(block []byte, dictLen int) (blockShape, error) {
	shape := blockShape{lastDictCopyAt: -1}
	n, k := binary.Uvarint(block)
	if k <= 0 {
		return shape, errors.New("no length")
	}
	src, d := block[k:], 0
	for len(src) > 0 {
		tag := src[0]
		var offset, length, size int
		switch tag & 3 {
		case 0:
			x := int(tag >> 2)
			if x >= 60 {
				m := x - 59
				if len(src) < 1+m {
					return shape, errors.New("truncated literal length")
				}
				x = 0
				for i := m; i >= 1; i-- {
					x = x<<8 | int(src[i])
				}
				size = 1 + m
			} else {
				size = 1
			}
			if len(src) < size+x+1 {
				return shape, errors.New("truncated literal")
			}
			src = src[size+x+1:]
			d += x + 1
			shape.literals++
			continue
		case 1:
			if len(src) < 2 {
				return shape, errors.New("truncated copy1")
			}
			offset, length, size = int(tag&0xe0)<<3|int(src[1]), int(tag>>2&7)+4, 2
			if offset == 0 {
				return shape, fmt.Errorf("a repeat code at %d", d)
			}
		case 2:
			if len(src) < 3 {
				return shape, errors.New("truncated copy2")
			}
			offset, length, size = int(binary.LittleEndian.Uint16(src[1:])), int(tag>>2)+1, 3
		case 3:
			if len(src) < 5 {
				return shape, errors.New("truncated copy4")
			}
			offset, length, size = int(binary.LittleEndian.Uint32(src[1:])), int(tag>>2)+1, 5
		}
		if offset == 0 {
			return shape, fmt.Errorf("a copy of offset 0 at %d", d)
		}
		if offset > d {
			if d > s2.MaxDictSrcOffset {
				return shape, fmt.Errorf("a copy from the dictionary at %d", d)
			}
			if start := dictLen - offset + d; start < 0 || start+length > dictLen {
				return shape, fmt.Errorf("a copy of [%d, %d) of a dictionary of %d bytes", start, start+length, dictLen)
			}
			shape.dictCopies++
			shape.lastDictCopyAt = d
		}
		shape.copies++
		src = src[size:]
		d += length
	}
	if uint64(d) != n {
		return shape, fmt.Errorf("%d bytes, the block says %d", d, n)
	}
	return shape, nil
}

// blockRoundTrip encodes src against content (nil: no dictionary), checks that
// S2 decodes the block back to src (with s2.MakeDict's dictionary, and with
// s2.NewDict's of its serialized form, as a restored codec does) and that it
// parses as the encoder must make it; and returns the block and its shape.
func blockRoundTrip(t testing.TB, e *dictEncoder, src []byte) ([]byte, blockShape) {
	t.Helper()
	block := e.encode(nil, src)
	shape, err := parseBlock(block, len(e.content))
	if err != nil {
		t.Fatalf("block of %d bytes against %d of dictionary: %v", len(src), len(e.content), err)
	}
	var decoders []func([]byte, []byte) ([]byte, error)
	if len(e.content) == 0 {
		decoders = append(decoders, s2.Decode)
	} else {
		made := s2.MakeDict(e.content, nil)
		if made == nil {
			t.Fatalf("s2.MakeDict refused %d bytes", len(e.content))
		}
		decoders = append(decoders, made.Decode, s2.NewDict(made.Bytes()).Decode)
	}
	for _, decode := range decoders {
		got, err := decode(nil, block)
		if err != nil {
			t.Fatalf("block of %d bytes against %d of dictionary: %v", len(src), len(e.content), err)
		}
		if !bytes.Equal(got, src) {
			t.Fatalf("block of %d bytes against %d of dictionary decodes to other bytes", len(src), len(e.content))
		}
	}
	return block, shape
}

// fullDictionary returns 64 KiB of content: realistic pods, one after another.
func fullDictionary() []byte {
	var content []byte
	for _, r := range corpora()[1].raw {
		if content = append(content, r...); len(content) >= maxDictionaryBytes {
			break
		}
	}
	return content[:maxDictionaryBytes]
}

// Every block decodes with S2 to its input: the corpora's objects, against no
// dictionary, the dictionary a Compressed codec ends with, and a full one;
// short inputs; inputs longer than 64 KiB; random bytes; inputs that repeat
// the dictionary.
func TestCompressedEncoderRoundTrips(t *testing.T) {
	full := fullDictionary()
	fullEnc := newDictEncoder(full, dictBucketBits)
	var short [][]byte
	for n := range 21 {
		short = append(short, corpora()[0].raw[0][:n], randomBytes(n))
	}
	// The corpora (45,000 objects, each encoded by a codec and then three
	// ways) took more than CI's ten minutes under the race detector, which
	// has nothing to find in one goroutine: they run without it.
	for _, c := range corpora() {
		if raceDetector {
			break
		}
		d, _ := finalDictionary(t, c.raw)
		for _, tc := range []struct {
			name string
			e    *dictEncoder
		}{{"none", &noDictionary}, {"final", d.enc}, {"full", fullEnc}} {
			t.Run(c.name+"/"+tc.name, func(t *testing.T) {
				// Every 20th object (1,000 pods, 250 ConfigMaps): the whole
				// corpora under the race detector took CI's ten minutes.
				var raws [][]byte
				for i := 0; i < len(c.raw); i += 20 {
					raws = append(raws, c.raw[i])
				}
				in, out, dictCopies := 0, 0, 0
				for _, raw := range raws {
					block, shape := blockRoundTrip(t, tc.e, raw)
					in, out, dictCopies = in+len(raw), out+len(block), dictCopies+shape.dictCopies
				}
				for _, src := range short {
					blockRoundTrip(t, tc.e, src)
				}
				t.Logf("%d objects: %d bytes to %d, %d copies from the dictionary", len(raws), in, out, dictCopies)
				if tc.e == &noDictionary {
					if dictCopies != 0 || out >= in {
						t.Fatalf("no dictionary: %d bytes to %d, %d copies from the dictionary", in, out, dictCopies)
					}
				} else if dictCopies < len(raws) {
					t.Fatalf("%d copies from the dictionary over %d objects", dictCopies, len(raws))
				}
			})
		}
	}

	t.Run("empty", func(t *testing.T) {
		for _, e := range []*dictEncoder{&noDictionary, fullEnc} {
			if block, _ := blockRoundTrip(t, e, nil); !bytes.Equal(block, []byte{0}) {
				t.Fatalf("empty input: block %x", block)
			}
			if block := e.encode([]byte("head"), nil); string(block) != "head\x00" {
				t.Fatalf("empty input appended: %q", block)
			}
		}
	})

	t.Run("random", func(t *testing.T) {
		for _, n := range []int{16, 100, 1000, 8 << 10, 100 << 10} {
			for _, e := range []*dictEncoder{&noDictionary, fullEnc} {
				block, shape := blockRoundTrip(t, e, randomBytes(n))
				// One literal, or a few where random bytes match by chance.
				if len(block) > n+n/64+8 {
					t.Fatalf("%d random bytes: a block of %d (%d literals, %d copies)", n, len(block), shape.literals, shape.copies)
				}
			}
		}
	})

	t.Run("the dictionary itself", func(t *testing.T) {
		// The whole of it, copied from the dictionary: 64-byte copies of
		// 5 bytes, where the offset is 64 KiB.
		block, shape := blockRoundTrip(t, fullEnc, full)
		if shape.literals != 0 || shape.dictCopies != shape.copies || len(block) > len(full)/12 {
			t.Fatalf("the dictionary against itself: %d bytes, %d literals, %d copies of which %d from the dictionary",
				len(block), shape.literals, shape.copies, shape.dictCopies)
		}
		// Its last 1000 bytes: 16-bit offsets.
		tail := full[len(full)-1000:]
		block, shape = blockRoundTrip(t, fullEnc, tail)
		if shape.literals != 0 || shape.dictCopies != shape.copies || len(block) > 3*1000/64+6 {
			t.Fatalf("the dictionary's last 1000 bytes: %d bytes, %d literals, %d copies of which %d from the dictionary",
				len(block), shape.literals, shape.copies, shape.dictCopies)
		}
	})

	t.Run("longer than 64 KiB", func(t *testing.T) {
		// The dictionary twice and some: copies from the dictionary stop at
		// output position 65535, copies of the input's own bytes take over.
		twice := slices.Concat(full, full, full[:1000])
		block, shape := blockRoundTrip(t, fullEnc, twice)
		if shape.lastDictCopyAt < s2.MaxDictSrcOffset-64 || shape.lastDictCopyAt > s2.MaxDictSrcOffset {
			t.Fatalf("the last copy from the dictionary at %d", shape.lastDictCopyAt)
		}
		if len(block) > len(twice)/12 {
			t.Fatalf("%d bytes to %d", len(twice), len(block))
		}
		// 200 KB of bench pods against realistic pods: copies from the
		// dictionary (none after 65535: parseBlock), and of the pods before.
		var objs []byte
		for _, r := range corpora()[0].raw {
			if objs = append(objs, r...); len(objs) > 200_000 {
				break
			}
		}
		block, shape = blockRoundTrip(t, fullEnc, objs)
		if shape.dictCopies == 0 || len(block) > len(objs)/8 {
			t.Fatalf("200 KB of pods: %d copies from the dictionary, %d bytes to %d", shape.dictCopies, len(objs), len(block))
		}
		// The dictionary's first 5,000 bytes at 65435, after zeros: one
		// copy from the dictionary of at most 100 bytes, then literals
		// (the input has not had them).
		at := s2.MaxDictSrcOffset - 100
		block, shape = blockRoundTrip(t, fullEnc, slices.Concat(make([]byte, at), full[:5000]))
		if shape.dictCopies == 0 || shape.lastDictCopyAt < at || len(block) < 4900 {
			t.Fatalf("at %d: %d copies from the dictionary, the last at %d; %d bytes", at, shape.dictCopies, shape.lastDictCopyAt, len(block))
		}
	})
}

// FuzzCompressedEncoder checks the round trip of any input against any
// dictionary content (of at least S2's 16 bytes, at most 64 KiB; none
// below 16).
func FuzzCompressedEncoder(f *testing.F) {
	pods := corpora()[0].raw
	f.Add([]byte(nil), []byte(nil))
	f.Add([]byte("0123456789abcdef"), []byte("0123456789abcdef0123456789abcdef"))
	f.Add(pods[0], pods[1])
	f.Add(slices.Concat(pods[0], pods[1], pods[2]), slices.Concat(pods[3], pods[0]))
	f.Add(randomBytes(200), slices.Concat(randomBytes(300), pods[1]))
	e := &dictEncoder{}
	f.Fuzz(func(t *testing.T, content, src []byte) {
		content = content[:min(len(content), maxDictionaryBytes)]
		if len(content) < s2.MinDictSize {
			blockRoundTrip(t, &noDictionary, src)
			return
		}
		e.reset(content, dictBucketBits)
		blockRoundTrip(t, e, src)
	})
}

// On each corpus, the encoder compresses against the dictionary a Compressed
// codec ends with to at most 3% more than S2's encoder on the same
// dictionary; with no dictionary, to about S2's.
func TestCompressedEncoderCompressesAsS2(t *testing.T) {
	if raceDetector {
		t.Skip("single-goroutine, over 45,000 objects: run without the race detector")
	}
	for _, c := range corpora() {
		t.Run(c.name, func(t *testing.T) {
			d, z := finalDictionary(t, c.raw)
			var in, own, theirs, ownAlone, theirsAlone int
			for _, raw := range c.raw {
				in += len(raw)
				own += len(d.enc.encode(nil, raw))
				theirs += len(d.s2.Encode(nil, raw))
				ownAlone += len(noDictionary.encode(nil, raw))
				theirsAlone += len(s2.Encode(nil, raw))
			}
			n := float64(len(c.raw))
			t.Logf("%d objects of %.0f bytes, dictionary of %d: %.1f bytes per object (S2: %.1f, %.3f×); no dictionary %.1f (S2: %.1f, %.3f×)",
				len(c.raw), float64(in)/n, d.size, float64(own)/n, float64(theirs)/n, float64(own)/float64(theirs),
				float64(ownAlone)/n, float64(theirsAlone)/n, float64(ownAlone)/float64(theirsAlone))
			st := z.Stats()
			t.Logf("the codec's records: %.1f bytes per object (ratio %.3f), %d dictionaries of %d bytes",
				float64(st.BytesOut)/n, st.Ratio(), st.Dictionaries, st.DictionaryBytes)
			if float64(own) > 1.03*float64(theirs) {
				t.Fatalf("%d bytes against the dictionary, S2 %d: more than 3%% above", own, theirs)
			}
			if float64(ownAlone) > 1.10*float64(theirsAlone) {
				t.Fatalf("%d bytes without a dictionary, S2 %d: more than 10%% above", ownAlone, theirsAlone)
			}
		})
	}
}

// The builder's encoder, extended exemplar by exemplar, is the encoder of the
// dictionary it builds: the table of its content made at once, and the
// content S2 decodes with.
func TestCompressedDictionaryEncoderIsMadeOfItsContent(t *testing.T) {
	for _, c := range corpora() {
		var spread [][]byte
		for i := range 256 {
			spread = append(spread, c.raw[i*len(c.raw)/256])
		}
		first := buildDictionary(1, c.raw[:256], nil)
		for _, d := range []*dictionary{first, buildDictionary(2, spread, first.exemplars)} {
			if !bytes.Equal(d.enc.content, d.s2.Bytes()[len(d.s2.Bytes())-d.size:]) || len(d.enc.content) != d.size {
				t.Fatalf("%s: the encoder's content differs from the dictionary's", c.name)
			}
			if made := newDictEncoder(d.enc.content, dictBucketBits); !slices.Equal(made.buckets, d.enc.buckets) || made.hashed != d.enc.hashed {
				t.Fatalf("%s: the builder's table differs from the content's", c.name)
			}
			if r := d.retired(); r.enc != nil || r.exemplars != nil || !bytes.Equal(r.s2.Bytes(), d.s2.Bytes()) {
				t.Fatalf("%s: retired dictionary keeps its encoder or exemplars, or lost its content", c.name)
			}
		}
	}
}

// A codec restored from a state encodes as the codec it was taken from: the
// current dictionary's encoder is made again, the retired ones have none.
func TestCompressedRestoredCodecEncodesAsTheOriginal(t *testing.T) {
	inner := podCodec(t)
	c, err := NewCompressed(inner, CompressedOptions{SampleObjects: 64})
	must(t, err)
	pods := realisticPods(3000)
	encodeEach(t, c, inner, pods)
	if n := len(*c.dictionaries.Load()); n < 2 {
		t.Fatalf("%d dictionaries, want a rebuild", n)
	}
	restored, err := NewCompressed(inner, CompressedOptions{SampleObjects: 64})
	must(t, err)
	must(t, restored.RestoreState(c.AppendState(nil)))
	dicts := *restored.dictionaries.Load()
	for _, d := range dicts[:len(dicts)-1] {
		if d.enc != nil {
			t.Fatalf("retired dictionary %d has an encoder", d.id)
		}
	}
	cur, orig := restored.current.Load(), c.current.Load()
	if cur.enc == nil || !slices.Equal(cur.enc.buckets, orig.enc.buckets) || !bytes.Equal(cur.enc.content, orig.enc.content) {
		t.Fatal("the restored current dictionary's encoder differs from the original's")
	}
	for _, p := range pods[:50] {
		a, err := c.Encode(p)
		must(t, err)
		b, err := restored.Encode(p)
		must(t, err)
		if !bytes.Equal(a, b) {
			t.Fatalf("pod %s: records of %d and %d bytes", p.Name, len(a), len(b))
		}
	}
}

// Compress gives objects of up to ownEncodeMax bytes to the encoder, longer
// ones to S2's Encode; both decode, and the small ones compress better than
// with S2.
func TestCompressedEncodesSmallObjectsWithTheEncoder(t *testing.T) {
	raws := metadataPods(t, 3000)
	c := mustCompressed(t, rawCodec{})
	for _, r := range raws[:1000] {
		_, err := c.Encode(r)
		must(t, err)
	}
	d := c.current.Load()
	if d == nil {
		t.Fatal("no dictionary made")
	}
	large := corpora()[0].raw[0]
	for _, r := range [][]byte{raws[1500], raws[2999], large} {
		small := len(r) <= ownEncodeMax
		if small != (len(r) < 200) {
			t.Fatalf("an object of %d bytes: want the small ones up to %d, the large one above 200", len(r), ownEncodeMax)
		}
		want := d.s2.Encode(nil, r)
		if small {
			want = d.enc.encode(nil, r)
		}
		rec, err := c.Encode(r)
		must(t, err)
		id, body, err := openRecord(rec)
		must(t, err)
		if id == asIs && small || id != asIs && !bytes.Equal(body, want) {
			t.Fatalf("an object of %d bytes: record of dictionary %d, body %x, want %x", len(r), id, body, want)
		}
		got, err := c.Decode(rec)
		must(t, err)
		if !bytes.Equal(got.([]byte), r) {
			t.Fatalf("an object of %d bytes decodes to another", len(r))
		}
	}
	own, theirs := 0, 0
	for _, r := range raws[1000:] {
		own += len(d.enc.encode(nil, r))
		theirs += len(d.s2.Encode(nil, r))
	}
	t.Logf("%d objects of %d bytes: %.1f bytes per block (S2: %.1f)", 2000, len(raws[1000]), float64(own)/2000, float64(theirs)/2000)
	if own >= theirs {
		t.Fatalf("small objects: %d bytes, S2 %d", own, theirs)
	}
}
