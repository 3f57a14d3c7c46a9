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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client"

	demov1alpha1 "github.com/deltacache/deltacache/api/v1alpha1"
)

// load is what the writers did.
type load struct {
	writers int
	writes  atomic.Int64 // successful writes
	failed  atomic.Int64 // writes refused or lost for another reason than the churn's own
}

// rate is the writes per second over the run.
func (l *load) rate(d time.Duration) float64 { return float64(l.writes.Load()) / d.Seconds() }

// rateWhileUp is the writes per second over the seconds the kube-apiserver was serving
// (the run less its restarts, when every write fails): the steady rate.
func (l *load) rateWhileUp(d time.Duration, restarts []time.Duration) float64 {
	for _, r := range restarts {
		d -= r
	}
	return l.rate(d)
}

// runWriters churns Pods, ConfigMaps and Apps at st.rate until end with st.writers
// writers, each with its own client and client-side rate limit (st.rate/st.writers
// QPS, which paces it), and each owning the
// object names whose number is its own modulo st.writers (so that no two writers race
// on one object). Object number n lives in namespaces[n mod len(namespaces)]. It
// returns when every writer has.
func runWriters(ctx context.Context, t *testing.T, cp *controlPlane, writes *sync.Map, st settings,
	namespaces []string, end time.Time,
) *load {
	l := &load{writers: st.writers}
	var wg sync.WaitGroup
	for w := range st.writers {
		// The client's own limit paces the writer: a writer that fell behind (a slow
		// write, a server away) catches up within its burst of one second's writes. One
		// limiter for all its requests: from QPS and Burst, controller-runtime's client
		// would make one per kind (its REST client per GroupVersionKind), three times
		// the rate asked.
		cfg := rest.CopyConfig(cp.cfg)
		perWriter := float64(st.rate) / float64(st.writers)
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(float32(perWriter), max(1, int(perWriter)))
		c, err := client.New(cfg, client.Options{Scheme: cp.scheme})
		if err != nil {
			t.Fatal(err)
		}
		wr := &writer{id: w, c: c, writes: writes, st: st, load: l, namespaces: namespaces,
			rng: rand.New(rand.NewPCG(st.seed, uint64(10+w))), exists: map[string]bool{}}
		wg.Go(func() { wr.run(ctx, t, end) })
	}
	wg.Wait()
	return l
}

// writer is one of runWriters' writers.
type writer struct {
	id         int
	c          client.Client
	writes     *sync.Map
	st         settings
	load       *load
	namespaces []string
	rng        *rand.Rand
	exists     map[string]bool
}

func (w *writer) run(ctx context.Context, t *testing.T, end time.Time) {
	for time.Now().Before(end) {
		kind := []string{"Pod", "ConfigMap", "App"}[w.rng.IntN(3)]
		prefix := map[string]string{"Pod": "p", "ConfigMap": "cm", "App": "app"}[kind]
		n := w.rng.IntN(w.st.objects/w.st.writers)*w.st.writers + w.id
		ok, err := w.write(ctx, kind, w.namespaces[n%len(w.namespaces)], fmt.Sprintf("%s-%d", prefix, n))
		if err != nil {
			if f := w.load.failed.Add(1); f <= 5 {
				t.Logf("writer %d: %v", w.id, err)
			}
		}
		w.load.writes.Add(int64(ok))
	}
}

// write creates, patches or deletes kind ns/name (a delete followed at once by a
// re-create under the same name, one time in ten); it returns the writes that succeeded
// and an error the churn does not explain.
func (w *writer) write(ctx context.Context, kind, ns, name string) (int, error) {
	id := kind + "/" + name
	obj := newObject(kind, ns, name, w.rng.IntN(10))
	op := w.rng.IntN(10)
	done := 0
	var err error
	switch {
	case !w.exists[id]:
		err = w.c.Create(ctx, obj)
		if apierrors.IsAlreadyExists(err) {
			err = nil
		} else if err == nil {
			done++
		}
		w.exists[id] = err == nil
	case op < 6:
		if err = w.c.Patch(ctx, obj, client.Merge); err == nil {
			done++
		}
	default:
		err = w.c.Delete(ctx, obj)
		w.exists[id] = false
		if err == nil {
			done++
		}
		if op == 9 && err == nil { // re-created at once, under the same name
			obj = newObject(kind, ns, name, w.rng.IntN(10))
			if err = w.c.Create(ctx, obj); err == nil {
				done++
			}
			w.exists[id] = err == nil
		}
	}
	if err == nil {
		w.writes.Store(kind+"/"+ns+"/"+name+"@"+obj.GetResourceVersion(), time.Now())
		return done, nil
	}
	crdGoing := apierrors.IsForbidden(err) && strings.Contains(err.Error(), "terminating")
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) || crdGoing {
		w.exists[id] = false // deleted with its CRD, or the CRD is being re-created
		return done, nil
	}
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		return done, nil
	}
	return done, fmt.Errorf("write %s: %w", id, err)
}

// newObject is kind ns/name, labelled app=a<v mod 3> (the label index).
func newObject(kind, ns, name string, v int) client.Object {
	labels := map[string]string{"app": "a" + strconv.Itoa(v%3), "v": strconv.Itoa(v)}
	om := metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}
	switch kind {
	case "Pod":
		containers := []corev1.Container{{Name: "c", Image: "busybox"}}
		return &corev1.Pod{ObjectMeta: om, Spec: corev1.PodSpec{Containers: containers}}
	case "ConfigMap":
		return &corev1.ConfigMap{ObjectMeta: om, Data: map[string]string{"v": strconv.Itoa(v)}}
	default:
		return &demov1alpha1.App{ObjectMeta: om, Spec: demov1alpha1.AppSpec{MinReady: int32(v)}}
	}
}
