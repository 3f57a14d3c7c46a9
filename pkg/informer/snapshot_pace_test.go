package informer

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

// A paced write pauses after every chunk of records' bytes, for idle times
// the chunk's duration, and writes the same file as an unpaced one.
func TestSnapshotPacedWritePausesAfterEveryChunk(t *testing.T) {
	dir := t.TempDir()
	recs := killGenerationRecords(1)[:10] // 10 records of 1 KiB data and a short key
	var pauses []time.Duration
	pace := snapshotPace{chunk: 2 * killRecordPayload, idle: 4, sleep: func(_ context.Context, d time.Duration) error {
		pauses = append(pauses, d)
		return nil
	}}
	h := killHeader(1)
	if _, err := writeSnapshotFile(t.Context(), dir, "paced", h, recs, pace); err != nil {
		t.Fatal(err)
	}
	// Each record is 1 KiB of data plus its key: a chunk of 2 KiB ends after
	// every second record.
	if len(pauses) != 5 {
		t.Fatalf("%d pauses for 10 records in chunks of 2 records, want 5", len(pauses))
	}
	for _, d := range pauses {
		if d < 0 {
			t.Fatalf("a negative pause %v", d)
		}
	}
	_, got, err := readSnapshotFile(dir, "paced", h.identity, h.build)
	must(t, err)
	if len(got) != len(recs) {
		t.Fatalf("read %d records, want %d", len(got), len(recs))
	}
	for i := range recs {
		if got[i].key != recs[i].key || string(got[i].data) != string(recs[i].data) {
			t.Fatalf("record %d differs after a paced write", i)
		}
	}
}

// A paced write whose context ends during a pause is abandoned: its error,
// no file, no temporary file left.
func TestSnapshotPacedWriteCancelledInAPauseLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	pace := snapshotPace{chunk: killRecordPayload, idle: 1, sleep: func(ctx context.Context, _ time.Duration) error {
		cancel()
		return ctx.Err()
	}}
	_, err := writeSnapshotFile(ctx, dir, "paced", killHeader(1), killGenerationRecords(1)[:4], pace)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("write cancelled in a pause returned %v, want context.Canceled", err)
	}
	entries, err := os.ReadDir(dir)
	must(t, err)
	if len(entries) != 0 {
		t.Fatalf("%d files left by an abandoned write, want none", len(entries))
	}
}
