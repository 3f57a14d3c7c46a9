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

package cache_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dcache "github.com/deltacache/deltacache/pkg/cache"
	"github.com/deltacache/deltacache/pkg/shard"
)

// snapshotKinds are the kinds the snapshot tests cache: their list types and
// their snapshot files' kind names.
var snapshotKinds = []struct {
	kind string
	list func() client.ObjectList
	obj  func(ns, name string) client.Object
}{
	{"ConfigMap", func() client.ObjectList { return &corev1.ConfigMapList{} },
		func(ns, name string) client.Object { return newConfigMap(ns, name, nil, map[string]string{"k": "v"}) }},
	{"Pod", func() client.ObjectList { return &corev1.PodList{} },
		func(ns, name string) client.Object { return newPod(ns, name, nil) }},
}

// addRecorder records, per kind, the keys of every handler call as
// "add ns/name@rv initial=true", "update …", "delete …".
type addRecorder struct {
	mu     sync.Mutex
	events []string
}

func (r *addRecorder) record(verb string, obj any, extra string) {
	o, ok := obj.(client.Object)
	if !ok {
		if t, isTomb := obj.(toolscache.DeletedFinalStateUnknown); isTomb {
			o, _ = t.Obj.(client.Object)
		}
	}
	line := verb + " ?"
	if o != nil {
		line = fmt.Sprintf("%s %s/%s@%s%s", verb, o.GetNamespace(), o.GetName(), o.GetResourceVersion(), extra)
	}
	r.mu.Lock()
	r.events = append(r.events, line)
	r.mu.Unlock()
}

func (r *addRecorder) OnAdd(obj any, initial bool) {
	r.record("add", obj, fmt.Sprintf(" initial=%t", initial))
}
func (r *addRecorder) OnUpdate(_, obj any) { r.record("update", obj, "") }
func (r *addRecorder) OnDelete(obj any)    { r.record("delete", obj, "") }

func (r *addRecorder) sorted() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.events)
	slices.Sort(out)
	return out
}

// serverState lists a kind in ns from the server as "ns/name uid@rv", sorted,
// and the matching initial adds.
func serverState(t *testing.T, list client.ObjectList, ns string) (state, adds []string) {
	t.Helper()
	if err := k8sClient.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return uidRVs(t, list)
}

func uidRVs(t *testing.T, list client.ObjectList) (state, adds []string) {
	t.Helper()
	items, err := metaItems(list)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range items {
		state = append(state, fmt.Sprintf("%s/%s %s@%s", o.GetNamespace(), o.GetName(), o.GetUID(), o.GetResourceVersion()))
		adds = append(adds, fmt.Sprintf("add %s/%s@%s initial=true", o.GetNamespace(), o.GetName(), o.GetResourceVersion()))
	}
	slices.Sort(state)
	slices.Sort(adds)
	return state, adds
}

func metaItems(list client.ObjectList) ([]metav1.Object, error) {
	var out []metav1.Object
	switch l := list.(type) {
	case *corev1.ConfigMapList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *corev1.PodList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	default:
		return nil, fmt.Errorf("unexpected list %T", list)
	}
	return out, nil
}

// snapshotCacheRun is one run of a cache with snapshots in dir, restricted to
// ns, with an addRecorder per kind registered before it started.
type snapshotCacheRun struct {
	c       *dcache.Cache
	rec     map[string]*addRecorder
	logs    *logCapture
	cancel  context.CancelFunc
	stopped chan error
}

type logCapture struct {
	mu    sync.Mutex
	lines []string
}

func (l *logCapture) with(subs ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		all := true
		for _, s := range subs {
			all = all && strings.Contains(line, s)
		}
		if all {
			out = append(out, line)
		}
	}
	return out
}

