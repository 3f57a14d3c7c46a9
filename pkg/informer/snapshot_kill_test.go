package informer

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// The snapshot writer's atomicity under SIGKILL: a child process (this test
// binary, running TestSnapshotKillHelperWrites) writes generation after
// generation of a snapshot; the parent kills it at a random moment and reads
// what is left.

const (
	killHelperEnv     = "DELTACACHE_SNAPSHOT_KILL_DIR"
	killRecords       = 5000
	killRecordPayload = 1024
)

// killGenerationRecords are the records of generation gen: every record's
// bytes name gen, so a file mixing two generations is detected.
func killGenerationRecords(gen int) []snapshotRecord {
	recs := make([]snapshotRecord, killRecords)
	for i := range recs {
		prefix := fmt.Appendf(nil, "gen-%d;", gen)
		data := bytes.Repeat(prefix, killRecordPayload/len(prefix)+1)[:killRecordPayload]
		recs[i] = snapshotRecord{key: fmt.Sprintf("ns/obj-%d", i), data: data}
	}
	return recs
}

func killHeader(gen int) snapshotHeader {
	cfg := Snapshot{Identity: "kill", Version: "kill"}
	build, _ := cfg.buildHash()
	return snapshotHeader{identity: cfg.identityHash(), build: build, written: time.Now(),
		resourceVersion: strconv.Itoa(gen)}
}

// TestSnapshotKillHelperWrites is the child: it writes generations 1, 2, …
// into $DELTACACHE_SNAPSHOT_KILL_DIR until it is killed. Skipped otherwise.
func TestSnapshotKillHelperWrites(t *testing.T) {
	dir := os.Getenv(killHelperEnv)
	if dir == "" {
		t.Skip("the child process of TestSnapshotSIGKILLMidWriteLeavesACompleteSnapshotOrNone")
	}
	for gen := 1; ; gen++ {
		_, err := writeSnapshotFile(context.Background(), dir, "kill", killHeader(gen), killGenerationRecords(gen), snapshotPace{})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestSnapshotSIGKILLMidWriteLeavesACompleteSnapshotOrNone(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("DELTACACHE_SNAPSHOT_KILL_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (DELTACACHE_SNAPSHOT_KILL_SEED)", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	dir := t.TempDir()
	want := killHeader(0)
	killedMidWrite, complete := 0, 0
	for round := range 6 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSnapshotKillHelperWrites$", "-test.count=1")
		cmd.Env = append(os.Environ(), killHelperEnv+"="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill at a random moment of the child's writing, not of its start (a loaded
		// machine can take longer than any fixed delay to start a test binary): once
		// it has begun a write (a temporary file exists) and, in the first round, once
		// it has finished one, so that some kill leaves a snapshot to check.
		waitForFile(t, cmd, filepath.Join(dir, "kill"+snapshotTempInfix+"*"))
		if round == 0 {
			waitForFile(t, cmd, filepath.Join(dir, "kill"))
		}
		time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		temps, _ := filepath.Glob(filepath.Join(dir, "kill"+snapshotTempInfix+"*"))
		if len(temps) > 0 {
			killedMidWrite++
		}
		removeSnapshotTemps(dir, "kill")
		h, recs, err := readSnapshotFile(dir, "kill", want.identity, want.build)
		if err != nil {
			t.Fatalf("round %d: the snapshot left by a killed writer is unusable: %v", round, err)
		}
		if h == nil {
			continue // killed before its first rename
		}
		complete++
		gen := []byte("gen-" + h.resourceVersion + ";")
		if len(recs) != killRecords {
			t.Fatalf("round %d: %d records, want %d", round, len(recs), killRecords)
		}
		for _, r := range recs {
			if !bytes.HasPrefix(r.data, gen) || len(r.data) != killRecordPayload {
				t.Fatalf("round %d: record %s of generation %s holds %q…", round, r.key, h.resourceVersion, r.data[:16])
			}
		}
		if left, _ := filepath.Glob(filepath.Join(dir, "kill"+snapshotTempInfix+"*")); len(left) != 0 {
			t.Fatalf("round %d: temporary files left after cleanup: %v", round, left)
		}
	}
	t.Logf("%d of 6 kills landed mid-write; %d left a complete snapshot", killedMidWrite, complete)
	if complete == 0 {
		t.Fatal("no kill left a snapshot: the test checked nothing (the writer never finished a write)")
	}
}

// waitForFile waits until a file matches pattern, for at most a minute while the
// child cmd runs.
func waitForFile(t *testing.T, cmd *exec.Cmd, pattern string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if m, _ := filepath.Glob(pattern); len(m) > 0 {
			return
		}
	}
	_ = cmd.Process.Kill()
	t.Fatalf("no file %s after a minute: the child never wrote", pattern)
}
