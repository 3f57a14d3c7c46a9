package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/klauspost/compress/s2"
)

// A Compressed codec's records decode only with the dictionaries it made, so a
// snapshot of the records (pkg/informer's snapshots) carries them too: State
// before the records are written, RestoreState into the new codec of the
// informer that loads them, before it decodes or encodes anything.
//
// The state is:
//
//	byte 0     stateFormat
//	uvarint    the number of dictionaries n, then for each, in the order made:
//	  byte     its id (1…n)
//	  uvarint  the longest inner encoding compressed with it (Decode's bound)
//	  uvarint  length, bytes: its S2 dictionary (s2.Dict.Bytes)
//
// A dictionary is at most 64 KiB and a codec makes at most MaxDictionaries.

// stateFormat is the first byte of a state; another value is refused.
const stateFormat = 1

// errStateAfterUse is RestoreState's error for a codec that has encoded or
// holds dictionaries already.
var errStateAfterUse = errors.New("compressed codec: state restored into a codec already in use")

// AppendState appends to dst what a new Compressed codec of the same inner
// codec needs to decode every record this one has returned so far: its
// dictionaries (none before the first is made). Safe to call while records
// are encoded and decoded; a record returned after the call may name a
// dictionary made after it.
func (c *Compressed) AppendState(dst []byte) []byte {
	dicts := *c.dictionaries.Load()
	dst = append(dst, stateFormat)
	dst = binary.AppendUvarint(dst, uint64(len(dicts)))
	for _, d := range dicts {
		dst = append(dst, d.id)
		dst = binary.AppendUvarint(dst, uint64(d.maxLen.Load()))
		b := d.s2.Bytes()
		dst = binary.AppendUvarint(dst, uint64(len(b)))
		dst = append(dst, b...)
	}
	return dst
}

// RestoreState gives the codec the dictionaries of state (made by
// AppendState), so that the records they were returned with decode; the last
// one becomes the current dictionary, which encodes compress against, and the
// policy goes on from there (no first dictionary is sampled; a rebuild comes
// when compression falls below its bound, as after a build). It must be
// called before the codec's first Encode: a codec in use returns an error. A
// state that is not one AppendState made returns an error wrapping
// ErrCorrupt, and the codec is left as it was.
func (c *Compressed) RestoreState(state []byte) error {
	dicts, err := parseState(state, c.policy.maxDictionaries)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(*c.dictionaries.Load()) > 0 || c.policy.encodes > 0 {
		return errStateAfterUse
	}
	if len(dicts) == 0 {
		return nil
	}
	for i, d := range dicts[:len(dicts)-1] {
		dicts[i] = d.retired()
	}
	c.dictionaries.Store(&dicts)
	c.current.Store(dicts[len(dicts)-1])
	c.policy.restored(len(dicts))
	return nil
}

// parseState returns the dictionaries of state, at most max of them, the last
// one with its encoder.
func parseState(state []byte, max int) ([]*dictionary, error) {
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("%w: state: %s", ErrCorrupt, fmt.Sprintf(format, args...))
	}
	if len(state) == 0 || state[0] != stateFormat {
		return nil, corrupt("not a state of format %d", stateFormat)
	}
	rest := state[1:]
	n, k := binary.Uvarint(rest)
	if k <= 0 || n > uint64(max) {
		return nil, corrupt("%d dictionaries, at most %d", n, max)
	}
	rest = rest[k:]
	dicts := make([]*dictionary, 0, n)
	for i := range n {
		if len(rest) < 1 || rest[0] != byte(i+1) {
			return nil, corrupt("dictionary %d is not numbered %d", i+1, i+1)
		}
		rest = rest[1:]
		maxLen, k := binary.Uvarint(rest)
		if k <= 0 || maxLen > 1<<31 {
			return nil, corrupt("dictionary %d: bound", i+1)
		}
		rest = rest[k:]
		size, k := binary.Uvarint(rest)
		if k <= 0 || size > uint64(len(rest)-k) {
			return nil, corrupt("dictionary %d: %d bytes", i+1, size)
		}
		rest = rest[k:]
		// A copy, with the 16 bytes S2 wants after the content: the s2.Dict
		// keeps it (and the encoder reads the same bytes).
		b := append(make([]byte, 0, size+16), rest[:size]...)
		sd := s2.NewDict(b)
		if sd == nil {
			return nil, corrupt("dictionary %d: S2 refused it", i+1)
		}
		rest = rest[size:]
		d := &dictionary{id: byte(i + 1), s2: sd, size: int(size), maxLen: new(atomic.Int64)} // its content and the repeat's uvarint
		d.maxLen.Store(int64(maxLen))
		if i == n-1 {
			_, k := binary.Uvarint(b) // the repeat, which NewDict read
			d.enc = newDictEncoder(b[k:], dictBucketBits)
		}
		dicts = append(dicts, d)
	}
	if len(rest) != 0 {
		return nil, corrupt("%d bytes after the last dictionary", len(rest))
	}
	return dicts, nil
}
