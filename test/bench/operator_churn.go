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
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	demov1alpha1 "github.com/deltacache/deltacache/api/v1alpha1"
)

// opApp is what the churn driver knows of one App: its pods (name → Ready) and the
// change it waits to see in the App's status, if any.
type opApp struct {
	namespace, name string
	pods            map[string]bool
	pending         *opChange
}

// opChange is one pod change and the App status it must lead to.
type opChange struct {
	pods, ready int32
	began       time.Time
}

func (a *opApp) ready() int32 {
	var n int32
	for _, r := range a.pods {
		if r {
			n++
		}
	}
	return n
}

// opChurn drives pod changes against the Apps of l and times each change until the
// App's status shows it, as the demo operator writes it.
type opChurn struct {
	cs     kubernetes.Interface
	c      client.WithWatch
	l      Layout
	rng    *rand.Rand
	next   int // the next pod index to create (past l.Pods)
	mu     sync.Mutex
	apps   map[types.NamespacedName]*opApp
	order  []*opApp
	lat    []float64 // milliseconds
	lost   int
	status map[types.NamespacedName]demov1alpha1.AppStatus
}

// newOpChurn builds the driver; next is the first pod index it may create.
func newOpChurn(cs kubernetes.Interface, c client.WithWatch, l Layout, seed uint64, next int) *opChurn {
	return &opChurn{cs: cs, c: c, l: l, rng: rand.New(rand.NewPCG(seed, 0x6f70)), next: next}
}

// load lists the pods and Apps of the server into the driver's model.
func (d *opChurn) load(ctx context.Context) error {
	d.apps = map[types.NamespacedName]*opApp{}
	d.order = nil
	d.status = map[types.NamespacedName]demov1alpha1.AppStatus{}
	for a := range d.l.Apps {
		app := &opApp{namespace: d.l.AppNamespace(a), name: d.l.AppName(a), pods: map[string]bool{}}
		d.apps[types.NamespacedName{Namespace: app.namespace, Name: app.name}] = app
		d.order = append(d.order, app)
	}
	opts := metav1.ListOptions{Limit: 5000}
	for {
		list, err := d.cs.CoreV1().Pods("").List(ctx, opts)
		if err != nil {
			return err
		}
		for i := range list.Items {
			p := &list.Items[i]
			if app := d.apps[types.NamespacedName{Namespace: p.Namespace, Name: p.Labels[appLabel]}]; app != nil {
				app.pods[p.Name] = podIsReady(p)
			}
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			return nil
		}
	}
}

func podIsReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// watchApps records the status of every App it hears of and completes pending changes,
// until ctx ends. It re-opens the watch when the server closes it.
func (d *opChurn) watchApps(ctx context.Context) error {
	var list demov1alpha1.AppList
	if err := d.c.List(ctx, &list); err != nil {
		return err
	}
	d.mu.Lock()
	for i := range list.Items {
		d.observe(&list.Items[i], time.Now())
	}
	d.mu.Unlock()
	rv := list.ResourceVersion
	go func() {
		for ctx.Err() == nil {
			w, err := d.c.Watch(ctx, &demov1alpha1.AppList{}, &client.ListOptions{Raw: &metav1.ListOptions{
				ResourceVersion: rv, AllowWatchBookmarks: true}})
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			for ev := range w.ResultChan() {
				app, ok := ev.Object.(*demov1alpha1.App)
				if !ok {
					continue
				}
				rv = app.ResourceVersion
				if ev.Type == watch.Added || ev.Type == watch.Modified {
					d.mu.Lock()
					d.observe(app, time.Now())
					d.mu.Unlock()
				}
			}
		}
	}()
	return nil
}

// observe records app's status and completes its pending change if the status shows it
// (d.mu held).
func (d *opChurn) observe(app *demov1alpha1.App, at time.Time) {
	key := types.NamespacedName{Namespace: app.Namespace, Name: app.Name}
	d.status[key] = app.Status
	a := d.apps[key]
	if a == nil || a.pending == nil {
		return
	}
	if app.Status.Pods == a.pending.pods && app.Status.Ready == a.pending.ready {
		d.lat = append(d.lat, float64(at.Sub(a.pending.began).Microseconds())/1000)
		a.pending = nil
	}
}

