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

package testenv

import (
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Series gathers g and returns the value of every series carrying all of labels (exact
// label values), keyed by the metric name followed by the series' other labels, sorted:
// "name{k=v,...}", or "name" when it has none. Counters and gauges give their value; a
// histogram gives two entries, its sample count as "name_count{...}" and its sample sum
// as "name_sum{...}"; other metric types are left out. A Gather error fails the test.
func Series(t testing.TB, g prometheus.Gatherer, labels map[string]string) map[string]float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatalf("gathering metrics: %v", err)
	}
	out := map[string]float64{}
	for _, f := range families {
	series:
		for _, m := range f.Metric {
			var extra []string
			matched := 0
			for _, l := range m.Label {
				if v, ok := labels[l.GetName()]; ok {
					if v != l.GetValue() {
						continue series
					}
					matched++
					continue
				}
				extra = append(extra, l.GetName()+"="+l.GetValue())
			}
			if matched != len(labels) {
				continue
			}
			suffix := ""
			if len(extra) > 0 {
				slices.Sort(extra)
				suffix = "{" + strings.Join(extra, ",") + "}"
			}
			name := f.GetName()
			switch {
			case m.Counter != nil:
				out[name+suffix] = m.Counter.GetValue()
			case m.Gauge != nil:
				out[name+suffix] = m.Gauge.GetValue()
			case m.Histogram != nil:
				out[name+"_count"+suffix] = float64(m.Histogram.GetSampleCount())
				out[name+"_sum"+suffix] = m.Histogram.GetSampleSum()
			}
		}
	}
	return out
}
