/*
Copyright 2026.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/deltacache/deltacache/pkg/shard"
)

// shardLeaseNamespace is where section E's rings keep their Leases.
const shardLeaseNamespace = "default"

// shardLeaseDuration is the announced Leases' duration: pkg/shard's default, which the
// replicas use; the replicas renew them from their first round.
const shardLeaseDuration = shard.DefaultLeaseDuration

// ShardIdentities returns the identities of a ring of n replicas: replica-0 … replica-(n-1).
func ShardIdentities(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("replica-%d", i)
	}
	return ids
}

// RingLeases returns, for each identity, the Lease its replica writes on its first round
// of ring in namespace, claiming no slot and renewed at now: written before the replicas
// start, they make every replica see the whole ring from its first round, so that none
// claims every slot and lists every pod alone before the others join.
func RingLeases(namespace, ring string, identities []string, now time.Time) []*coordinationv1.Lease {
	at := metav1.NewMicroTime(now)
	out := make([]*coordinationv1.Lease, 0, len(identities))
	for _, id := range identities {
		out = append(out, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: ring + "-" + id,
				Labels:      map[string]string{shard.RingLabel: ring},
				Annotations: map[string]string{shard.SlotsAnnotation: ""}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(id), AcquireTime: &at, RenewTime: &at,
				LeaseDurationSeconds: ptr.To(int32(shardLeaseDuration / time.Second))},
		})
	}
	return out
}

// runSharding is section E: its own control plane with the ShardedListAndWatch gate,
// seeded with section A's layout, then per run the two unsharded baselines and each
// ShardReplicaCounts configuration. Section A's server is not gated, so that its figures
// do not depend on an alpha feature; E's baselines are measured on E's server.
func (r *Runner) runSharding(ctx context.Context, results Results, info *RunInfo) error {
	o := r.Options
	r.logf("section E: starting the envtest control plane with ShardedListAndWatch=true")
	cp, kubeconfig, stop, err := r.startControlPlane("ShardedListAndWatch=true")
	if err != nil {
		return err
	}
	defer stop()
	l := NewLayout(o.APIPods)
	r.logf("section E: creating %d pods in %d namespaces", l.Pods, l.Namespaces)
	began := time.Now()
	if err := SeedPods(ctx, cp.Config, l, o.SeedWorkers, nil); err != nil {
		return err
	}
	info.ShardingSeedDuration = time.Since(began)
	s := r.section(SectionSharding)
	for run := range o.Runs {
		r.logf("section E: run %d/%d", run+1, o.Runs)
		for _, c := range rotate([]Contender{Deltacache, ControllerRuntime}, run) {
			spec := ChildSpec{Workload: WorkloadSharding, Contender: c, Pods: l.Pods, Kubeconfig: kubeconfig}
			if err := r.spawnReplicas(ctx, results, c, []ChildSpec{spec}, l.Pods); err != nil {
				return err
			}
		}
		for _, n := range ShardReplicaCounts {
			c := ShardedContender(n)
			if !slices.Contains(s.Contenders, c) {
				continue
			}
			ring := fmt.Sprintf("bench-run%d-r%d", run, n)
			barrier := filepath.Join(filepath.Dir(kubeconfig), ring) // removed with it
			if err := os.Mkdir(barrier, 0o700); err != nil {
				return err
			}
			ids := ShardIdentities(n)
			if err := announceRing(ctx, cp.Config, ring, ids); err != nil {
				return err
			}
			specs := make([]ChildSpec, 0, n)
			for _, id := range ids {
				specs = append(specs, ChildSpec{Workload: WorkloadSharding, Contender: Deltacache, Pods: l.Pods,
					Kubeconfig: kubeconfig, Shard: ShardReplica{Replicas: n, Ring: ring,
						Namespace: shardLeaseNamespace, Identity: id, Barrier: barrier}})
			}
			if err := r.spawnReplicas(ctx, results, c, specs, l.Pods); err != nil {
				return err
			}
		}
	}
	return nil
}

// spawnReplicas runs specs in child processes all at once, sums their Values up with
// AggregateReplicas and adds the result to section E as contender c. If one child
// fails, the others are killed.
func (r *Runner) spawnReplicas(ctx context.Context, results Results, c Contender, specs []ChildSpec, pods int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	began := time.Now()
	values := make([]Values, len(specs))
	errs := make([]error, len(specs))
	var wg sync.WaitGroup
	for i, spec := range specs {
		wg.Go(func() {
			values[i], errs[i] = SpawnChild(ctx, r.Exe, spec, nil, r.Log)
			if errs[i] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("%s: %w", c, err)
		}
	}
	v, err := AggregateReplicas(values, pods)
	if err != nil {
		return fmt.Errorf("%s: %w", c, err)
	}
	results.Add(SectionSharding, c, v)
	r.logf("  %-10s %-24s bytes=%.4g MiB heap=%.4g MiB rss=%.4g MiB sync=%.3gs pods=%g–%g (sum %g) (%.1fs)",
		SectionSharding, c, v[FigShardBytes][0], v[FigShardHeap][0], v[FigPeakRSS][0], v[FigSync][0],
		v[FigShardObjectsMin][0], v[FigShardObjectsMax][0], v[FigShardObjectsSum][0], time.Since(began).Seconds())
	return nil
}

// announceRing creates RingLeases of ring for ids on the server of cfg.
func announceRing(ctx context.Context, cfg *rest.Config, ring string, ids []string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for _, l := range RingLeases(shardLeaseNamespace, ring, ids, time.Now()) {
		if _, err := cs.CoordinationV1().Leases(l.Namespace).Create(ctx, l, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("announcing Lease %s: %w", l.Name, err)
		}
	}
	return nil
}
