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

package cache

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The object the mutation tests write, and the values they write into it.
const (
	mutatedKey   = "a/x"
	changedValue = "changed"
	mutatedValue = "mutated"
)

// mutations collects what the detector reports.
type mutations chan error

func (m mutations) report(err error) { m <- err }

// next returns the next report as a *MutationError, failing after 10s.
func (m mutations) next(t *testing.T) *MutationError {
	t.Helper()
	select {
	case err := <-m:
		var mutation *MutationError
		if !errors.As(err, &mutation) {
			t.Fatalf("reported %v, want a *MutationError", err)
		}
		return mutation
	case <-time.After(10 * time.Second):
		t.Fatal("no mutation reported")
		return nil
	}
}

// none fails if a report is pending.
func (m mutations) none(t *testing.T) {
	t.Helper()
	select {
	case err := <-m:
		t.Fatalf("unexpected report: %v", err)
	default:
	}
}

var unsafeReads = crcache.Options{DefaultUnsafeDisableDeepCopy: new(true)}

// assertDataMutation checks that m reports a/x's data.name changed from x to changed.
func assertDataMutation(t *testing.T, m *MutationError, informerName string) {
	t.Helper()
	if m.Informer != informerName || m.Key != mutatedKey || m.ResourceVersion != "5" {
		t.Errorf("mutation of %s %s rv %s, want %s a/x rv 5", m.Informer, m.Key, m.ResourceVersion, informerName)
	}
	for _, want := range []string{`-  "name": "x"`, `+  "name": "changed"`} {
		if !strings.Contains(m.Diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, m.Diff)
		}
	}
	if !strings.Contains(m.Error(), mutatedKey) || !strings.Contains(m.Error(), m.Diff) {
		t.Errorf("Error() = %q does not name the object and show the diff", m.Error())
	}
}