func startSnapshotCache(t *testing.T, ns, dir string, extra ...dcache.Option) *snapshotCacheRun {
	t.Helper()
	logs := &logCapture{}
	log := funcr.New(func(prefix, args string) {
		logs.mu.Lock()
		logs.lines = append(logs.lines, args)
		logs.mu.Unlock()
	}, funcr.Options{})
	c := newEnvCache(t, crcache.Options{DefaultNamespaces: map[string]crcache.Config{ns: {}}},
		append([]dcache.Option{dcache.WithSnapshots(dir), dcache.WithStorage(dcache.StorageCompact), dcache.WithLogger(log)},
			extra...)...)
	run := &snapshotCacheRun{c: c, rec: map[string]*addRecorder{}, logs: logs, stopped: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	run.cancel = cancel
	for _, k := range snapshotKinds {
		inf, err := c.GetInformer(ctx, k.obj(ns, "x"), crcache.BlockUntilSynced(false))
		if err != nil {
			t.Fatal(err)
		}
		run.rec[k.kind] = &addRecorder{}
		if _, err := inf.AddEventHandler(run.rec[k.kind]); err != nil {
			t.Fatal(err)
		}
	}
	go func() { run.stopped <- c.Start(ctx) }()
	t.Cleanup(func() { run.stop(t) })
	syncCtx, syncCancel := context.WithTimeout(ctx, 60*time.Second)
	defer syncCancel()
	if !c.WaitForCacheSync(syncCtx) {
		t.Fatal("WaitForCacheSync returned false")
	}
	return run
}

// stop stops the cache and waits for Start to return (idempotent).
func (r *snapshotCacheRun) stop(t *testing.T) {
	t.Helper()
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	select {
	case err := <-r.stopped:
		if err != nil {
			t.Errorf("Start returned %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("Start did not return")
	}
}

// snapshotFile is the file of kind's typed informer in ns.
func snapshotFile(dir, kind, ns string) string {
	return filepath.Join(dir, "core_v1_"+kind+"_typed_"+ns)
}

// populateSnapshotKinds creates n objects of each kind, named obj-0 …
func populateSnapshotKinds(t *testing.T, ns string, n int) {
	t.Helper()
	for _, k := range snapshotKinds {
		for i := range n {
			create(t, k.obj(ns, fmt.Sprintf("obj-%d", i)))
		}
	}
}

// changeWhileStopped makes, for each kind: obj-1 updated, obj-2 deleted, obj-3
// deleted and re-created under its name (a new uid), obj-new created.
func changeSnapshotKindsWhileStopped(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	for _, k := range snapshotKinds {
		o := k.obj(ns, "obj-1")
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatal(err)
		}
		o.SetLabels(map[string]string{"changed": "yes"})
		if err := k8sClient.Update(ctx, o); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"obj-2", "obj-3"} {
			if err := k8sClient.Delete(ctx, k.obj(ns, name), client.GracePeriodSeconds(0)); err != nil {
				t.Fatal(err)
			}
		}
		eventually(t, 30*time.Second, func() error {
			err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "obj-3"}, k.obj(ns, "obj-3"))
			if err == nil {
				return fmt.Errorf("%s obj-3 not deleted yet", k.kind)
			}
			return nil
		})
		create(t, k.obj(ns, "obj-3"))
		create(t, k.obj(ns, "obj-new"))
	}
}

