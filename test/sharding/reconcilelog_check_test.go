package sharding

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindOverlapsReportsAKeyReconciledByTwoReplicasAtOnce(t *testing.T) {
	log := `{"replica":"replica-a","key":"ns-1/app","start":"2026-01-01T00:00:00.000Z","end":"2026-01-01T00:00:00.100Z"}
{"replica":"replica-b","key":"ns-1/app","start":"2026-01-01T00:00:00.050Z","end":"2026-01-01T00:00:00.150Z"}
{"replica":"replica-b","key":"ns-2/app","start":"2026-01-01T00:00:00.050Z","end":"2026-01-01T00:00:00.150Z"}
`
	recs, partial, err := parseReconcileLog(strings.NewReader(log))
	if err != nil || partial != 0 || len(recs) != 3 {
		t.Fatalf("parse = %d records, %d partial, %v; want 3, 0, nil", len(recs), partial, err)
	}
	got := findOverlaps(recs)
	if len(got) != 1 || got[0].Key != "ns-1/app" || got[0].A.Replica != "replica-a" || got[0].B.Replica != "replica-b" {
		t.Fatalf("overlaps = %v, want ns-1/app between replica-a and replica-b", got)
	}
	t.Log(got[0])
}

func TestFindOverlapsCatchesAnIntervalInsideALongOne(t *testing.T) {
	// a's long reconcile spans b's and c's; c starts after b ended.
	log := `{"replica":"a","key":"k","start":"2026-01-01T00:00:00Z","end":"2026-01-01T00:00:10Z"}
{"replica":"b","key":"k","start":"2026-01-01T00:00:01Z","end":"2026-01-01T00:00:02Z"}
{"replica":"c","key":"k","start":"2026-01-01T00:00:03Z","end":"2026-01-01T00:00:04Z"}
`
	recs, _, err := parseReconcileLog(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if got := findOverlaps(recs); len(got) != 2 {
		t.Fatalf("overlaps = %v, want a–b and a–c", got)
	}
}

func TestFindOverlapsCountsTouchingIntervalsAndIgnoresOneReplicasOwn(t *testing.T) {
	touching := `{"replica":"a","key":"k","start":"2026-01-01T00:00:00Z","end":"2026-01-01T00:00:01Z"}
{"replica":"b","key":"k","start":"2026-01-01T00:00:01Z","end":"2026-01-01T00:00:02Z"}
`
	recs, _, _ := parseReconcileLog(strings.NewReader(touching))
	if got := findOverlaps(recs); len(got) != 1 {
		t.Fatalf("intervals sharing an instant: overlaps = %v, want 1", got)
	}
	apart := `{"replica":"a","key":"k","start":"2026-01-01T00:00:00Z","end":"2026-01-01T00:00:01Z"}
{"replica":"a","key":"k","start":"2026-01-01T00:00:00.5Z","end":"2026-01-01T00:00:01.5Z"}
{"replica":"b","key":"k","start":"2026-01-01T00:00:01.600Z","end":"2026-01-01T00:00:02Z"}
{"replica":"b","key":"other","start":"2026-01-01T00:00:00Z","end":"2026-01-01T00:00:02Z"}
`
	recs, _, _ = parseReconcileLog(strings.NewReader(apart))
	if got := findOverlaps(recs); len(got) != 0 {
		t.Fatalf("overlaps = %v, want none", got)
	}
	if n := reconcilesByReplica(recs); n["a"] != 2 || n["b"] != 2 {
		t.Fatalf("reconcilesByReplica = %v", n)
	}
}

func TestParseReconcileLogSkipsATruncatedLastLineOnly(t *testing.T) {
	log := `{"replica":"a","key":"k","start":"2026-01-01T00:00:00Z","end":"2026-01-01T00:00:01Z"}
{"replica":"a","key":"k","sta`
	recs, partial, err := parseReconcileLog(strings.NewReader(log))
	if err != nil || len(recs) != 1 || partial != 1 {
		t.Fatalf("parse = %d records, %d partial, %v; want 1, 1, nil", len(recs), partial, err)
	}
	for name, bad := range map[string]string{
		"garbage":    "not json\n",
		"no key":     `{"replica":"a","start":"2026-01-01T00:00:00Z","end":"2026-01-01T00:00:01Z"}` + "\n",
		"no end":     `{"replica":"a","key":"k","start":"2026-01-01T00:00:00Z"}` + "\n",
		"backwards":  `{"replica":"a","key":"k","start":"2026-01-01T00:00:02Z","end":"2026-01-01T00:00:01Z"}` + "\n",
		"bad middle": "x\n" + `{"replica":"a","key":"k","start":"2026-01-01T00:00:00Z","end":"2026-01-01T00:00:01Z"}` + "\n",
	} {
		if _, _, err := parseReconcileLog(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: parse succeeded, want an error", name)
		}
	}
}

func TestReadReconcileLogsJoinsFilesAndFailsOnAMissingOne(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	if err := os.WriteFile(a, []byte(`{"replica":"a","key":"k","start":"2026-01-01T00:00:00Z","end":"2026-01-01T00:00:02Z"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte(`{"replica":"b","key":"k","start":"2026-01-01T00:00:01Z","end":"2026-01-01T00:00:03Z"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	recs, _, err := readReconcileLogs(a, b)
	if err != nil || len(recs) != 2 {
		t.Fatalf("readReconcileLogs = %d, %v", len(recs), err)
	}
	if got := findOverlaps(recs); len(got) != 1 {
		t.Fatalf("overlaps across files = %v, want 1", got)
	}
	if _, _, err := readReconcileLogs(a, filepath.Join(dir, "missing")); err == nil {
		t.Fatal("a missing log: no error")
	}
}