// settle waits until every App's status matches the model (the operator has caught
// up), or timeout.
func (d *opChurn) settle(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		d.mu.Lock()
		behind := 0
		for _, a := range d.order {
			s, ok := d.status[types.NamespacedName{Namespace: a.namespace, Name: a.name}]
			if !ok || s.Pods != int32(len(a.pods)) || s.Ready != a.ready() {
				behind++
			}
		}
		d.mu.Unlock()
		if behind == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d Apps still show another status after %s", behind, len(d.order), timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// run makes rate pod changes per second for duration (one at a time per App: an App
// with a change not yet in its status is skipped), then waits up to grace for the
// last changes to show. It returns the number of changes made; the latencies are in
// d.lat, the changes never seen in d.lost.
func (d *opChurn) run(ctx context.Context, rate float64, duration, grace time.Duration) (int, error) {
	d.mu.Lock()
	d.lat, d.lost = nil, 0
	d.mu.Unlock()
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	end := time.Now().Add(duration)
	changes := 0
	for time.Now().Before(end) {
		select {
		case <-ctx.Done():
			return changes, ctx.Err()
		case <-tick.C:
		}
		app := d.pick()
		if app == nil {
			continue
		}
		if err := d.change(ctx, app); err != nil {
			return changes, err
		}
		changes++
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) && d.pendingCount() > 0 {
		time.Sleep(50 * time.Millisecond)
	}
	d.mu.Lock()
	for _, a := range d.order {
		if a.pending != nil {
			d.lost++
			a.pending = nil
		}
	}
	d.mu.Unlock()
	return changes, nil
}

func (d *opChurn) pendingCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, a := range d.order {
		if a.pending != nil {
			n++
		}
	}
	return n
}

// pick returns a random App with no pending change, or nil.
func (d *opChurn) pick() *opApp {
	d.mu.Lock()
	defer d.mu.Unlock()
	for range 8 {
		if a := d.order[d.rng.IntN(len(d.order))]; a.pending == nil {
			return a
		}
	}
	return nil
}

// change makes one change to a pod of app: create (40%), delete (30%, when the App has
// pods) or flip the Ready condition of one (30%), and records what the App's status
// must become.
func (d *opChurn) change(ctx context.Context, app *opApp) error {
	d.mu.Lock()
	names := make([]string, 0, len(app.pods))
	for n := range app.pods {
		names = append(names, n)
	}
	slices.Sort(names)
	roll := d.rng.IntN(10)
	var victim string
	if len(names) > 0 {
		victim = names[d.rng.IntN(len(names))]
	}
	d.mu.Unlock()
	began := time.Now()
	var apply func()
	var err error
	switch {
	case roll < 4 || victim == "":
		var p *corev1.Pod
		for {
			p = d.l.NewPod(d.next + d.appIndex(app))
			d.next += d.l.Apps
			if _, ok := app.pods[p.Name]; !ok {
				break
			}
		}
		_, err = d.cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{FieldManager: FieldManager})
		apply = func() { app.pods[p.Name] = false }
	case roll < 7:
		err = d.cs.CoreV1().Pods(app.namespace).Delete(ctx, victim, metav1.DeleteOptions{
			GracePeriodSeconds: new(int64)})
		apply = func() { delete(app.pods, victim) }
	default:
		ready := !app.pods[victim]
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":%q}]}}`, status)
		_, err = d.cs.CoreV1().Pods(app.namespace).Patch(ctx, victim, types.StrategicMergePatchType,
			[]byte(patch), metav1.PatchOptions{}, "status")
		apply = func() { app.pods[victim] = ready }
	}
	if apierrors.IsNotFound(err) || apierrors.IsAlreadyExists(err) {
		return nil // the model was behind: skip this change
	}
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	apply()
	app.pending = &opChange{pods: int32(len(app.pods)), ready: app.ready(), began: began}
	// The watch may already have shown the new status.
	if s, ok := d.status[types.NamespacedName{Namespace: app.namespace, Name: app.name}]; ok &&
		s.Pods == app.pending.pods && s.Ready == app.pending.ready {
		d.lat = append(d.lat, float64(time.Since(began).Microseconds())/1000)
		app.pending = nil
	}
	return nil
}

// appIndex returns the index of app in the layout.
func (d *opChurn) appIndex(app *opApp) int {
	return slices.Index(d.order, app)
}