// checkWarmStart checks that run's cache equals the server for every kind in
// ns, that its handlers saw one initial add per final object and nothing else,
// and that every kind's informer synced with start (and, if fetched >= 0,
// that many objects fetched).
func checkWarmStart(t *testing.T, run *snapshotCacheRun, ns, start string, fetched int) {
	t.Helper()
	ctx := envCtx(t)
	for _, k := range snapshotKinds {
		want, wantAdds := serverState(t, k.list(), ns)
		cached := k.list()
		if err := run.c.List(ctx, cached, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		got, _ := uidRVs(t, cached)
		if !slices.Equal(got, want) {
			t.Errorf("%s: cache\n  %q\nserver\n  %q", k.kind, got, want)
		}
		eventually(t, 10*time.Second, func() error {
			if got := run.rec[k.kind].sorted(); !slices.Equal(got, wantAdds) {
				return fmt.Errorf("%s handler calls\n  %q\nwant\n  %q", k.kind, got, wantAdds)
			}
			return nil
		})
		eventually(t, 10*time.Second, func() error {
			lines := run.logs.with("informer synced", k.kind+".v1 in namespace "+ns, `"start"="`+start+`"`)
			if len(lines) != 1 {
				return fmt.Errorf("%s: synced lines with start %s: %q (all: %q)", k.kind, start, lines,
					run.logs.with("informer synced"))
			}
			if fetched >= 0 && !strings.Contains(lines[0], fmt.Sprintf(`"fetched"=%d`, fetched)) {
				return fmt.Errorf("%s: want %d fetched: %q", k.kind, fetched, lines[0])
			}
			t.Log(lines[0])
			return nil
		})
	}
}

func TestEnvtestSnapshotRestartResumesAndHandlersSeeOneAddPerFinalObject(t *testing.T) {
	requireEnv(t)
	ns := createNamespace(t, "snapshot")
	dir := t.TempDir()
	populateSnapshotKinds(t, ns, 5)

	first := startSnapshotCache(t, ns, dir)
	checkWarmStart(t, first, ns, "cold", -1)
	first.stop(t)
	for _, k := range snapshotKinds {
		st, err := os.Stat(snapshotFile(dir, k.kind, ns))
		if err != nil {
			t.Fatalf("no snapshot of %s written at stop: %v", k.kind, err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("snapshot of %s has mode %v, want 0600", k.kind, st.Mode())
		}
	}
	changeSnapshotKindsWhileStopped(t, ns)

	second := startSnapshotCache(t, ns, dir)
	checkWarmStart(t, second, ns, "resumed", 0)
}

// setSnapshotRV rewrites the resourceVersion in the header of a snapshot file
// (format 2 of pkg/informer/snapshot_file.go: 8 bytes of magic, three 32-byte
// hashes, written and records as 8 bytes each, then the RV as a uvarint length
// and its bytes; a CRC-32C of everything before the last 4 bytes) and its CRC.
func setSnapshotRV(t testing.TB, path, rv string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const rvAt = 8 + 32 + 32 + 32 + 8 + 8
	n, w := binary.Uvarint(b[rvAt:])
	out := slices.Clone(b[:rvAt])
	out = binary.AppendUvarint(out, uint64(len(rv)))
	out = append(out, rv...)
	out = append(out, b[rvAt+w+int(n):len(b)-4]...)
	out = binary.LittleEndian.AppendUint32(out, crc32.Checksum(out, crc32.MakeTable(crc32.Castagnoli)))
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestEnvtestSnapshotRestartWithAnUnusableResourceVersionDiffsByMetadata(t *testing.T) {
	requireEnv(t)
	ns := createNamespace(t, "snapshot-diff")
	dir := t.TempDir()
	populateSnapshotKinds(t, ns, 12) // 3 of 12 changed: under the diff's floor of 64 Gets

	first := startSnapshotCache(t, ns, dir)
	checkWarmStart(t, first, ns, "cold", -1)
	first.stop(t)
	changeSnapshotKindsWhileStopped(t, ns)
	// The server's watch cache keeps the history of a fresh envtest control plane
	// back to its start, so no RV of it answers 410 here: a resourceVersion beyond the
	// server's (a snapshot of another history) takes the same path, the metadata diff.
	for _, k := range snapshotKinds {
		setSnapshotRV(t, snapshotFile(dir, k.kind, ns), "999999999999")
	}

	second := startSnapshotCache(t, ns, dir)
	checkWarmStart(t, second, ns, "diffed", 3) // obj-1, obj-3, obj-new
}

func TestEnvtestSnapshotsDoNotWriteSecretsUnlessAsked(t *testing.T) {
	requireEnv(t)
	ns := createNamespace(t, "snapshot-secret")
	dir := t.TempDir()
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s"}, StringData: map[string]string{"k": "v"}})
	for _, secrets := range []bool{false, true} {
		opts := []dcache.Option{dcache.WithSnapshots(dir), dcache.WithStorage(dcache.StorageCompact)}
		if secrets {
			opts = append(opts, dcache.WithSnapshotSecrets())
		}
		c := newEnvCache(t, crcache.Options{DefaultNamespaces: map[string]crcache.Config{ns: {}}}, opts...)
		ctx, cancel := context.WithCancel(context.Background())
		if _, err := c.GetInformer(ctx, &corev1.Secret{}, crcache.BlockUntilSynced(false)); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- c.Start(ctx) }()
		if !c.WaitForCacheSync(envCtx(t)) {
			t.Fatal("WaitForCacheSync returned false")
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		_, err := os.Stat(snapshotFile(dir, "Secret", ns))
		if written := err == nil; written != secrets {
			t.Fatalf("WithSnapshotSecrets %t: secret snapshot written %t (%v)", secrets, written, err)
		}
	}
}

// A sharded replica that dies (its Lease left to expire) and comes back before the
// Lease expires gets its slots back in the ring's first round; its sharded informers
// wait for that round before listing, so they resume the snapshots they wrote for
// those slots, which hold the share (the stores are not emptied when the cache stops).
func TestEnvtestShardedReplicaRestartedWithinItsLeaseResumesItsSnapshots(t *testing.T) {
	requireEnv(t)
	ns := createNamespace(t, "snapshot-shard")
	dir := t.TempDir()
	populateSnapshotKinds(t, ns, 6)
	sharding := dcache.WithSharding(dcache.Sharding{
		Ring: shard.Options{Namespace: ns, Name: "snap", Identity: "only", LeaseDuration: time.Minute,
			RenewInterval: time.Second, KeepLeaseOnStop: true},
		ByUID: []client.Object{&corev1.ConfigMap{}},
	})
	first := startSnapshotCache(t, ns, dir, sharding)
	checkWarmStart(t, first, ns, "cold", -1)
	first.stop(t)
	changeSnapshotKindsWhileStopped(t, ns)

	second := startSnapshotCache(t, ns, dir, sharding)
	checkWarmStart(t, second, ns, "resumed", 0)
}
