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
	"slices"
	"strings"
	"testing"
)

func TestMedianOfOddAndEvenCounts(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
		ok   bool
	}{
		{nil, 0, false},
		{[]float64{3}, 3, true},
		{[]float64{5, 1, 3}, 3, true},
		{[]float64{4, 1, 3, 2}, 2.5, true},
	} {
		got, ok := Median(tc.xs)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Median(%v) = %v, %v; want %v, %v", tc.xs, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRatioIsTheMedianOfPairedRatios(t *testing.T) {
	r := Results{}
	r.Add("s", Deltacache, Values{"f": {1, 10, 4}})
	r.Add("s", ClientGo, Values{"f": {2, 10, 1}})
	// Paired ratios 0.5, 1, 4 → 1; the ratio of medians would be 4/2 = 2.
	got, ok := r.Ratio("s", "f", Deltacache, ClientGo)
	if !ok || got != 1 {
		t.Fatalf("Ratio = %v, %v; want 1, true", got, ok)
	}
	if _, ok := r.Ratio("s", "f", Deltacache, ControllerRuntime); ok {
		t.Fatal("Ratio against a contender without values reported ok")
	}
}

func TestResultsAddAppendsRepetitions(t *testing.T) {
	r := Results{}
	r.Add("s", Deltacache, Values{"f": {1}})
	r.Add("s", Deltacache, Values{"f": {2, 3}})
	if got := r.Values("s", "f", Deltacache); len(got) != 3 || got[0] != 1 || got[2] != 3 {
		t.Fatalf("Values = %v, want [1 2 3]", got)
	}
}

func TestAdvantageAndDescribeRatio(t *testing.T) {
	for _, tc := range []struct {
		ratio  float64
		higher bool
		adv    float64
		text   string
	}{
		{0.25, false, 4, "4× better"},
		{2, false, 0.5, "2× worse"},
		{3, true, 3, "3× better"},
		{0.5, true, 0.5, "2× worse"},
	} {
		if got := Advantage(tc.ratio, tc.higher); got != tc.adv {
			t.Errorf("Advantage(%v, %v) = %v, want %v", tc.ratio, tc.higher, got, tc.adv)
		}
		if got := DescribeRatio(tc.ratio, tc.higher); got != tc.text {
			t.Errorf("DescribeRatio(%v, %v) = %q, want %q", tc.ratio, tc.higher, got, tc.text)
		}
	}
}

func TestFormatNumber(t *testing.T) {
	for x, want := range map[float64]string{
		0:         "0",
		0.0123456: "0.0123",
		0.0001234: "0.000123",
		1.23456:   "1.23",
		123.456:   "123",
		9876.5:    "9880",
		123456.7:  "123,000",
		1234567:   "1,230,000",
	} {
		if got := formatNumber(x); got != want {
			t.Errorf("formatNumber(%v) = %q, want %q", x, got, want)
		}
	}
}

