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
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	demov1alpha1 "github.com/deltacache/deltacache/api/v1alpha1"
)

// churnWithOneApp is a driver whose model holds one App with two pods, one ready.
func churnWithOneApp() (*opChurn, *opApp) {
	l := NewLayout(200)
	d := newOpChurn(nil, nil, l, 1, l.Pods)
	d.apps = map[types.NamespacedName]*opApp{}
	d.status = map[types.NamespacedName]demov1alpha1.AppStatus{}
	app := &opApp{namespace: l.AppNamespace(0), name: l.AppName(0), pods: map[string]bool{"a": true, "b": false}}
	d.apps[types.NamespacedName{Namespace: app.namespace, Name: app.name}] = app
	d.order = []*opApp{app}
	return d, app
}

func appWithStatus(app *opApp, pods, ready int32) *demov1alpha1.App {
	return &demov1alpha1.App{ObjectMeta: metav1.ObjectMeta{Namespace: app.namespace, Name: app.name},
		Status: demov1alpha1.AppStatus{Pods: pods, Ready: ready}}
}

func TestOpChurnCompletesAChangeOnlyOnTheStatusThatShowsIt(t *testing.T) {
	d, app := churnWithOneApp()
	began := time.Now()
	app.pods["c"] = false
	app.pending = &opChange{pods: 3, ready: 1, began: began}

	d.observe(appWithStatus(app, 2, 1), began.Add(5*time.Millisecond)) // the status before the change
	if app.pending == nil || len(d.lat) != 0 {
		t.Fatalf("a status without the change completed it: pending %v, latencies %v", app.pending, d.lat)
	}
	d.observe(appWithStatus(app, 3, 1), began.Add(12*time.Millisecond))
	if app.pending != nil {
		t.Fatalf("the status showing the change left it pending")
	}
	if len(d.lat) != 1 || d.lat[0] != 12 {
		t.Fatalf("latencies = %v ms, want [12]", d.lat)
	}
	if got := d.pendingCount(); got != 0 {
		t.Fatalf("pendingCount = %d, want 0", got)
	}
}

func TestOpChurnPicksNoAppWithAChangePending(t *testing.T) {
	d, app := churnWithOneApp()
	if got := d.pick(); got != app {
		t.Fatalf("pick = %v, want the only App", got)
	}
	app.pending = &opChange{pods: 1}
	if got := d.pick(); got != nil {
		t.Fatalf("pick = %v with the only App pending, want nil", got)
	}
}

func TestOperatorSectionLeadsTheReportWithRatiosForBothDeltacaches(t *testing.T) {
	o := QuickOptions()
	r := Results{}
	for c, cpu := range map[Contender]float64{DeltacacheDefaults: 6, Deltacache: 5, ControllerRuntime: 10} {
		r.Add(SectionOperator, c, Values{FigOpCPU: {cpu}, FigOpPeakRSS: {cpu * 10}, FigOpLatP99: {cpu}})
	}
	md := Report{Options: o, Results: r, Command: "make bench"}.Markdown()
	op, setup := strings.Index(md, "## O. The demo operator"), strings.Index(md, "## Setup")
	if op < 0 || setup < 0 || op > setup {
		t.Fatalf("section O at %d, Setup at %d: want O first", op, setup)
	}
	for _, want := range []string{
		"| deltacache-defaults / CR | deltacache / CR |",
		"| Manager CPU, start to end (s) | 6 | 5 | 10 | 0.6 | 0.5 |",
		"| Reconciles | — | — | — | — | — |",
		"| The operator end to end: manager CPU ≤ 0.7× on controller-runtime's cache (nothing configured) | 0.6 | ≤ 0.7 | met |",
		"| The operator end to end: peak RSS ≤ 0.5× (nothing configured) | 0.6 | ≤ 0.5 | **missed** |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Count(md, "## O. The demo operator") != 1 {
		t.Errorf("section O appears %d times, want once", strings.Count(md, "## O. The demo operator"))
	}
}
