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
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The replicas run with snapshots on, each in a directory of its own that outlives its
// restarts, and a fault restarts one: its cache is stopped, gracefully (SIGTERM) or
// abruptly (SIGKILL), and a new cache with the same identity and directory takes its
// place and its share.

// snapshotInterval of the replicas: short, so that a replica killed without its write at
// stop finds a recent snapshot.
const snapshotInterval = 20 * time.Second

// strayTempSuffix names the partial file an abrupt stop leaves in the directory, as a
// process killed in the middle of a write would (the informer's temporary files are
// "<name>.tmp-<random>"; see pkg/informer/snapshot_file.go).
const strayTempSuffix = ".tmp-soakkill"

// fleet is the replicas running now, and those a restart replaced.
type fleet struct {
	t            *testing.T
	cp           *controlPlane
	st           settings
	writes, seen *sync.Map
	recon        *reconciles
	dirs         string // a directory per replica id under it
	// rng draws, for each cache built, how it will be stopped if a fault restarts it
	// (graceful or abrupt): the Lease is kept at an abrupt stop (KeepLeaseOnStop), as
	// after a crash, which is fixed when the cache is built.
	rng       *rand.Rand
	following sync.WaitGroup

	mu      sync.Mutex
	live    []*replica // by position: live[i].id is replica-i
	retired []*replica
	built   int // caches built, for their instance names
	log     restartLog
}

// restartLog is what the replica restarts did.
type restartLog struct {
	graceful, abrupt int
	// strays placed in a killed replica's directory, and those found still there
	// once its successor had synced (want none: a start removes them).
	strays, straysLeft int
	// syncedAfter is, per restart, the time from the new cache's start to its sync.
	syncedAfter []time.Duration
}

func newFleet(t *testing.T, cp *controlPlane, st settings, writes, seen *sync.Map) *fleet {
	return &fleet{t: t, cp: cp, st: st, writes: writes, seen: seen, recon: newReconciles(),
		dirs: t.TempDir(), rng: rand.New(rand.NewPCG(st.seed, 2))}
}

// start builds and starts a cache for replica id and registers its informers and
// handlers; it does not wait for the sync.
func (f *fleet) start(ctx context.Context, id string) *replica {
	f.mu.Lock()
	f.built++
	instance := fmt.Sprintf("%s#%d", id, f.built)
	abrupt := f.rng.IntN(2) == 1
	f.mu.Unlock()
	r := newReplica(ctx, f.t, f.cp, f.st, id, instance, filepath.Join(f.dirs, id), abrupt,
		func(kind string, keys []string) { f.following.Go(func() { f.explainDrift(ctx, instance, kind, keys) }) })
	rctx, stop := context.WithCancel(ctx)
	r.stop, r.done = stop, make(chan error, 1)
	r.started = time.Now()
	go func() { r.done <- r.cache.Start(rctx) }()
	r.informers = watchAll(ctx, f.t, r.cache, f.writes, f.seen)
	f.recon.watch(f.t, r)
	f.following.Go(func() { r.followRing(rctx) })
	return r
}

// sync waits until r's informers synced (2 minutes at most) and from then on has the
// monitor check that they stay synced.
func (f *fleet) sync(ctx context.Context, r *replica) error {
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if !r.cache.WaitForCacheSync(sctx) {
		return fmt.Errorf("%s did not sync within 2 minutes", r.instance)
	}
	for _, w := range r.informers {
		w.synced.Store(true)
	}
	return nil
}

// current returns the replicas running now, by position (one being restarted is left
// out).
func (f *fleet) current() []*replica {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*replica, 0, len(f.live))
	for _, r := range f.live {
		if r != nil {
			out = append(out, r)
		}
	}
	return out
}

// all returns every cache built: the running ones and those replaced.
func (f *fleet) all() []*replica {
	return append(f.current(), f.retiredReplicas()...)
}

func (f *fleet) retiredReplicas() []*replica {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*replica(nil), f.retired...)
}

// restart replaces replica i: its cache stops (gracefully or abruptly, as drawn when it
// was built), and a new cache with the same id and snapshot directory starts, syncs and
// takes its share again. The old cache's informers and handlers are no longer checked.
func (f *fleet) restart(ctx context.Context, i int) error {
	f.mu.Lock()
	old := f.live[i]
	f.live[i] = nil // neither sampled nor monitored from now on
	f.mu.Unlock()
	for _, w := range old.informers {
		w.synced.Store(false)
	}
	old.mu.Lock()
	old.stoppedAt = time.Now()
	old.mu.Unlock()
	var err error
	if old.abrupt {
		err = f.kill(old)
	} else {
		err = f.terminate(old)
	}
	f.mu.Lock()
	f.retired = append(f.retired, old)
	if old.abrupt {
		f.log.abrupt++
	} else {
		f.log.graceful++
	}
	f.mu.Unlock()
	if err != nil {
		return err
	}
	r := f.start(ctx, old.id)
	if err := f.sync(ctx, r); err != nil {
		return err
	}
	f.mu.Lock()
	f.live[i] = r
	f.log.syncedAfter = append(f.log.syncedAfter, time.Since(r.started))
	f.mu.Unlock()
	strays, _ := filepath.Glob(filepath.Join(r.dir, "*"+strayTempSuffix))
	if len(strays) > 0 {
		f.mu.Lock()
		f.log.straysLeft += len(strays)
		f.mu.Unlock()
		return fmt.Errorf("%s synced with the partial files of the killed %s still in %s: %v", r.instance,
			old.instance, r.dir, strays)
	}
	f.t.Logf("%s replaced %s (%s stop) and synced in %s", r.instance, old.instance, old.stopKind(),
		time.Since(r.started).Round(time.Millisecond))
	return nil
}

