package cache_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dcache "github.com/deltacache/deltacache/pkg/cache"
	"github.com/deltacache/deltacache/pkg/shard"
)

// createLabelled creates the namespaces names (deleted with their ConfigMaps when the
// test ends: envtest runs no namespace controller) and, in each, the ConfigMaps cms
// labelled run=<run>.
func createLabelled(t *testing.T, cs kubernetes.Interface, run string, names []string, cms ...string) {
	t.Helper()
	ctx := context.Background()
	for _, ns := range names {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cs.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
			_ = cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		})
		for _, name := range cms {
			cm := newConfigMap(ns, name, map[string]string{shardRunLabel: run}, nil)
			if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// wantNotFound fails the test unless err is a NotFound that client.IgnoreNotFound
// takes, not ErrNotInShard.
func wantNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !apierrors.IsNotFound(err) || client.IgnoreNotFound(err) != nil || errors.Is(err, dcache.ErrNotInShard) {
		t.Errorf("Get of %s = %v, want NotFound", what, err)
	}
}

// wantNotInShard fails the test unless err wraps ErrNotInShard and is not a NotFound.
func wantNotInShard(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, dcache.ErrNotInShard) || apierrors.IsNotFound(err) {
		t.Errorf("Get of %s = %v, want ErrNotInShard (and not NotFound)", what, err)
	}
}

// A namespace-sharded cache answers a Get of an absent key in a namespace it serves
// with NotFound, so that a reconciler written the scaffolded way
// (client.IgnoreNotFound) forgets a deleted object: an object deleted after the cache
// held it, a key never created, a key in a namespace that does not exist but whose
// slot the replica serves. A key of a namespace another replica serves is
// ErrNotInShard, not NotFound, held there or not. One replica on a ring with a
// phantom member serves part of the slots.
func TestEnvtestNamespaceShardedGetOfAnAbsentKeyInAServedNamespaceIsNotFound(t *testing.T) {
	requireEnv(t)
	c := rest.CopyConfig(cfg)
	cs := kubernetes.NewForConfigOrDie(c)
	run := rand.String(6)
	ringNS := createNamespace(t, "ring")
	const id = "replica-a"
	serves := phantomMember(t, cs, ringNS, "cms", id)
	served := namespacesOfSlots("nf-"+run, serves, true, 1)[0]
	other := namespacesOfSlots("nf-"+run, serves, false, 1)[0]
	ghost := namespacesOfSlots("ghost-"+run, serves, true, 1)[0] // never created
	createLabelled(t, cs, run, []string{served, other}, "x")
	r := startOnRing(t, c, nil, dcache.Sharding{
		Ring:        shard.Options{Namespace: ringNS, Name: "cms", Identity: id},
		ByNamespace: []client.Object{&corev1.ConfigMap{}},
	}, &corev1.ConfigMap{}, run, serves)
	ctx := envCtx(t)
	get := func(ns, name string) error {
		return r.cache.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{})
	}
	eventually(t, 20*time.Second, func() error { return get(served, "x") })
	wantNotInShard(t, other+"/x (held by nobody: the phantom's namespace)", get(other, "x"))

	if err := cs.CoreV1().ConfigMaps(served).Delete(ctx, "x", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var err error
	eventually(t, 20*time.Second, func() error {
		if err = get(served, "x"); err == nil {
			return errors.New("still held")
		}
		return nil
	})
	wantNotFound(t, served+"/x deleted", err)
	wantNotFound(t, served+"/never (never created)", get(served, "never"))
	wantNotFound(t, ghost+"/x (a namespace that does not exist, in a served slot)", get(ghost, "x"))
	wantNotInShard(t, other+"/never", get(other, "never"))
}

// A uid-sharded cache cannot know the uid of an absent key, hence whose share it
// would be in: a Get of an absent key is ErrNotInShard, except when the replica serves
// every slot (alone in its ring): then it is NotFound.
func TestEnvtestUIDShardedGetOfAnAbsentKeyIsNotFoundOnlyWhenTheReplicaServesEverySlot(t *testing.T) {
	requireEnv(t)
	c := rest.CopyConfig(cfg)
	cs := kubernetes.NewForConfigOrDie(c)
	for _, alone := range []bool{true, false} {
		name := "alone"
		if !alone {
			name = "with-a-phantom-member"
		}
		t.Run(name, func(t *testing.T) {
			run := rand.String(6)
			ringNS := createNamespace(t, "ring")
			ns := "uid-" + run
			const id = "replica-a"
			serves := shard.AllSlots()
			if !alone {
				serves = phantomMember(t, cs, ringNS, "cms", id)
			}
			createLabelled(t, cs, run, []string{ns})
			r := startOnRing(t, c, nil, dcache.Sharding{
				Ring:  shard.Options{Namespace: ringNS, Name: "cms", Identity: id},
				ByUID: []client.Object{&corev1.ConfigMap{}},
			}, &corev1.ConfigMap{}, run, serves)
			ctx := envCtx(t)
			// An object of this replica's share: created until one lands in it.
			var held string
			for i := 0; held == ""; i++ {
				cm := newConfigMap(ns, "cm-"+rand.String(5), map[string]string{shardRunLabel: run}, nil)
				if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				created, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, cm.Name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if serves.Has(shard.SlotOfUID(string(created.UID))) {
					held = cm.Name
				}
			}
			key := client.ObjectKey{Namespace: ns, Name: held}
			eventually(t, 20*time.Second, func() error { return r.cache.Get(ctx, key, &corev1.ConfigMap{}) })
			if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, held, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			var err error
			eventually(t, 20*time.Second, func() error {
				if err = r.cache.Get(ctx, key, &corev1.ConfigMap{}); err == nil {
					return errors.New("still held")
				}
				return nil
			})
			never := r.cache.Get(ctx, client.ObjectKey{Namespace: ns, Name: "never"}, &corev1.ConfigMap{})
			if alone {
				wantNotFound(t, key.String()+" deleted", err)
				wantNotFound(t, ns+"/never", never)
			} else {
				wantNotInShard(t, key.String()+" deleted", err)
				wantNotInShard(t, ns+"/never", never)
			}
		})
	}
}
