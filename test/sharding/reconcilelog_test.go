package sharding

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// reconcileRecord is one line of a manager's --reconcile-log: one App reconcile.
type reconcileRecord struct {
	Replica string    `json:"replica"`
	Key     string    `json:"key"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
}

// overlap is a key reconciled by two replicas at overlapping intervals.
type overlap struct {
	Key  string
	A, B reconcileRecord
}

func (o overlap) String() string {
	return fmt.Sprintf("%s: %s [%s, %s] overlaps %s [%s, %s]", o.Key,
		o.A.Replica, o.A.Start.Format(time.RFC3339Nano), o.A.End.Format(time.RFC3339Nano),
		o.B.Replica, o.B.Start.Format(time.RFC3339Nano), o.B.End.Format(time.RFC3339Nano))
}

// parseReconcileLog reads the records of one log. A last line without its newline is
// left out and counted in partial (a SIGKILLed process may leave one); any other
// unreadable line, or a record without replica, key or times, or ending before it
// starts, is an error.
func parseReconcileLog(r io.Reader) (records []reconcileRecord, partial int, err error) {
	br := bufio.NewReader(r)
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			if len(bytes.TrimSpace(line)) > 0 {
				partial++
			}
			return records, partial, nil
		}
		if err != nil {
			return nil, 0, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var rec reconcileRecord
		if err := json.Unmarshal(line, &rec); err != nil {
			return nil, 0, fmt.Errorf("line %d: %w: %q", lineNo, err, strings.TrimSpace(string(line)))
		}
		switch {
		case rec.Replica == "" || rec.Key == "":
			return nil, 0, fmt.Errorf("line %d: no replica or key: %q", lineNo, strings.TrimSpace(string(line)))
		case rec.Start.IsZero() || rec.End.IsZero():
			return nil, 0, fmt.Errorf("line %d: no start or end: %q", lineNo, strings.TrimSpace(string(line)))
		case rec.End.Before(rec.Start):
			return nil, 0, fmt.Errorf("line %d: ends before it starts: %q", lineNo, strings.TrimSpace(string(line)))
		}
		records = append(records, rec)
	}
}

// readReconcileLogs parses the files at paths (a missing file is an error: every
// replica reconciles something).
func readReconcileLogs(paths ...string) (records []reconcileRecord, partial int, err error) {
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, 0, err
		}
		recs, part, err := parseReconcileLog(f)
		_ = f.Close()
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", p, err)
		}
		records = append(records, recs...)
		partial += part
	}
	return records, partial, nil
}

// findOverlaps returns every pair of records of one key, from different replicas, whose
// closed intervals [Start, End] intersect. Records of one replica are not compared
// with each other (a controller never runs one key twice at once; a restarted replica
// keeps its identity and starts after its previous run ended).
func findOverlaps(records []reconcileRecord) []overlap {
	byKey := map[string][]reconcileRecord{}
	for _, r := range records {
		byKey[r.Key] = append(byKey[r.Key], r)
	}
	var out []overlap
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		recs := byKey[k]
		slices.SortFunc(recs, func(a, b reconcileRecord) int { return a.Start.Compare(b.Start) })
		// Sweep by start: every earlier record still open at r.Start overlaps r.
		var open []reconcileRecord
		for _, r := range recs {
			kept := open[:0]
			for _, o := range open {
				if !o.End.Before(r.Start) {
					kept = append(kept, o)
					if o.Replica != r.Replica {
						out = append(out, overlap{Key: k, A: o, B: r})
					}
				}
			}
			open = append(kept, r)
		}
	}
	return out
}

// reconcilesByReplica counts the records of each replica.
func reconcilesByReplica(records []reconcileRecord) map[string]int {
	out := map[string]int{}
	for _, r := range records {
		out[r.Replica]++
	}
	return out
}
