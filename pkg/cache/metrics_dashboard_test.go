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
	"encoding/json"
	"errors"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/deltacache/deltacache/pkg/informer"
)

const dashboardPath = "../../grafana/deltacache-informers.json"

// dashboard is the part of a Grafana dashboard the test reads.
type dashboard struct {
	Title  string `json:"title"`
	Panels []struct {
		Title   string `json:"title"`
		Type    string `json:"type"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Query struct {
				Query string `json:"query"`
			} `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// metricName matches the deltacache metric names of a PromQL expression.
var metricName = regexp.MustCompile(`\bdeltacache_[a-z_]+\b`)

// dashboardQueries returns every PromQL expression of the dashboard: panel targets
// and template variable queries.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s does not parse: %v", dashboardPath, err)
	}
	var queries []string
	for _, p := range d.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, target := range p.Targets {
			queries = append(queries, target.Expr)
		}
	}
	for _, v := range d.Templating.List {
		queries = append(queries, v.Query.Query)
	}
	return queries
}

// gatherFamilies returns the metric families of controller-runtime's registry by name.
func gatherFamilies(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range families {
		out[f.GetName()] = f
	}
	return out
}

func TestDashboardQueriesOnlyMetricsTheRegistryServes(t *testing.T) {
	// Make every family have a series: a list error, a list, a watch, a handler call
	// and a cache List.
	api := newFakeAPI(t, configMap("a", "cm1", nil))
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: configMapsResource}, "", errors.New("no"))
	api.setListErrorFor(gvkConfigMap, forbidden)
	c := newTestCache(t, api, crcache.Options{})
	c.adaptive.settings.largeScan = 1 // the label List below builds an adaptive index
	startCache(t, c)
	inf, err := c.GetInformer(testCtx(t), &corev1.ConfigMap{}, crcache.BlockUntilSynced(false))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{})
	if err != nil {
		t.Fatal(err)
	}
	_ = pollCheck(t, "the Forbidden error", readyz(c), func(err error) bool {
		return err != nil && strings.Contains(err.Error(), "forbidden")
	})
	api.setListErrorFor(gvkConfigMap, nil)
	_ = pollCheck(t, "the handler to sync", func() error { return nil }, func(error) bool { return reg.HasSynced() })
	if err := c.List(testCtx(t), &corev1.ConfigMapList{}); err != nil {
		t.Fatal(err)
	}
	if err := c.List(testCtx(t), &corev1.ConfigMapList{}, client.MatchingLabels{appLabel: webApp}); err != nil {
		t.Fatal(err)
	}
	e, _, _ := c.informers.peek(entryKey{gvk: gvkConfigMap})
	_ = pollCheck(t, "the adaptive index", func() error { return nil }, func(error) bool { return len(c.adaptive.readyKeys(e)) == 1 })
	families := gatherFamilies(t)

	queried := map[string]bool{}
	for _, q := range dashboardQueries(t) {
		names := metricName.FindAllString(q, -1)
		if len(names) == 0 {
			t.Errorf("query without a deltacache metric: %s", q)
		}
		for _, name := range names {
			queried[name] = true
		}
	}
	if len(queried) < 15 {
		t.Errorf("the dashboard queries only %d metrics: %v", len(queried), queried)
	}
	// Metrics the informers describe may have no series here (the consistency check's
	// count only while a checker runs): served all the same, their type unread.
	described := map[string]bool{}
	for _, name := range describedNames(informer.DefaultMetrics) {
		described[name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(queried)) {
		base, wantType := name, dto.MetricType(-1)
		for _, suffix := range []string{"_bucket", "_count", "_sum"} {
			if trimmed, ok := strings.CutSuffix(name, suffix); ok && (families[trimmed] != nil || described[trimmed]) {
				base, wantType = trimmed, dto.MetricType_HISTOGRAM
			}
		}
		f := families[base]
		switch {
		case f == nil && described[base]:
		case f == nil:
			t.Errorf("the dashboard queries %s, which the registry does not serve", name)
		case wantType >= 0 && f.GetType() != wantType:
			t.Errorf("the dashboard queries %s, but %s is a %s", name, base, f.GetType())
		case wantType < 0 && f.GetType() == dto.MetricType_HISTOGRAM:
			t.Errorf("the dashboard queries the histogram %s without _bucket, _sum or _count", name)
		}
	}
	// Every family deltacache serves has a panel, and so has every metric the informers
	// describe, series or not.
	for _, name := range append(slices.Collect(maps.Keys(families)), slices.Collect(maps.Keys(described))...) {
		if strings.HasPrefix(name, "deltacache_") && !queried[name] && !queried[name+"_bucket"] {
			t.Errorf("no panel shows %s", name)
		}
	}
}

// fqName matches the metric name in a prometheus.Desc's String.
var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// describedNames returns the name of every metric c describes.
func describedNames(c prometheus.Collector) []string {
	ch := make(chan *prometheus.Desc)
	go func() {
		c.Describe(ch)
		close(ch)
	}()
	var names []string
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			names = append(names, m[1])
		}
	}
	return names
}