// terminate is SIGTERM: the cache's context is cancelled and Start returns once the
// informers stopped and wrote their snapshots, and the ring deleted its Lease.
func (f *fleet) terminate(r *replica) error {
	r.stop()
	return r.wait()
}

// kill is SIGKILL, in-process: the replica's snapshot directory is renamed away first,
// which freezes it as it is at that moment (a write under way finishes into the renamed
// directory, or its rename fails and leaves its temporary file there, as a kill in the
// middle of a write does); a partial temporary file is added next to the first snapshot
// file, as a kill in the middle of its write leaves; then the cache's context is
// cancelled, the writes at stop go to a new directory of the same name, which is
// removed, and the frozen directory is put back. The cache was built with
// KeepLeaseOnStop, so its Lease expires instead of being deleted, as after a crash.
func (f *fleet) kill(r *replica) error {
	frozen := r.dir + ".killed"
	if err := os.Rename(r.dir, frozen); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("freezing %s: %w", r.dir, err)
	}
	if err := addStrayTemp(frozen); err != nil {
		return err
	}
	f.mu.Lock()
	f.log.strays++
	f.mu.Unlock()
	r.stop()
	stopErr := r.wait()
	if err := os.RemoveAll(r.dir); err != nil {
		return err
	}
	if err := os.Rename(frozen, r.dir); err != nil {
		return fmt.Errorf("restoring %s: %w", r.dir, err)
	}
	return stopErr
}

// addStrayTemp writes the first half of dir's first snapshot file to
// "<file>.tmp-soakkill" (an empty one next to the typed Pods' file if dir holds none
// yet: a kill during the first write).
func addStrayTemp(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Type().IsRegular() && !strings.Contains(e.Name(), ".tmp-") {
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, e.Name()+strayTempSuffix), data[:len(data)/2], 0o600)
		}
	}
	return os.WriteFile(filepath.Join(dir, "core_v1_Pod_typed_all"+strayTempSuffix), nil, 0o600)
}

// stopAll stops every running replica gracefully and returns Start's errors.
func (f *fleet) stopAll() error {
	var errs []error
	for _, r := range f.current() {
		r.stop()
	}
	for _, r := range f.current() {
		if err := r.wait(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.instance, err))
		}
	}
	f.following.Wait()
	return errors.Join(errs...)
}

// wait waits up to 2 minutes for r's Start to return, and returns its error.
func (r *replica) wait() error {
	select {
	case err := <-r.done:
		return err
	case <-time.After(2 * time.Minute):
		return fmt.Errorf("%s: Start did not return within 2 minutes of its stop", r.instance)
	}
}

func (r *replica) stopKind() string {
	if r.abrupt {
		return "abrupt"
	}
	return "graceful"
}

// explainDrift logs, for each key instance's consistency check found drifted, what the
// server holds under it (a consistent read: uid, resourceVersion, creation, slot), when
// the writers wrote that resourceVersion, and whether instance's ring serves the slot:
// to tell a lost watch event from a hand-off.
func (f *fleet) explainDrift(ctx context.Context, instance, kind string, keys []string) {
	gvk := map[string]schema.GroupVersionKind{"ConfigMap": cmGVK, "Pod": podGVK, "App": appGVK}[kind]
	var r *replica
	for _, c := range f.all() {
		if c.instance == instance {
			r = c
		}
	}
	for _, key := range keys {
		ns, name, _ := strings.Cut(key, "/")
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(gvk)
		if err := f.cp.direct.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
			f.t.Logf("drift %s %s %s: on the server: %v", instance, kind, key, err)
			continue
		}
		written := "not by the writers"
		if at, ok := f.writes.Load(kind + "/" + key + "@" + obj.ResourceVersion); ok {
			written = at.(time.Time).Format("15:04:05.000")
		}
		slot := slotOf(gvk, ns, obj.UID)
		serving := "?"
		if r != nil {
			st := r.cache.Ring().Status()
			r.mu.Lock()
			serving = fmt.Sprintf("serving it %t (acquired %s, released %s)", st.Serving.Has(slot),
				r.acquiredAt[slot].Format("15:04:05.000"), r.releasedAt[slot].Format("15:04:05.000"))
			r.mu.Unlock()
		}
		f.t.Logf("drift %s %s %s: on the server uid %s rv %s created %s, that rv written at %s; slot %d, %s", instance,
			kind, key, obj.UID, obj.ResourceVersion, obj.CreationTimestamp.Format("15:04:05"), written, slot, serving)
	}
}
