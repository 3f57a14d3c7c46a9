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

package cache_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	dcache "github.com/deltacache/deltacache/pkg/cache"
)

// The cells of the combination suite (combination_test.go): one value of each of four
// factors. comboCells picks the cells that cover every pair of values of two factors
// (all-pairs), or every cell with COMBINATION_CELLS=all.

// comboSharding is how a cell's cache shards its Pods.
type comboSharding string

const (
	shardingNone      comboSharding = "none"
	shardingUID       comboSharding = "uid"       // Sharding.ByUID
	shardingNamespace comboSharding = "namespace" // Sharding.ByNamespace
)

// comboShape is the Go type of the objects a cell reads and its handlers receive; the
// values are those of the informer metrics' "shape" label.
type comboShape string

const (
	shapeTyped        comboShape = "typed"        // *corev1.Pod
	shapeUnstructured comboShape = "unstructured" // *unstructured.Unstructured
	shapeMetadata     comboShape = "metadata"     // *metav1.PartialObjectMetadata
)

// comboCell is one combination of the factors.
type comboCell struct {
	storage  dcache.StorageMode // StorageCompact or StorageDecoded
	sharding comboSharding
	drift    bool // WithConsistencyCheck at comboCheckInterval
	shape    comboShape
}

// The factors' values, in the order of comboCell's fields.
var (
	comboStorages  = []dcache.StorageMode{dcache.StorageCompact, dcache.StorageDecoded}
	comboShardings = []comboSharding{shardingNone, shardingUID, shardingNamespace}
	comboDrifts    = []bool{false, true}
	comboShapes    = []comboShape{shapeTyped, shapeUnstructured, shapeMetadata}
)

// String names the cell by its four values, e.g.
// "storage=compact,sharding=uid,drift=on,shape=typed": the name of its subtest.
func (c comboCell) String() string {
	drift := "off"
	if c.drift {
		drift = "on"
	}
	return fmt.Sprintf("storage=%s,sharding=%s,drift=%s,shape=%s",
		strings.ToLower(string(c.storage)), c.sharding, drift, c.shape)
}

// comboCellAt returns the cell of the factors' value indexes row.
func comboCellAt(row []int) comboCell {
	return comboCell{storage: comboStorages[row[0]], sharding: comboShardings[row[1]],
		drift: comboDrifts[row[2]], shape: comboShapes[row[3]]}
}

// comboLevels is the number of values of each factor.
func comboLevels() []int {
	return []int{len(comboStorages), len(comboShardings), len(comboDrifts), len(comboShapes)}
}

// comboCells returns the cells the suite runs: all pairs of the factors
// (comboAllPairs), or their full product (comboProduct) when the environment variable
// COMBINATION_CELLS is "all".
func comboCells() []comboCell {
	rows := comboAllPairs(comboLevels())
	if os.Getenv("COMBINATION_CELLS") == "all" {
		rows = comboProduct(comboLevels())
	}
	cells := make([]comboCell, len(rows))
	for i, row := range rows {
		cells[i] = comboCellAt(row)
	}
	return cells
}

// comboProduct returns every row of value indexes of factors with levels[i] values each,
// in lexicographic order.
func comboProduct(levels []int) [][]int {
	rows := [][]int{{}}
	for _, n := range levels {
		var next [][]int
		for _, row := range rows {
			for v := range n {
				next = append(next, append(slices.Clone(row), v))
			}
		}
		rows = next
	}
	return rows
}

// comboPair is the values a and b of factors i < j.
type comboPair struct{ i, a, j, b int }

// comboPairsOf returns the pairs of values row covers.
func comboPairsOf(row []int) []comboPair {
	var out []comboPair
	for i := range row {
		for j := i + 1; j < len(row); j++ {
			out = append(out, comboPair{i, row[i], j, row[j]})
		}
	}
	return out
}

// comboAllPairs returns rows of value indexes (factor i has levels[i] values) such that
// every pair of values of two factors is in at least one row: greedily, the row of
// the full product that covers the most pairs not yet covered, the first such in
// lexicographic order, until none is left. Deterministic. For the suite's 2×3×2×3
// factors it picks 9 rows of the 36 (3×3 is the least any design can have).
func comboAllPairs(levels []int) [][]int {
	all := comboProduct(levels)
	uncovered := map[comboPair]bool{}
	for _, row := range all {
		for _, p := range comboPairsOf(row) {
			uncovered[p] = true
		}
	}
	var rows [][]int
	for len(uncovered) > 0 {
		best, bestGain := -1, 0
		for k, row := range all {
			gain := 0
			for _, p := range comboPairsOf(row) {
				if uncovered[p] {
					gain++
				}
			}
			if gain > bestGain {
				best, bestGain = k, gain
			}
		}
		rows = append(rows, all[best])
		for _, p := range comboPairsOf(all[best]) {
			delete(uncovered, p)
		}
	}
	return rows
}

// TestCombinationCellsCoverEveryPair checks the generator: every pair of values of
// two factors is in a cell, no cell twice, and the design stays small.
func TestCombinationCellsCoverEveryPair(t *testing.T) {
	for _, levels := range [][]int{comboLevels(), {2, 2, 2}, {3, 3, 3, 3}, {2, 5, 3}} {
		rows := comboAllPairs(levels)
		want := map[comboPair]bool{}
		for _, row := range comboProduct(levels) {
			for _, p := range comboPairsOf(row) {
				want[p] = true
			}
		}
		seen := map[string]bool{}
		for _, row := range rows {
			if seen[fmt.Sprint(row)] {
				t.Errorf("levels %v: row %v twice", levels, row)
			}
			seen[fmt.Sprint(row)] = true
			for _, p := range comboPairsOf(row) {
				delete(want, p)
			}
		}
		if len(want) > 0 {
			t.Errorf("levels %v: pairs not covered by %v: %v", levels, rows, want)
		}
		// The least possible is the product of the two largest factors; greedy may
		// need a few more.
		s := slices.Sorted(slices.Values(levels))
		least := s[len(s)-1] * s[len(s)-2]
		if len(rows) > least+least/2 {
			t.Errorf("levels %v: %d rows, want at most %d", levels, len(rows), least+least/2)
		}
		t.Logf("levels %v: %d rows of %d", levels, len(rows), len(comboProduct(levels)))
	}
	cells := comboCells()
	for _, c := range cells {
		t.Log(c)
	}
	if got := len(comboAllPairs(comboLevels())); got != 9 {
		t.Errorf("the suite's design has %d cells, want 9", got)
	}
}
