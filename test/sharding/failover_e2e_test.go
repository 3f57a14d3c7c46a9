//go:build sharding

package sharding

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	demov1alpha1 "github.com/deltacache/deltacache/api/v1alpha1"
)

// failover: replica-c is SIGKILLed; every App is touched at once; the two others must
// serve its namespaces (every App converged to its new generation) within the Lease
// duration plus one sync.
func (r *nsRun) failover() {
	t := r.t
	victim := r.replicas["replica-c"]
	if err := victim.proc.kill(); err != nil {
		t.Fatalf("killing replica-c: %v", err)
	}
	killed := time.Now()
	gens, err := touchApps(context.Background(), r.cp.client, r.namespaces, 2)
	if err != nil {
		t.Fatalf("touching the Apps: %v", err)
	}
	touched := time.Since(killed)
	// The takeover is timed at the start of the check that found every App
	// converged (the check itself lists every App: its duration is the
	// test's, not the failover's); the check runs every pollInterval, so the
	// bound below allows one interval of observation.
	var checked time.Time
	eventually(t, leaseDuration+r.syncTime+time.Minute, "the Apps converge after replica-c was killed", func() error {
		checked = time.Now()
		return convergedErr(context.Background(), r.cp.client, namespaces, podsPerNS, gens)
	})
	takeover := checked.Sub(killed)
	st, _ := r.awaitSplit("replica-a and replica-b serve every slot", time.Minute)
	slotsTaken := time.Since(killed)
	t.Logf("failover: replica-c SIGKILLed; %d Apps touched in %v; all converged %v after the kill "+
		"(bound: Lease %v + one ring round %v + one sync %v + one poll %v = %v); the two others hold every slot and pod %v after the kill",
		namespaces, touched.Round(time.Millisecond), takeover.Round(time.Millisecond), leaseDuration, renewInterval,
		r.syncTime.Round(time.Millisecond), pollInterval,
		(leaseDuration + renewInterval + r.syncTime + pollInterval).Round(time.Millisecond),
		slotsTaken.Round(time.Millisecond))
	if bound := leaseDuration + renewInterval + r.syncTime + pollInterval; takeover > bound {
		t.Errorf("the killed replica's Apps converged %v after the kill, want within %v", takeover, bound)
	}
	if takeover < leaseDuration/2 {
		t.Errorf("every App converged %v after the kill, before replica-c's Lease could expire: "+
			"were its namespaces served by two replicas?", takeover)
	}
	r.checkBalanceOf("after the kill", st, totalPods)
}

// checkBalanceOf logs the pods per running replica (the two survivors do not split
// evenly: their shares are what Assign gives two members).
func (r *nsRun) checkBalanceOf(what string, st map[string]managerState, total int) {
	counts := map[string]int{}
	for name, s := range st {
		counts[name] = s.pods
	}
	report, err := shares(counts, total, 1) // only the sum is asserted here
	r.t.Logf("%s: pods per replica: %s", what, report)
	if err != nil {
		r.t.Errorf("%s: %v", what, err)
	}
}

// rejoin: replica-c is started again while Apps are being changed (seeded); the three
// must be back to a third each ±15 %, with replica-c serving slots again, and every
// App must converge.
func (r *nsRun) rejoin(seed int64) {
	t := r.t
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	ctx, stopChurn := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var churned int
	wg.Go(func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			app := &demov1alpha1.App{}
			app.Namespace, app.Name = r.namespaces[rng.IntN(len(r.namespaces))], appName
			patch := client.RawPatch("application/merge-patch+json",
				fmt.Appendf(nil, `{"spec":{"minReady":%d}}`, 3+rng.IntN(5)))
			if r.cp.client.Patch(context.Background(), app, patch) == nil {
				churned++
			}
		}
	})
	start := time.Now()
	r.start("replica-c")
	st, took := r.awaitSplit("replica-c is back and the three split the namespaces", 3*time.Minute)
	stopChurn()
	wg.Wait()
	t.Logf("rejoin: replica-c restarted; the three hold their shares again %v after its start (%d App changes meanwhile)",
		took.Round(time.Millisecond), churned)
	for _, id := range identities {
		s := st[r.replicas[id].proc.name]
		t.Logf("  %s: %d pods, %d Apps, %d slots", id, s.pods, s.apps, s.serving)
	}
	r.checkBalance("after the rejoin", st)
	gens, err := touchApps(context.Background(), r.cp.client, r.namespaces, 9)
	if err != nil {
		t.Fatal(err)
	}
	conv := eventually(t, 2*time.Minute, "every App converges after the rejoin", func() error {
		return convergedErr(context.Background(), r.cp.client, namespaces, podsPerNS, gens)
	})
	t.Logf("rejoin: all Apps touched again converged in %v; %v after replica-c's start",
		conv.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}
