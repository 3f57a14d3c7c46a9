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

import "fmt"

// Target is one of the project's performance goals (issue "make bench"), stated as a
// bound on a deltacache/peer ratio of one figure.
type Target struct {
	Goal    string
	Section string
	Figure  string
	// Contender is the deltacache configuration measured; zero = Deltacache.
	Contender Contender
	Peer      Contender
	// PeerFigure, when set, is the figure of Peer the ratio divides by (Figure of
	// Contender over PeerFigure of Peer, e.g. one contender's peak over its own steady
	// RSS); empty: Figure.
	PeerFigure string
	// Bound is the ratio's limit: at most Bound for a cost, at least Bound when AtLeast.
	Bound   float64
	AtLeast bool
	// FloorMiB, for the stuck-handler goal, is a memory held that counts as bounded
	// whatever its growth: tiny figures grow by noise alone.
	FloorMiB float64
}

// TargetResult is a Target evaluated on Results.
type TargetResult struct {
	Target
	// Ratio is the measured deltacache/peer ratio (for the stuck-handler goal:
	// deltacache's memory after many events / after few).
	Ratio float64
	// Measured is false when the figure is missing (section skipped).
	Measured bool
	Met      bool
	// Detail explains the figure in words.
	Detail string
}

// Targets are the goals of the issue, for the sizes of o.
func Targets(o Options) []Target {
	cost := func(goal, section, figure string, peer Contender, bound float64) Target {
		return Target{Goal: goal, Section: section, Figure: figure, Peer: peer, Bound: bound}
	}
	rate := func(goal, section, figure string, peer Contender, bound float64) Target {
		return Target{Goal: goal, Section: section, Figure: figure, Peer: peer, Bound: bound, AtLeast: true}
	}
	stuck := cost("Stuck-handler memory bounded by the number of keys (grows less than 1.5× from 10% to 100% "+
		"of the events, or stays under 1 KiB per key)", SectionStuck, FigStuckMany, Deltacache, 1.5)
	stuck.FloorMiB = float64(o.Keys) * 1024 / (1 << 20)
	defaults := func(t Target) Target {
		t.Contender = DeltacacheDefaults
		return t
	}
	compactContender := func(t Target) Target {
		t.Contender = DeltacacheCompact
		return t
	}
	restart := func(t Target) Target {
		t.Contender = RestartResumed
		return t
	}
	diffed := func(t Target) Target {
		t.Contender = RestartDiffed
		return t
	}
	sharded := func(t Target) Target {
		t.Contender = ShardedContender(3)
		return t
	}
	latency := func(rate int) Target {
		return defaults(cost(fmt.Sprintf("Event to handler p99 ≤ 1.0× controller-runtime's at %s events/s (nothing configured)",
			rateTitle(rate)), SectionLatency, figLatP99(rate), ControllerRuntime, 1.0))
	}
	return []Target{
		defaults(cost("The operator end to end: manager CPU ≤ 0.7× on controller-runtime's cache (nothing configured)",
			SectionOperator, FigOpCPU, ControllerRuntime, 0.7)),
		defaults(cost("The operator end to end: peak RSS ≤ 0.5× (nothing configured)",
			SectionOperator, FigOpPeakRSS, ControllerRuntime, 0.5)),
		defaults(cost("The operator end to end: reconcile latency p99 ≤ 1.0× (nothing configured)",
			SectionOperator, FigOpLatP99, ControllerRuntime, 1.0)),
		latency(100), latency(1000), latency(10000),
		restart(cost("Restart resumed within the watch window: time to synced ≤ 0.1× a cold start's",
			SectionRestart, FigRestartSync, RestartCold, 0.1)),
		restart(cost("Restart resumed within the watch window: bytes received ≤ 0.05× a cold start's",
			SectionRestart, FigRestartBytes, RestartCold, 0.05)),
		diffed(cost("Restart after a 410 (metadata diff): time to synced ≤ 0.5× a cold start's",
			SectionRestart, FigRestartSync, RestartCold, 0.5)),
		diffed(cost("Restart after a 410 (metadata diff): bytes received ≤ 0.25× a cold start's",
			SectionRestart, FigRestartBytes, RestartCold, 0.25)),
		restart(Target{Goal: "Restart resumed: peak RSS until synced ≤ 1.2× its RSS after sync",
			Section: SectionRestart, Figure: FigRestartPeakRSS, Peer: RestartResumed,
			PeerFigure: FigRestartSteadyRSS, Bound: 1.2}),
		restart(cost("Restart resumed: peak RSS ≤ 0.5× controller-runtime's cold start",
			SectionRestart, FigRestartPeakRSS, ControllerRuntime, 0.5)),
		defaults(cost("Heap per pod after sync ≤ 0.25× controller-runtime's default (deltacache's defaults)",
			SectionAPIServer, FigHeapPerPod, ControllerRuntime, 0.25)),
		defaults(cost("Heap per pod after sync ≤ 0.35× controller-runtime with TransformStripManagedFields",
			SectionAPIServer, FigHeapPerPod, ControllerRuntimeStrip, 0.35)),
		defaults(cost("Peak RSS during sync ≤ 0.5× controller-runtime's default", SectionAPIServer, FigPeakRSS,
			ControllerRuntime, 0.5)),
		defaults(cost("Sync time ≤ 1.0× controller-runtime's", SectionAPIServer, FigSync, ControllerRuntime, 1.0)),
		defaults(cost("Get by key ≤ 1.5× controller-runtime's", SectionAPIServer, FigGet, ControllerRuntime, 1.5)),
		cost("List by label ≥ 5× faster than controller-runtime (all namespaces, ~100 results)",
			SectionAPIServer, FigListLabel, ControllerRuntime, 0.2),
		cost("List by label in its namespace no slower than controller-runtime",
			SectionAPIServer, FigListLabelNS, ControllerRuntime, 1.0),
		cost("List by field index no slower than controller-runtime", SectionAPIServer, FigListNode,
			ControllerRuntime, 1.0),
		cost("Sync time ≤ 0.8× client-go", SectionAPIServer, FigSync, ClientGo, 0.8),
		cost(fmt.Sprintf("In-process initial sync of %d pods ≤ 0.8× client-go's time", o.SyncLarge),
			SectionSyncLarge, FigPipeSync, ClientGo, 0.8),
		cost(fmt.Sprintf("In-process initial sync of %d pods ≤ 0.8× client-go's time", o.SyncHuge),
			SectionSyncHuge, FigPipeSync, ClientGo, 0.8),
		compactContender(cost(fmt.Sprintf("In-process initial sync of %d small objects, listed at once, ≤ 1.0× client-go's time (compact, compressed)", o.SmallObjects),
			SectionSyncSmallObjects, FigPipeSync, ClientGo, 1.0)),
		rate(fmt.Sprintf("Update throughput with %d objects stored ≥ 1.5× client-go's", o.KeysLarge),
			SectionThroughputLarge, FigThroughput, ClientGo, 1.5),
		rate(fmt.Sprintf("Update throughput with %d objects stored ≥ 1.5× client-go's", o.KeysHuge),
			SectionThroughputHuge, FigThroughput, ClientGo, 1.5),
		rate("Store writes with 10 List readers ≥ 100× client-go's", SectionStore, FigWrites10, ClientGo, 100),
		stuck,
		rate("In-process pipeline throughput ≥ 2× client-go's", SectionThroughput, FigThroughput, ClientGo, 2),
		{Goal: "Update throughput while snapshots are written ≥ 0.9× without (compact storage)",
			Section: SectionThroughput, Figure: FigThroughput, Contender: DeltacacheSnapshots, Peer: DeltacacheCompact,
			Bound: 0.9, AtLeast: true},
		sharded(cost("Pod bytes received per replica with 3 sharded replicas ≤ 0.4× one unsharded replica",
			SectionSharding, FigShardBytes, Deltacache, 0.4)),
	}
}

