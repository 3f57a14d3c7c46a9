package informer

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The snapshot file, one per informer (format version 3). All integers are
// little-endian; "uvarint" is encoding/binary's.
//
//	magic    "DCSNAP", format version (1 byte), 0 (1 byte)
//	header   identity hash (32 bytes: sha256 of Snapshot.Identity)
//	         build hash (32 bytes: sha256 of Snapshot.Version, or of the executable)
//	         shard hash (32 bytes: sha256 of the shard selector the store was
//	         complete for, all zeros for an informer that is not sharded)
//	         written (int64: Unix nanoseconds)
//	         records (uint64)
//	         resourceVersion (uvarint length, bytes): the store's RV when the
//	         write began; every record is at least as new
//	         codec state (uvarint length, bytes): what a StatefulCodec needs
//	         to decode the records (a compressing codec's dictionaries); empty
//	         for other codecs
//	records  per record: key (uvarint length, bytes), stored bytes (uvarint
//	         length, bytes: the StorageCodec's encoding, after the transform)
//	trailer  CRC-32C (Castagnoli) of every byte before it (uint32)
//
// Records hold no resourceVersion or uid: loading decodes each record anyway
// (the index functions, which are the user's code and not part of the
// identity, are computed from the object), and the codec gives both then. A
// write costs the copy of the stored bytes and no decode.

