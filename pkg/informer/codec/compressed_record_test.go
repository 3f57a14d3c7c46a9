package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/klauspost/compress/s2"
	corev1 "k8s.io/api/core/v1"
)

// sampleRecords returns a codec of pods and two of its records: one stored as
// it is (made before the dictionary) and one compressed.
func sampleRecords(t testing.TB) (c *Compressed, asIsRecord, compressed []byte) {
	t.Helper()
	inner := podCodec(t)
	c = mustCompressed(t, inner)
	for i, p := range benchPods(300) {
		rec, err := c.Encode(p)
		must(t, err)
		switch i {
		case 0:
			asIsRecord = rec
		case 299:
			compressed = rec
		}
	}
	if asIsRecord[0] != asIs || compressed[0] != 1 {
		t.Fatalf("fixture: records of dictionaries %d and %d", asIsRecord[0], compressed[0])
	}
	return c, asIsRecord, compressed
}

// checkCorrupt checks that every read of data fails with ErrCorrupt.
func checkCorrupt(t *testing.T, c *Compressed, what string, data []byte) {
	t.Helper()
	if obj, err := c.Decode(data); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("%s: Decode = %v, %v; want ErrCorrupt", what, obj != nil, err)
	}
	if err := c.DecodeInto(data, &corev1.Pod{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("%s: DecodeInto = %v; want ErrCorrupt", what, err)
	}
	if _, err := c.AppendLabels(nil, data); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("%s: AppendLabels = %v; want ErrCorrupt", what, err)
	}
}

// A record changed in any bit of any byte, cut short at any length, or
// extended is refused with ErrCorrupt, never decoded into an object: the
// checksum covers every byte.
func TestCompressedRefusesCorruptTruncatedAndExtendedRecords(t *testing.T) {
	c, plain, compressed := sampleRecords(t)
	for _, rec := range [][]byte{plain, compressed} {
		for i := range rec {
			for _, bit := range []byte{0x01, 0x10, 0x80} {
				bad := bytes.Clone(rec)
				bad[i] ^= bit
				checkCorrupt(t, c, "a flipped bit", bad)
			}
		}
		for n := range len(rec) {
			checkCorrupt(t, c, "a truncated record", rec[:n])
		}
		checkCorrupt(t, c, "an extended record", append(bytes.Clone(rec), 0))
	}
}

// A record with a valid checksum that names a dictionary the codec does not
// have, or whose S2 block is malformed or claims more bytes than any object
// compressed with its dictionary, is refused with ErrCorrupt.
func TestCompressedRefusesWellSealedRecordsItDidNotMake(t *testing.T) {
	c, _, compressed := sampleRecords(t)
	body := compressed[1 : len(compressed)-4]
	checkCorrupt(t, c, "dictionary 9", sealRecord(nil, 9, body))
	checkCorrupt(t, c, "a block cut short", sealRecord(nil, 1, body[:len(body)/2]))
	huge := binary.AppendUvarint(nil, 1<<30)
	checkCorrupt(t, c, "a block of 1 GiB", sealRecord(nil, 1, append(huge, body[len(huge):]...)))
	checkCorrupt(t, c, "garbage", sealRecord(nil, 1, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}))
	if _, err := s2.Decode(nil, body); err == nil {
		t.Fatal("fixture: the block decodes without its dictionary")
	}
}

// FuzzCompressedDecode checks that no input makes Decode, DecodeInto or
// AppendLabels panic: neither the input as a record (refused by its
// checksum unless it is one), nor the input sealed with a valid checksum,
// which reaches the S2 decoder and the inner decoder with arbitrary bytes.
func FuzzCompressedDecode(f *testing.F) {
	c, plain, compressed := sampleRecords(f)
	for _, seed := range [][]byte{nil, {0}, {1}, plain, compressed, compressed[:len(compressed)/2],
		plain[1 : len(plain)-4], compressed[1 : len(compressed)-4]} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		read := func(rec []byte) {
			if obj, err := c.Decode(rec); (obj == nil) == (err == nil) {
				t.Fatalf("Decode = %v, %v", obj, err)
			}
			_ = c.DecodeInto(rec, &corev1.Pod{})
			_, _ = c.AppendLabels(nil, rec)
		}
		read(data)
		if len(data) > 0 {
			read(sealRecord(nil, data[0]%3, data[1:])) // as it is, dictionary 1, or one the codec lacks
		}
	})
}