// Evaluate computes every target on r.
func Evaluate(r Results, targets []Target) []TargetResult {
	out := make([]TargetResult, 0, len(targets))
	for _, t := range targets {
		res := TargetResult{Target: t}
		if t.Section == SectionStuck {
			res.Ratio, res.Measured = stuckGrowth(r, Deltacache)
			if !res.Measured {
				// Nothing held after the few events (so no growth ratio): bounded
				// if what the many events leave is under the floor.
				if many, ok := r.Median(SectionStuck, FigStuckMany, Deltacache); ok && many <= t.FloorMiB {
					res.Measured = true
					res.Detail = fmt.Sprintf("deltacache holds %s MiB after the many events (floor %s MiB)",
						formatNumber(many), formatNumber(t.FloorMiB))
				}
			} else if cg, ok := stuckGrowth(r, ClientGo); ok {
				few, _ := r.Median(SectionStuck, FigStuckFew, Deltacache)
				many, _ := r.Median(SectionStuck, FigStuckMany, Deltacache)
				cgFew, _ := r.Median(SectionStuck, FigStuckFew, ClientGo)
				cgMany, _ := r.Median(SectionStuck, FigStuckMany, ClientGo)
				res.Detail = fmt.Sprintf("deltacache %s → %s MiB (×%.2f; floor %s MiB); client-go %s → %s MiB (×%.2f)",
					formatNumber(few), formatNumber(many), res.Ratio, formatNumber(t.FloorMiB),
					formatNumber(cgFew), formatNumber(cgMany), cg)
			}
		} else {
			c := t.Contender
			if c == "" {
				c = Deltacache
			}
			if t.PeerFigure != "" {
				res.Ratio, res.Measured = r.FigureRatio(t.Section, t.Figure, c, t.PeerFigure, t.Peer)
			} else {
				res.Ratio, res.Measured = r.Ratio(t.Section, t.Figure, c, t.Peer)
			}
			if res.Measured {
				res.Detail = ContenderTitle(c) + " is " + DescribeRatio(res.Ratio, t.AtLeast)
			}
		}
		if res.Measured {
			if many, ok := r.Median(t.Section, t.Figure, Deltacache); ok && t.Section == SectionStuck && t.FloorMiB > 0 && many <= t.FloorMiB {
				res.Met = true
			} else if t.AtLeast {
				res.Met = res.Ratio >= t.Bound
			} else {
				res.Met = res.Ratio <= t.Bound
			}
		}
		out = append(out, res)
	}
	return out
}

// stuckGrowth is the median over runs of memory after many events / after few.
func stuckGrowth(r Results, c Contender) (float64, bool) {
	few, many := r.Values(SectionStuck, FigStuckFew, c), r.Values(SectionStuck, FigStuckMany, c)
	n := min(len(few), len(many))
	ratios := make([]float64, 0, n)
	for i := range n {
		if few[i] > 0 {
			ratios = append(ratios, many[i]/few[i])
		}
	}
	return Median(ratios)
}

// DescribeRatio renders a deltacache/peer ratio as "3.2× better" or "1.5× worse".
func DescribeRatio(ratio float64, higherIsBetter bool) string {
	adv := Advantage(ratio, higherIsBetter)
	switch {
	case adv == 0:
		return "not comparable"
	case adv >= 1:
		return fmt.Sprintf("%.3g× better", adv)
	default:
		return fmt.Sprintf("%.3g× worse", 1/adv)
	}
}
