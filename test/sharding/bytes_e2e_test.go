//go:build sharding

package sharding

import (
	"context"
	"fmt"
	"path/filepath"
	"time"
)

// compareBytes starts one unsharded manager on the same objects and compares what each
// replica read from the API server during its initial sync with what it reads. With
// the ShardedListAndWatch gate the server sends each replica its share only (≤ 0.5×
// asserted, about a third expected); without it every replica receives everything and
// drops the rest (about 1×: memory shrinks, traffic does not).
func (r *nsRun) compareBytes() {
	t := r.t
	ref := startManager(t, r.cp, r.dir, "unsharded", "", filepath.Join(r.dir, "unsharded.reconcile.jsonl"))
	var st managerState
	took := eventually(t, 3*time.Minute, "the unsharded manager holds every pod and App", func() error {
		var err error
		if st, err = ref.state(context.Background()); err != nil {
			return err
		}
		if !st.ready || st.pods != totalPods || st.apps != namespaces {
			return fmt.Errorf("unsharded: %v", st)
		}
		return nil
	})
	refRSS, _ := peakRSS(ref.proc.cmd.Process.Pid)
	if err := ref.proc.stop(30 * time.Second); err != nil {
		t.Error(err)
	}
	t.Logf("unsharded manager: synced %d pods in %v, received %.0f bytes (%.1f MiB), peak RSS %.1f MiB",
		st.pods, took.Round(time.Millisecond), st.receivedBytes, st.receivedBytes/(1<<20), float64(refRSS)/1024)
	if !st.hasBytes || st.receivedBytes <= 0 {
		t.Fatalf("the unsharded manager reports no received bytes: %v", st)
	}
	for _, id := range identities {
		ratio := r.bytes[id] / st.receivedBytes
		t.Logf("bytes (ShardedListAndWatch=%v): %s received %.0f bytes (%.1f MiB) at its initial sync = %.3f× the unsharded manager's; peak RSS at its initial sync %.1f MiB (%.2f×)",
			r.cp.gate, id, r.bytes[id], r.bytes[id]/(1<<20), ratio, float64(r.rss[id])/1024,
			float64(r.rss[id])/float64(max(refRSS, 1)))
		if r.cp.gate && ratio > 0.5 {
			t.Errorf("%s received %.3f× the unsharded manager's bytes with the server filtering, want ≤ 0.5×", id, ratio)
		}
		if !r.cp.gate && ratio < 0.5 {
			t.Errorf("%s received %.3f× the unsharded manager's bytes without the gate: it cannot filter on the client what it never received; is the measure right?", id, ratio)
		}
	}
}
