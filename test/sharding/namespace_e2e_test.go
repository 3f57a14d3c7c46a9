//go:build sharding

package sharding

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/deltacache/deltacache/pkg/shard"
)

// The namespace-sharding workload: one App per namespace selecting its pods.
const (
	namespaces   = 300
	podsPerNS    = 100
	totalPods    = namespaces * podsPerNS
	balanceRange = 0.15
)

var identities = []string{"replica-a", "replica-b", "replica-c"}

// nsRun is one run of the namespace-sharding scenario on one control plane.
type nsRun struct {
	t          *testing.T
	cp         *controlPlane
	dir        string
	namespaces []string
	replicas   map[string]*manager // by identity: the running one
	logs       []string            // every --reconcile-log written, killed replicas' included
	syncTime   time.Duration       // start of the three to split and converged
	bytes      map[string]float64  // received bytes per replica right after the initial sync
	rss        map[string]int64    // peak RSS (KiB) per replica at its initial sync
}

func newNSRun(t *testing.T, cp *controlPlane) *nsRun {
	r := &nsRun{t: t, cp: cp, dir: t.TempDir(), replicas: map[string]*manager{}, bytes: map[string]float64{},
		rss: map[string]int64{}}
	for i := range namespaces {
		r.namespaces = append(r.namespaces, namespaceName(i))
	}
	return r
}

// seed creates the namespaces (and the Leases' one), pods and Apps.
func (r *nsRun) seed() {
	t := r.t
	cs := clientset(t, r.cp.cfg)
	seedTimed(t, "namespaces", namespaces+1, func() error {
		return createNamespaces(cs, append([]string{leaseNamespace}, r.namespaces...))
	})
	seedTimed(t, "pods", totalPods, func() error { return createPods(cs, r.namespaces, podsPerNS) })
	seedTimed(t, "Apps", namespaces, func() error { return createApps(r.cp, r.namespaces) })
}

// start starts the replica of identity, with a fresh reconcile log.
func (r *nsRun) start(identity string) *manager {
	n := len(r.logs)
	log := filepath.Join(r.dir, fmt.Sprintf("%s-%d.reconcile.jsonl", identity, n))
	m := startManager(r.t, r.cp, r.dir, fmt.Sprintf("%s-%d", identity, n), identity, log)
	r.replicas[identity] = m
	r.logs = append(r.logs, log)
	return m
}

func (r *nsRun) running() []*manager {
	var out []*manager
	for _, id := range identities {
		if m, ok := r.replicas[id]; ok && m.proc.running() {
			out = append(out, m)
		}
	}
	return out
}

// splitErr is nil once the running replicas are ready, see one another as the ring's
// members, serve every slot between them (each some), and hold every pod and App once.
func splitErr(ctx context.Context, ms []*manager) (map[string]managerState, error) {
	st, err := states(ctx, ms)
	if err != nil {
		return nil, err
	}
	slots, pods, apps := 0, 0, 0
	for name, s := range st {
		switch {
		case !s.ready:
			return st, fmt.Errorf("%s not ready: %v", name, s)
		case s.members != len(ms):
			return st, fmt.Errorf("%s sees %d members, want %d", name, s.members, len(ms))
		case s.serving == 0:
			return st, fmt.Errorf("%s serves no slot", name)
		}
		slots += s.serving
		pods += s.pods
		apps += s.apps
	}
	switch {
	case slots != shard.NumSlots:
		return st, fmt.Errorf("the replicas serve %d slots together, want %d: %v", slots, shard.NumSlots, st)
	case pods != totalPods || apps != namespaces:
		return st, fmt.Errorf("the replicas hold %d pods and %d Apps together, want %d and %d: %v",
			pods, apps, totalPods, namespaces, st)
	}
	return st, nil
}

// awaitSplit waits for splitErr to be nil and returns the states.
func (r *nsRun) awaitSplit(what string, timeout time.Duration) (map[string]managerState, time.Duration) {
	var st map[string]managerState
	took := eventually(r.t, timeout, what, func() error {
		var err error
		st, err = splitErr(context.Background(), r.running())
		return err
	})
	return st, took
}

// checkBalance asserts that each running replica holds a third of the pods ±15 %.
func (r *nsRun) checkBalance(what string, st map[string]managerState) {
	counts := map[string]int{}
	for name, s := range st {
		counts[name] = s.pods
	}
	report, err := shares(counts, totalPods, balanceRange)
	r.t.Logf("%s: pods per replica: %s", what, report)
	if err != nil {
		r.t.Errorf("%s: %v", what, err)
	}
}

// testNamespaceSharding runs the scenario's phases in order.
func testNamespaceSharding(t *testing.T, cp *controlPlane) {
	// Build (or find) the manager first: the Leases announced below expire after
	// leaseDuration, shorter than a build.
	requireFlags(t, managerBinary(t), managerFlags...)
	r := newNSRun(t, cp)
	r.seed()
	r.initialSync()
	r.failover()
	r.rejoin(seed(t))
	r.stopAll()
	r.checkNoOverlap()
	r.compareBytes()
}

// initialSync: the three replicas split the pods and every App converges.
func (r *nsRun) initialSync() {
	t := r.t
	announceMembers(t, r.cp, identities)
	start := time.Now()
	for _, id := range identities {
		r.start(id)
	}
	st, took := r.awaitSplit("three replicas split the namespaces", 3*time.Minute)
	t.Logf("initial sync: the three replicas hold their shares %v after start", took.Round(time.Millisecond))
	for _, id := range identities {
		s := st[r.replicas[id].proc.name]
		t.Logf("  %s: %d pods, %d Apps, %d of %d slots; Pod informer: %d list requests, %d pods dropped on the client",
			id, s.pods, s.apps, s.serving, shard.NumSlots, s.podLists, s.podFiltered)
		r.bytes[id] = s.receivedBytes
		if !s.hasBytes {
			t.Errorf("%s exports no deltacache_apiserver_received_bytes_total", id)
		}
	}
	r.checkBalance("initial split", st)
	conv := eventually(t, 3*time.Minute, "every App shows its pods", func() error {
		return convergedErr(context.Background(), r.cp.client, namespaces, podsPerNS, nil)
	})
	r.syncTime = time.Since(start)
	for _, id := range identities {
		if kib, err := peakRSS(r.replicas[id].proc.cmd.Process.Pid); err == nil {
			r.rss[id] = kib
		}
	}
	t.Logf("initial sync: all %d Apps converged (status.pods=%d) %v after start (%v after the split)",
		namespaces, podsPerNS, r.syncTime.Round(time.Millisecond), conv.Round(time.Millisecond))
}

// seed returns the seed of the randomized parts: $SHARDING_SEED, or the clock.
func seed(t *testing.T) int64 {
	s := time.Now().UnixNano()
	if v := os.Getenv("SHARDING_SEED"); v != "" {
		if _, err := fmt.Sscan(v, &s); err != nil {
			t.Fatalf("SHARDING_SEED=%q: %v", v, err)
		}
	}
	t.Logf("seed %d (SHARDING_SEED=%d replays it)", s, s)
	return s
}
