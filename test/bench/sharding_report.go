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
	"fmt"
	"strings"
)

// shardingSection renders section E: one row per configuration (the two unsharded
// baselines, then R replicas), with, for each of s.Figures, the median over runs of
// the mean per replica and, for the sharded rows, its ratio to the unsharded
// deltacache replica (÷ dc) and to controller-runtime (÷ CR), paired per run; then
// the pods held per replica (min–max) and their sum.
func (rep Report) shardingSection(b *strings.Builder, s Section) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("## %s\n\n%s\n\n", s.Title, s.Description)
	if rep.Info.ShardingSkipped != "" {
		p("Skipped: %s\n\n", rep.Info.ShardingSkipped)
		return
	}
	p("| Configuration |")
	for _, f := range s.Figures {
		p(" %s (%s) | ÷ dc | ÷ CR |", f.Title, f.Unit)
	}
	p(" Pods held per replica (min–max) | Pods held, sum |\n| --- |")
	p("%s ---: | ---: |\n", strings.Repeat(" ---: | ---: | ---: |", len(s.Figures)))
	r := rep.Results
	for _, c := range s.Contenders {
		if _, ok := r[SectionSharding][FigShardObjectsSum][c]; !ok {
			continue
		}
		p("| %s |", shardConfigTitle(c))
		_, sharded := ShardReplicas(c)
		for _, f := range s.Figures {
			p(" %s |", medianCell(r, f.ID, c))
			for _, peer := range []Contender{Deltacache, ControllerRuntime} {
				ratio, ok := r.Ratio(SectionSharding, f.ID, c, peer)
				if !sharded || !ok {
					p(" — |")
					continue
				}
				p(" %s |", formatNumber(ratio))
			}
		}
		p(" %s–%s | %s |\n", medianCell(r, FigShardObjectsMin, c), medianCell(r, FigShardObjectsMax, c),
			medianCell(r, FigShardObjectsSum, c))
	}
	p("\n")
}

// shardConfigTitle is the row title of a contender of section E.
func shardConfigTitle(c Contender) string {
	if n, ok := ShardReplicas(c); ok {
		return fmt.Sprintf("deltacache, R = %d sharded replicas (per replica)", n)
	}
	return ContenderTitle(c) + ", unsharded"
}

// medianCell renders the median of c's values of figure in section E, or "—".
func medianCell(r Results, figure string, c Contender) string {
	if v, ok := r.Median(SectionSharding, figure, c); ok {
		return formatNumber(v)
	}
	return "—"
}
