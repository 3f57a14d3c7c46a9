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

package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	demov1alpha1 "github.com/deltacache/deltacache/api/v1alpha1"

	dcache "github.com/deltacache/deltacache/pkg/cache"
)

// faultKind is one kind of fault the soak injects.
type faultKind int

const (
	faultCut faultKind = iota
	faultBlackhole
	faultSlow
	faultRestart
	faultCompaction
	faultRBAC
	faultCRD
	faultReplicaRestart
	numFaultKinds
)

// faultNames name the kinds in the report.
var faultNames = [numFaultKinds]string{
	"connection cuts (RST)",
	"blackholes of 10–60 s (frozen, no RST)",
	"slow links (20–100 ms per chunk for 10 s)",
	"kube-apiserver restarts on the same etcd",
	"etcd compactions at the current revision, then a cut",
	"RBAC revocations and restorations of one kind",
	"App CRD deletions and re-creations (every App deleted with it)",
	"replica restarts (graceful or abrupt, then a new cache on the same snapshots)",
}

// revocation is what the cache reported while one kind's permission was revoked.
type revocation struct {
	kind string
	held time.Duration
	// forbiddenAfter is when SyncError of the kind first was Forbidden after the
	// revocation (-1: never while revoked); clearedAfter when it was nil again after
	// the restoration (-1: not within a minute).
	forbiddenAfter, clearedAfter time.Duration
	// unready: the readyz check failed while revoked.
	unready bool
}

// faultLog is every fault injected.
type faultLog struct {
	counts      [numFaultKinds]int
	restarts    []time.Duration // how long the kube-apiserver was away, each time
	revocations []revocation
}

// injector injects faults drawn from the seed until end: first every kind once in a
// seeded order, then kinds drawn at random, 3–8 s apart. A kind that would not end
// in time, or has had its share (kube-apiserver restarts: 3 per 10 minutes; CRD
// re-creations: 2), is replaced by a connection cut.
type injector struct {
	t     *testing.T
	cp    *controlPlane
	fleet *fleet
	rng   *rand.Rand
	scale float64 // blackholes and revocations are shorter in runs shorter than 10 minutes
	end   time.Time
	log   faultLog
	// restartsPerRun caps the replica restarts: one per 100 s of the run.
	restartsPerRun int
}

func newInjector(t *testing.T, cp *controlPlane, f *fleet, st settings, end time.Time) *injector {
	return &injector{t: t, cp: cp, fleet: f, rng: rand.New(rand.NewPCG(st.seed, 1)),
		scale: min(1.0, st.duration.Seconds()/600), end: end, restartsPerRun: max(1, int(st.duration/(100*time.Second)))}
}

// cache is the first running replica's cache: the faults watch its SyncError and
// readyz check.
func (in *injector) cache() *dcache.Cache { return in.fleet.current()[0].cache }

func (in *injector) run(ctx context.Context) faultLog {
	order := in.rng.Perm(int(numFaultKinds))
	for i := 0; ; i++ {
		wait := time.Duration(3+in.rng.IntN(6)) * time.Second
		if time.Now().Add(wait).After(in.end) {
			return in.log
		}
		time.Sleep(wait)
		k := faultKind(in.rng.IntN(int(numFaultKinds)))
		if i < len(order) {
			k = faultKind(order[i])
		}
		// A run too short for every kind in its seeded order still restarts a replica.
		if in.log.counts[faultReplicaRestart] == 0 && time.Until(in.end) < 50*time.Second {
			k = faultReplicaRestart
		}
		if !in.fits(k) {
			k = faultCut
		}
		began := time.Now()
		in.inject(ctx, k)
		in.t.Logf("fault %s–%s: %s", began.Format("15:04:05.000"), time.Now().Format("15:04:05.000"), faultNames[k])
		in.log.counts[k]++
	}
}

// fits reports whether a fault of kind k may start now.
func (in *injector) fits(k faultKind) bool {
	left := time.Until(in.end)
	switch k {
	case faultRestart:
		return in.log.counts[k] < max(1, int(3*in.scale)) && left > 60*time.Second
	case faultCRD:
		return in.log.counts[k] < 2 && left > 30*time.Second
	case faultRBAC:
		return left > 30*time.Second
	case faultReplicaRestart:
		return in.log.counts[k] < in.restartsPerRun && left > 30*time.Second
	default:
		return true
	}
}

