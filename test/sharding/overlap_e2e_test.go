//go:build sharding

package sharding

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// stopAll stops the running replicas with SIGTERM (each must exit cleanly), logging
// their state first.
func (r *nsRun) stopAll() {
	for _, m := range r.running() {
		if st, err := m.state(context.Background()); err == nil {
			r.t.Logf("%s before stopping: %v; hand-offs: %d slots acquired, %d released", m.proc.name, st,
				st.acquired, st.released)
		}
		if err := m.proc.stop(30 * time.Second); err != nil {
			r.t.Error(err)
		}
	}
}

// checkNoOverlap: over the whole run, no App was reconciled by two replicas at
// overlapping times.
func (r *nsRun) checkNoOverlap() {
	t := r.t
	records, partial, err := readReconcileLogs(r.logs...)
	if err != nil {
		t.Fatalf("reading the reconcile logs: %v", err)
	}
	per := reconcilesByReplica(records)
	t.Logf("reconcile logs: %d reconciles (%v), %d truncated last lines (a killed replica's)", len(records), per, partial)
	for _, id := range identities {
		if per[id] == 0 {
			t.Errorf("%s logged no reconcile", id)
		}
	}
	overlaps := findOverlaps(records)
	for i, o := range overlaps {
		if i == 10 {
			t.Errorf("... %d overlaps in all", len(overlaps))
			break
		}
		t.Errorf("reconciled by two replicas at once: %v", o)
	}
	if len(overlaps) == 0 {
		t.Logf("no key reconciled by two replicas at overlapping times (%d keys)", len(keysOf(records)))
	}
}

func keysOf(records []reconcileRecord) map[string]bool {
	out := map[string]bool{}
	for _, r := range records {
		out[r.Key] = true
	}
	return out
}

// peakRSS returns VmHWM of a process, in KiB.
func peakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}