func TestMutationDetectorReportsAMutationOnTheNextRead(t *testing.T) {
	found := make(mutations, 10)
	c := newTestCache(t, newFakeAPI(t, configMap("a", "x", nil)), unsafeReads,
		WithMutationDetector(time.Hour, found.report))
	startCache(t, c)
	ctx := testCtx(t)
	key := client.ObjectKey{Namespace: "a", Name: "x"}

	var cm corev1.ConfigMap
	if err := c.Get(ctx, key, &cm); err != nil {
		t.Fatal(err)
	}
	found.none(t)
	cm.Data["name"] = changedValue // shares the cached map: deep copy is off
	if err := c.Get(ctx, key, &corev1.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	assertDataMutation(t, found.next(t), "ConfigMap.v1")

	// Reported once: the changed object is the new baseline.
	if err := c.List(ctx, &corev1.ConfigMapList{}); err != nil {
		t.Fatal(err)
	}
	found.none(t)
	if err := c.CheckMutations(); err != nil {
		t.Errorf("CheckMutations after the report: %v", err)
	}

	// A List checks the objects it reads too, under their store keys.
	cm.Data["name"] = "changed again"
	if err := c.List(ctx, &corev1.ConfigMapList{}); err != nil {
		t.Fatal(err)
	}
	if m := found.next(t); m.Key != mutatedKey || !strings.Contains(m.Diff, `+  "name": "changed again"`) {
		t.Errorf("mutation found by List: key %s, diff:\n%s\nwant key %s and the new value", m.Key, m.Diff, mutatedKey)
	}
}

func TestMutationDetectorIgnoresCallersChangingTheirDeepCopies(t *testing.T) {
	found := make(mutations, 10)
	c := newTestCache(t, newFakeAPI(t, configMap("a", "x", nil)), crcache.Options{},
		WithMutationDetector(time.Hour, found.report))
	startCache(t, c)
	ctx := testCtx(t)
	var list corev1.ConfigMapList
	if err := c.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	list.Items[0].Data["name"] = changedValue
	if err := c.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	found.none(t)
	if err := c.CheckMutations(); err != nil {
		t.Errorf("CheckMutations: %v", err)
	}
}

func TestCheckMutationsReturnsEveryMutationWithoutReportingIt(t *testing.T) {
	found := make(mutations, 10)
	c := newTestCache(t, newFakeAPI(t, configMap("a", "x", nil), configMap("a", "y", nil)), crcache.Options{},
		WithMutationDetector(time.Hour, found.report))
	startCache(t, c)
	var list corev1.ConfigMapList
	if err := c.List(testCtx(t), &list, client.UnsafeDisableDeepCopy); err != nil {
		t.Fatal(err)
	}
	if err := c.CheckMutations(); err != nil {
		t.Fatalf("CheckMutations before any mutation: %v", err)
	}
	for i := range list.Items {
		list.Items[i].Data["name"] = changedValue
	}
	err := c.CheckMutations()
	var mutation *MutationError
	if !errors.As(err, &mutation) || strings.Count(err.Error(), "was modified after it was stored") != 2 {
		t.Fatalf("CheckMutations = %v, want two *MutationErrors", err)
	}
	found.none(t)
	if err := c.CheckMutations(); err != nil {
		t.Errorf("second CheckMutations: %v", err)
	}
}

func TestMutationDetectorPeriodicCheckFindsMutations(t *testing.T) {
	found := make(mutations, 10)
	c := newTestCache(t, newFakeAPI(t, configMap("a", "x", nil)), unsafeReads,
		WithMutationDetector(time.Minute, found.report))
	fc := clocktesting.NewFakeClock(time.Now())
	c.clock = fc
	startCache(t, c)
	var list corev1.ConfigMapList
	if err := c.List(testCtx(t), &list); err != nil {
		t.Fatal(err)
	}
	list.Items[0].Data["name"] = changedValue
	// Waiters on the fake clock: the watch's stall timer and the detector's ticker.
	waitUntil(t, "the detector's ticker", func() bool { return fc.Waiters() == 2 })
	fc.Step(time.Minute)
	assertDataMutation(t, found.next(t), "ConfigMap.v1")
}

func TestMutationDetectorComparesTheOldVersionWhenANewOneArrives(t *testing.T) {
	found := make(mutations, 10)
	c, api := newLiveCache(t, unsafeReads, WithMutationDetector(time.Hour, found.report))
	f := api.fake(gvkConfigMap)
	f.Create(liveConfigMap("x", "uid-1", "0"))
	startCache(t, c)
	ctx := testCtx(t)
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "x"}, &cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["v"] = mutatedValue
	f.Update(liveConfigMap("x", "uid-1", "1"))
	m := found.next(t)
	if m.Key != mutatedKey || m.ResourceVersion != "2" || !strings.Contains(m.Diff, `+  "v": "mutated"`) {
		t.Errorf("mutation %s rv %s diff:\n%s", m.Key, m.ResourceVersion, m.Diff)
	}
}

func TestMutationDetectorEnvironmentVariableTurnsItOnAndPanicsByDefault(t *testing.T) {
	t.Setenv(mutationDetectorEnv, "true")
	c := newTestCache(t, newFakeAPI(t, configMap("a", "x", nil)), unsafeReads)
	if !c.settings.MutationDetector || c.settings.MutationCheckPeriod != time.Second {
		t.Fatalf("settings: detector %t period %s, want on with 1s", c.settings.MutationDetector,
			c.settings.MutationCheckPeriod)
	}
	c.clock = clocktesting.NewFakeClock(time.Now()) // no periodic check while the test mutates
	startCache(t, c)
	ctx := testCtx(t)
	key := client.ObjectKey{Namespace: "a", Name: "x"}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, key, &cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["name"] = changedValue
	defer func() {
		r := recover()
		mutation, ok := r.(*MutationError)
		if !ok {
			t.Fatalf("recovered %v, want a *MutationError panic", r)
		}
		assertDataMutation(t, mutation, "ConfigMap.v1")
	}()
	_ = c.Get(ctx, key, &corev1.ConfigMap{})
	t.Fatal("Get of a mutated object did not panic")
}