// seconds is 10–60 s (or n..m) scaled to the run's length, and at least 1 s.
func (in *injector) seconds(lo, hi int) time.Duration {
	return time.Duration(float64(lo+in.rng.IntN(hi-lo+1))*in.scale*float64(time.Second)) + time.Second
}

func (in *injector) inject(ctx context.Context, k faultKind) {
	p := in.cp.proxy
	switch k {
	case faultCut:
		p.Cut()
	case faultBlackhole:
		d := in.seconds(10, 60)
		p.Blackhole(true)
		time.Sleep(min(d, time.Until(in.end)))
		p.Blackhole(false)
	case faultSlow:
		p.SetDelay(time.Duration(20+in.rng.IntN(80)) * time.Millisecond)
		time.Sleep(min(10*time.Second, time.Until(in.end)))
		p.SetDelay(0)
	case faultRestart:
		stopped, started, err := in.cp.restartAPIServer()
		if err != nil {
			in.t.Errorf("restarting the kube-apiserver: %v", err)
		}
		in.t.Logf("kube-apiserver restarted: stopped in %v, started in %v", stopped, started)
		in.log.restarts = append(in.log.restarts, stopped+started)
	case faultCompaction:
		if _, err := in.cp.compactEtcd(ctx); err != nil {
			in.t.Errorf("compacting etcd: %v", err)
		}
		p.Cut() // the watches resume from an RV older than the compaction
	case faultRBAC:
		in.revokeAndRestore(ctx, grantedKinds[in.rng.IntN(len(grantedKinds))], in.seconds(10, 30))
	case faultCRD:
		if err := recreateCRD(ctx, in.cp.direct, in.cp.cfg, in.cp.crdDir); err != nil {
			in.t.Errorf("re-creating the App CRD: %v", err)
		}
	case faultReplicaRestart:
		if err := in.fleet.restart(ctx, in.rng.IntN(in.fleet.st.replicas)); err != nil {
			in.t.Errorf("restarting a replica: %v", err)
		}
	}
}

// revokeAndRestore revokes k's permission for held, then restores it, watching what
// the cache reports meanwhile. An open watch outlives a revocation (the API server
// authorizes a request once, when it starts), so the connections are cut: the
// informers' next list or watch is refused, as it is after a real revocation once
// the watch ends.
func (in *injector) revokeAndRestore(ctx context.Context, k grantedKind, held time.Duration) {
	gvk := k.gvk
	r := revocation{kind: gvk.Kind, held: held, forbiddenAfter: -1, clearedAfter: -1}
	if err := revoke(ctx, in.cp.direct, k); err != nil {
		in.t.Errorf("revoking %s: %v", k.resource, err)
		return
	}
	start := time.Now()
	in.cp.proxy.Cut()
	for time.Since(start) < held {
		if r.forbiddenAfter < 0 && apierrors.IsForbidden(in.cache().SyncError(gvk)) {
			r.forbiddenAfter = time.Since(start)
		}
		if in.cache().ReadyzCheck()(nil) != nil {
			r.unready = true
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := restore(ctx, in.cp.direct, k); err != nil {
		in.t.Errorf("restoring %s: %v", k.resource, err)
	}
	restored := time.Now()
	for time.Since(restored) < time.Minute {
		if in.cache().SyncError(gvk) == nil {
			r.clearedAfter = time.Since(restored)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	in.log.revocations = append(in.log.revocations, r)
}

// recreateCRD deletes the App CRD (the server deletes every App with it), waits
// until it is gone, and installs it again.
func recreateCRD(ctx context.Context, c client.Client, cfg *rest.Config, dir string) error {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	key := client.ObjectKey{Name: "apps." + demov1alpha1.GroupVersion.Group}
	if err := c.Get(ctx, key, crd); err != nil {
		return err
	}
	if err := c.Delete(ctx, crd); err != nil {
		return err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !apierrors.IsNotFound(c.Get(ctx, key, &apiextensionsv1.CustomResourceDefinition{})) {
		if time.Now().After(deadline) {
			return fmt.Errorf("CRD %s still there after 2 minutes", key.Name)
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	_, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{dir}})
	return err
}
