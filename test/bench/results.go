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
	"math"
	"slices"
)

// Results holds every measured value: section → figure ID → contender → one value per
// run (or per repetition, for figures measured several times in one process). Values of
// the same index were measured in the same round, so their ratio is a paired one.
type Results map[string]map[string]map[Contender][]float64

// Add records v (a child's Values) for contender in section.
func (r Results) Add(section string, c Contender, v Values) {
	figs, ok := r[section]
	if !ok {
		figs = map[string]map[Contender][]float64{}
		r[section] = figs
	}
	for id, xs := range v {
		if figs[id] == nil {
			figs[id] = map[Contender][]float64{}
		}
		figs[id][c] = append(figs[id][c], xs...)
	}
}

// Values returns the values of contender for section/figure (nil if none).
func (r Results) Values(section, figure string, c Contender) []float64 {
	return r[section][figure][c]
}

// Median returns the median of contender's values for section/figure, and false if
// there are none.
func (r Results) Median(section, figure string, c Contender) (float64, bool) {
	return Median(r.Values(section, figure, c))
}

// Ratio returns the median over rounds of value(c)/value(peer) for section/figure, using
// the rounds both have; false if they share none or a peer value is zero.
func (r Results) Ratio(section, figure string, c, peer Contender) (float64, bool) {
	return r.FigureRatio(section, figure, c, figure, peer)
}

// FigureRatio is Ratio of figure of c over peerFigure of peer (c and peer may be one
// contender).
func (r Results) FigureRatio(section, figure string, c Contender, peerFigure string, peer Contender) (float64, bool) {
	a, b := r.Values(section, figure, c), r.Values(section, peerFigure, peer)
	n := min(len(a), len(b))
	ratios := make([]float64, 0, n)
	for i := range n {
		if b[i] == 0 {
			return 0, false
		}
		ratios = append(ratios, a[i]/b[i])
	}
	return Median(ratios)
}

// Median returns the median of xs (the mean of the two middle values for an even
// count), and false for an empty slice. NaNs are not expected.
func Median(xs []float64) (float64, bool) {
	if len(xs) == 0 {
		return 0, false
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	mid := len(s) / 2
	if len(s)%2 == 1 {
		return s[mid], true
	}
	return (s[mid-1] + s[mid]) / 2, true
}

// Better reports whether a deltacache/peer ratio favours deltacache: below 1 for a cost
// (time, memory), above 1 for a rate.
func Better(ratio float64, higherIsBetter bool) bool {
	if higherIsBetter {
		return ratio > 1
	}
	return ratio < 1
}

// Advantage turns a deltacache/peer ratio into "how many times better deltacache is":
// peer/deltacache for a cost, deltacache/peer for a rate; below 1 means worse.
func Advantage(ratio float64, higherIsBetter bool) float64 {
	if higherIsBetter || ratio == 0 {
		return ratio
	}
	return 1 / ratio
}

// roundSig rounds x to 3 significant digits.
func roundSig(x float64) float64 {
	if x == 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	p := math.Pow(10, 2-math.Floor(math.Log10(math.Abs(x))))
	return math.Round(x*p) / p
}
