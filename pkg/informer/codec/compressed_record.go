package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// A record is what Compressed stores for one object:
//
//	byte 0        the dictionary: 0 for the inner codec's encoding stored as
//	              it is, n (1–255) for an S2 block compressed against the
//	              codec's dictionary n
//	bytes 1…len-4 the payload: the inner encoding, or its S2 block (which
//	              starts with the inner encoding's length, a uvarint)
//	last 4 bytes  CRC-32C (Castagnoli) of all the bytes before it, little endian
//
// The checksum covers the stored bytes, header included, so a record changed
// in any byte, truncated or extended is refused before it is decompressed; a
// record that passes decompresses, with the dictionary it names, to the
// bytes it was made from (S2 is deterministic and a dictionary never
// changes). Without it a flipped bit in a literal of an S2 block would decode
// to a wrong object: the block format has no check of its own.

// recordOverhead is the bytes a record adds to its payload: the dictionary
// byte and the checksum.
const recordOverhead = 1 + 4

// asIs is the dictionary byte of a record that holds the inner encoding
// uncompressed.
const asIs = 0

// ErrCorrupt is wrapped by the errors of Compressed's Decode, DecodeInto and
// AppendLabels for bytes that are not a record the codec made: a checksum that
// does not match, a record too short, a dictionary the codec does not have, or
// an S2 block that does not decompress. Compressed never decodes such bytes
// into an object.
var ErrCorrupt = errors.New("corrupt compressed record")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// sealRecord appends to dst the record of payload made with dictionary dict
// (asIs: payload is the inner encoding).
func sealRecord(dst []byte, dict byte, payload []byte) []byte {
	start := len(dst)
	dst = append(dst, dict)
	dst = append(dst, payload...)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// openRecord checks data's checksum and returns its dictionary byte and
// payload (a subslice of data).
func openRecord(data []byte) (dict byte, payload []byte, err error) {
	if len(data) < recordOverhead {
		return 0, nil, fmt.Errorf("%w: %d bytes, shorter than a record's header and checksum", ErrCorrupt, len(data))
	}
	body := data[:len(data)-4]
	if got, want := crc32.Checksum(body, castagnoli), binary.LittleEndian.Uint32(data[len(body):]); got != want {
		return 0, nil, fmt.Errorf("%w: checksum %08x, the record says %08x", ErrCorrupt, got, want)
	}
	return body[0], body[1:], nil
}