func TestEvaluateAppliesBoundsInTheirDirection(t *testing.T) {
	r := Results{}
	r.Add(SectionAPIServer, Deltacache, Values{FigSync: {0.7}})
	r.Add(SectionAPIServer, ClientGo, Values{FigSync: {1}})
	r.Add(SectionThroughput, Deltacache, Values{FigThroughput: {150}})
	r.Add(SectionThroughput, ClientGo, Values{FigThroughput: {100}})
	r.Add(SectionStuck, Deltacache, Values{FigStuckFew: {10}, FigStuckMany: {11}})
	r.Add(SectionStuck, ClientGo, Values{FigStuckFew: {10}, FigStuckMany: {100}})
	r.Add(SectionAPIServer, DeltacacheDefaults, Values{FigHeapPerPod: {1300}})
	r.Add(SectionAPIServer, ControllerRuntime, Values{FigHeapPerPod: {5000}})
	got := map[string]TargetResult{}
	o := DefaultOptions()
	o.Keys = 100 // stuck-handler floor: 0.098 MiB
	for _, res := range Evaluate(r, Targets(o)) {
		got[res.Goal] = res
	}
	check := func(goal string, measured, met bool, ratio float64) {
		t.Helper()
		res, ok := got[goal]
		if !ok {
			t.Fatalf("no target %q", goal)
		}
		if res.Measured != measured || res.Met != met || (measured && res.Ratio != ratio) {
			t.Errorf("%s: measured %v met %v ratio %v; want %v %v %v", goal, res.Measured, res.Met, res.Ratio,
				measured, met, ratio)
		}
	}
	check("Sync time ≤ 0.8× client-go", true, true, 0.7)
	check("Sync time ≤ 1.0× controller-runtime's", false, false, 0)
	// Targets of deltacache's defaults read that contender, not the label-indexed one.
	check("Heap per pod after sync ≤ 0.25× controller-runtime's default (deltacache's defaults)", true, false, 0.26)
	check("In-process pipeline throughput ≥ 2× client-go's", true, false, 1.5)
	const stuck = "Stuck-handler memory bounded by the number of keys (grows less than 1.5× from 10% to 100% of " +
		"the events, or stays under 1 KiB per key)"
	check(stuck, true, true, 1.1)
	if d := got[stuck].Detail; !strings.Contains(d, "client-go 10 → 100 MiB (×10.00)") {
		t.Errorf("stuck-handler detail %q does not describe client-go's growth", d)
	}

	// Growth beyond the bound misses, unless the memory held stays under the floor.
	grown := Results{}
	grown.Add(SectionStuck, Deltacache, Values{FigStuckFew: {0.01}, FigStuckMany: {0.05}})
	stuckAt := slices.IndexFunc(Targets(o), func(t Target) bool { return t.Goal == stuck })
	if res := Evaluate(grown, Targets(o))[stuckAt]; res.Goal != stuck || !res.Met || res.Ratio != 5 {
		t.Errorf("tiny growing memory: %+v, want met with ratio 5 (under the floor)", res)
	}
	grown = Results{}
	grown.Add(SectionStuck, Deltacache, Values{FigStuckFew: {1}, FigStuckMany: {5}})
	if res := Evaluate(grown, Targets(o))[stuckAt]; res.Met {
		t.Errorf("memory growing 5× above the floor: %+v, want missed", res)
	}
	// Nothing held after the few events: no growth ratio, but bounded by the floor.
	none := Results{}
	none.Add(SectionStuck, Deltacache, Values{FigStuckFew: {0}, FigStuckMany: {0.05}})
	if res := Evaluate(none, Targets(o))[stuckAt]; !res.Measured || !res.Met {
		t.Errorf("0 MiB then 0.05 MiB: %+v, want measured and met (under the floor)", res)
	}
	none = Results{}
	none.Add(SectionStuck, Deltacache, Values{FigStuckFew: {0}, FigStuckMany: {500}})
	if res := Evaluate(none, Targets(o))[stuckAt]; res.Met {
		t.Errorf("0 MiB then 500 MiB: %+v, want not met", res)
	}
}

func TestReportNamesEveryFigureAndRatio(t *testing.T) {
	o := QuickOptions()
	r := Results{}
	for _, s := range o.Sections() {
		for _, c := range s.Contenders {
			v := Values{}
			for _, f := range s.Figures {
				v[f.ID] = []float64{2}
			}
			v[FigListRequests], v[FigWatchListRequests] = []float64{0}, []float64{1}
			r.Add(s.ID, c, v)
		}
	}
	md := Report{Options: o, Machine: Machine{CPU: "test CPU", Cores: 2}, Results: r, Command: "make bench",
		Chart: "benchmarks.png"}.Markdown()
	for _, want := range []string{
		"Generated by `make bench`",
		"| Machine | test CPU, 2 cores",
		"| Time to sync (s) | 2 | 2 | 2 | 2 | 2 | 1 | 1 | 1 |",
		"| Updates per second (events/s) ↑ | 2 | 2 | 1 |",
		"deltacache 1 WatchList stream(s)",
		"![deltacache / peer ratios](benchmarks.png)",
		"| Sync time ≤ 0.8× client-go | 1 | ≤ 0.8 | **missed** |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if rows := ChartRows(o, r); len(rows) == 0 || rows[0].Advantage != 1 {
		t.Errorf("ChartRows = %v, want rows with advantage 1", rows)
	}
}

func TestReportExplainsWhatBoundsTheLabelListSpeedUp(t *testing.T) {
	o := QuickOptions()
	r := Results{}
	r.Add(SectionAPIServer, ControllerRuntime, Values{FigListLabel: {5000}})
	r.Add(SectionAPIServer, Deltacache, Values{FigListLabel: {400}, FigListLabelAlloc: {360},
		FigListLabelGC: {200}, FigListLabelShared: {80}})
	md := Report{Options: o, Results: r}.Markdown()
	for _, want := range []string{
		"controller-runtime's takes 5000 µs, deltacache's 400 µs",
		"(360 KiB allocated per List",
		"(200 µs of CPU per List",
		"takes 80 µs: a List that fills a PodList is bounded near 62.5× faster",
		"and near 12.5× with deep copies",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if md2 := (Report{Options: o, Results: Results{}}).Markdown(); strings.Contains(md2, "What bounds") {
		t.Error("report explains the bound without the figures it needs")
	}
}