const (
	snapshotMagic  = "DCSNAP"
	snapshotFormat = 3
	// snapshotPrefix is the magic, format and reserved byte.
	snapshotPrefix = len(snapshotMagic) + 2
	// snapshotFixedHeader is the prefix, the three hashes, written and records.
	snapshotFixedHeader = snapshotPrefix + 32 + 32 + 32 + 8 + 8
	// maxCodecState bounds a header's codec state (a compressing codec's 255
	// dictionaries of 64 KiB would be 16 MiB).
	maxCodecState = 17 << 20
	// snapshotTempInfix marks a file being written (see writeSnapshotFile).
	snapshotTempInfix = ".tmp-"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// snapshotHeader is a snapshot file's header.
type snapshotHeader struct {
	identity, build [32]byte
	// shard is shardHash of the shard selector the records are complete for.
	shard           [32]byte
	written         time.Time
	records         uint64
	resourceVersion string
	// codecState is StatefulCodec.AppendState's, taken after the records were
	// collected; nil for other codecs.
	codecState []byte
}

// snapshotRecord is one stored key and its bytes.
type snapshotRecord struct {
	key  string
	data []byte
}

// Reasons a snapshot file is not used (the "reason" of the start log line).
const (
	discardUnreadable = "unreadable"
	discardTruncated  = "truncated"
	discardChecksum   = "checksum mismatch"
	discardFormat     = "unknown format"
	discardIdentity   = "other informer identity"
	discardShard      = "other shard"
	discardBuild      = "other build"
	discardCorrupt    = "corrupt record"
	discardCodecState = "codec state refused"
	discardRV         = "resourceVersion not an integer"
	discardNoBuild    = "no build identity"
)

// snapshotDiscard is why a snapshot file was not used.
type snapshotDiscard struct {
	reason string
	err    error
}

func (d *snapshotDiscard) Error() string {
	if d.err == nil {
		return "snapshot discarded: " + d.reason
	}
	return "snapshot discarded: " + d.reason + ": " + d.err.Error()
}

func (d *snapshotDiscard) Unwrap() error { return d.err }

// crcWriter passes writes to w and adds them to a CRC.
type crcWriter struct {
	w   io.Writer
	crc hash.Hash32
}

func (c crcWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.crc.Write(p[:n])
	return n, err
}

// snapshotPace bounds the share of a core a write takes from the informer's
// pipeline: after every chunk bytes of records the writer sleeps idle times as
// long as the chunk took, so it runs at most 1/(1+idle) of the time. The zero
// value writes at full speed.
type snapshotPace struct {
	chunk int
	idle  float64
	// sleep waits d or until ctx ends (its error); nil = a timer (tests
	// record the pauses instead).
	sleep func(ctx context.Context, d time.Duration) error
}

// periodicPace paces the writes made at an interval: at most a fifth of the
// time, in chunks of 1 MiB (a write of 70k pods, ~50 MB, takes about a second
// instead of a fifth). A write has no deadline but the next interval, and
// on a machine of few cores an unpaced one takes the CPU the pop loop and the
// handlers need (section B3 of docs/benchmarks.md measures it). The write at
// stop is not paced: it has snapshotStopTimeout.
var periodicPace = snapshotPace{chunk: 1 << 20, idle: 4}

// wait pauses after a chunk that began at began, or returns ctx's error.
func (p snapshotPace) wait(ctx context.Context, began time.Time) error {
	d := time.Duration(float64(time.Since(began)) * p.idle)
	if p.sleep != nil {
		return p.sleep(ctx, d)
	}
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// writeSnapshotFile writes h and recs to dir/name atomically: a temporary
// file in dir (mode 0600; dir is created 0700) is written, synced and
// renamed over name, and dir is synced, so that a crash leaves either the
// previous file or the new one. It returns the bytes written. ctx ending
// mid-write abandons it (the temporary file is removed) with ctx's error.
// pace paces the writing of the records (the zero value: full speed).
func writeSnapshotFile(
	ctx context.Context, dir, name string, h snapshotHeader, recs []snapshotRecord, pace snapshotPace,
) (n int64, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, err
	}
	f, err := os.CreateTemp(dir, name+snapshotTempInfix+"*")
	if err != nil {
		return 0, err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	cw := crcWriter{w: f, crc: crc32.New(castagnoli)}
	bw := bufio.NewWriterSize(cw, 256<<10)
	h.records = uint64(len(recs))
	// A bufio.Writer keeps its first error and returns it from every later
	// call: the writes below are checked by Flush.
	_, _ = bw.Write(encodeSnapshotHeader(h))
	var scratch [binary.MaxVarintLen64]byte
	chunkBegan, chunkBytes := time.Now(), 0
	for i, r := range recs {
		if i%1024 == 0 && ctx.Err() != nil {
			return 0, ctx.Err()
		}
		_, _ = bw.Write(binary.AppendUvarint(scratch[:0], uint64(len(r.key))))
		_, _ = bw.WriteString(r.key)
		_, _ = bw.Write(binary.AppendUvarint(scratch[:0], uint64(len(r.data))))
		_, _ = bw.Write(r.data)
		if chunkBytes += len(r.key) + len(r.data); pace.chunk > 0 && chunkBytes >= pace.chunk {
			if err := pace.wait(ctx, chunkBegan); err != nil {
				return 0, err
			}
			chunkBegan, chunkBytes = time.Now(), 0
		}
	}
	if err := bw.Flush(); err != nil {
		return 0, err
	}
	if _, err := f.Write(binary.LittleEndian.AppendUint32(nil, cw.crc.Sum32())); err != nil {
		return 0, err
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return 0, err
	}
	return st.Size(), syncDir(dir)
}

// encodeSnapshotHeader returns the magic and header of h.
func encodeSnapshotHeader(h snapshotHeader) []byte {
	b := make([]byte, 0, snapshotFixedHeader+2*binary.MaxVarintLen64+len(h.resourceVersion)+len(h.codecState))
	b = append(b, snapshotMagic...)
	b = append(b, snapshotFormat, 0)
	b = append(b, h.identity[:]...)
	b = append(b, h.build[:]...)
	b = append(b, h.shard[:]...)
	b = binary.LittleEndian.AppendUint64(b, uint64(h.written.UnixNano()))
	b = binary.LittleEndian.AppendUint64(b, h.records)
	b = binary.AppendUvarint(b, uint64(len(h.resourceVersion)))
	b = append(b, h.resourceVersion...)
	b = binary.AppendUvarint(b, uint64(len(h.codecState)))
	return append(b, h.codecState...)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }()
	return d.Sync()
}

// removeSnapshotTemps removes what writes of dir/name that never finished
// (the process was killed) left behind.
func removeSnapshotTemps(dir, name string) {
	matches, _ := filepath.Glob(filepath.Join(dir, name+snapshotTempInfix+"*"))
	for _, m := range matches {
		_ = os.Remove(m)
	}
}

// shardHash is what a snapshot's header holds of the shard selector sel: all
// zeros for nil (an informer that is not sharded), else the sha256 of its
// String.
func shardHash(sel *ShardSelector) [32]byte {
	if sel == nil {
		return [32]byte{}
	}
	return sha256.Sum256([]byte("shard:" + sel.String()))
}

// readSnapshotFile reads dir/name, written for identity by build. It
// returns (nil header, nil, nil) when there is no file, else the header and
// records, or a *snapshotDiscard saying why the file cannot be used. The
// whole file is checked (CRC) before any of it is parsed; records are read
// one by one, never the file at once.
func readSnapshotFile(dir, name string, identity, build [32]byte) (*snapshotHeader, []snapshotRecord, error) {
	f, err := os.Open(filepath.Join(dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, &snapshotDiscard{reason: discardUnreadable, err: err}
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, &snapshotDiscard{reason: discardUnreadable, err: err}
	}
	size := st.Size()
	if size < int64(snapshotFixedHeader)+1+4 {
		return nil, nil, &snapshotDiscard{reason: discardTruncated, err: fmt.Errorf("%d bytes", size)}
	}
	if err := checkSnapshotCRC(f, size); err != nil {
		return nil, nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, nil, &snapshotDiscard{reason: discardUnreadable, err: err}
	}
	br := bufio.NewReaderSize(io.LimitReader(f, size-4), 256<<10)
	h, err := readSnapshotHeader(br, identity, build)
	if err != nil {
		return nil, nil, err
	}
	recs, err := readSnapshotRecords(br, h.records, size)
	if err != nil {
		return nil, nil, err
	}
	return h, recs, nil
}

// checkSnapshotCRC compares the CRC of f's first size-4 bytes with its last 4.
func checkSnapshotCRC(f *os.File, size int64) error {
	crc := crc32.New(castagnoli)
	if _, err := io.CopyN(crc, f, size-4); err != nil {
		return &snapshotDiscard{reason: discardUnreadable, err: err}
	}
	var trailer [4]byte
	if _, err := io.ReadFull(f, trailer[:]); err != nil {
		return &snapshotDiscard{reason: discardUnreadable, err: err}
	}
	if got, want := crc.Sum32(), binary.LittleEndian.Uint32(trailer[:]); got != want {
		return &snapshotDiscard{reason: discardChecksum, err: fmt.Errorf("computed %08x, file says %08x", got, want)}
	}
	return nil
}

// readSnapshotHeader reads and checks the magic and header.
func readSnapshotHeader(br *bufio.Reader, identity, build [32]byte) (*snapshotHeader, error) {
	fixed := make([]byte, snapshotFixedHeader)
	if _, err := io.ReadFull(br, fixed); err != nil {
		return nil, &snapshotDiscard{reason: discardTruncated, err: err}
	}
	if !bytes.Equal(fixed[:len(snapshotMagic)], []byte(snapshotMagic)) || fixed[len(snapshotMagic)] != snapshotFormat {
		return nil, &snapshotDiscard{reason: discardFormat,
			err: fmt.Errorf("magic %q, format %d", fixed[:len(snapshotMagic)], fixed[len(snapshotMagic)])}
	}
	h := &snapshotHeader{}
	rest := fixed[snapshotPrefix:]
	copy(h.identity[:], rest[:32])
	copy(h.build[:], rest[32:64])
	copy(h.shard[:], rest[64:96])
	h.written = time.Unix(0, int64(binary.LittleEndian.Uint64(rest[96:104])))
	h.records = binary.LittleEndian.Uint64(rest[104:112])
	if h.identity != identity {
		return nil, &snapshotDiscard{reason: discardIdentity}
	}
	if h.build != build {
		return nil, &snapshotDiscard{reason: discardBuild}
	}
	rv, err := readSnapshotBytes(br, 1<<10)
	if err != nil {
		return nil, err
	}
	h.resourceVersion = string(rv)
	if _, ok := parseRV(h.resourceVersion); !ok {
		return nil, &snapshotDiscard{reason: discardRV, err: fmt.Errorf("%q", h.resourceVersion)}
	}
	// A state is a few dictionaries of at most 64 KiB each.
	if h.codecState, err = readSnapshotBytes(br, maxCodecState); err != nil {
		return nil, err
	}
	if len(h.codecState) == 0 {
		h.codecState = nil
	}
	return h, nil
}

// readSnapshotRecords reads n records; size (the file's) bounds every length.
func readSnapshotRecords(br *bufio.Reader, n uint64, size int64) ([]snapshotRecord, error) {
	if n > uint64(size) {
		return nil, &snapshotDiscard{reason: discardCorrupt, err: fmt.Errorf("%d records in %d bytes", n, size)}
	}
	recs := make([]snapshotRecord, 0, n)
	for range n {
		key, err := readSnapshotBytes(br, size)
		if err != nil {
			return nil, err
		}
		data, err := readSnapshotBytes(br, size)
		if err != nil {
			return nil, err
		}
		recs = append(recs, snapshotRecord{key: string(key), data: data})
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return nil, &snapshotDiscard{reason: discardCorrupt, err: errors.New("bytes after the last record")}
	}
	return recs, nil
}

// readSnapshotBytes reads a uvarint length (at most limit) and that many bytes.
func readSnapshotBytes(br *bufio.Reader, limit int64) ([]byte, error) {
	n, err := binary.ReadUvarint(br)
	if err != nil {
		return nil, &snapshotDiscard{reason: discardTruncated, err: err}
	}
	if n > uint64(limit) {
		return nil, &snapshotDiscard{reason: discardCorrupt, err: fmt.Errorf("length %d", n)}
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(br, b); err != nil {
		return nil, &snapshotDiscard{reason: discardTruncated, err: err}
	}
	return b, nil
}

// snapshotFileName returns name with every character outside [A-Za-z0-9._-]
// replaced by '_' ("" = "informer").
func snapshotFileName(name string) string {
	if name == "" {
		return "informer"
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		}
		return '_'
	}, name)
}
