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
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// ChartRow is one bar of the ratio chart.
type ChartRow struct {
	Label string
	// Advantage is how many times better deltacache is than the peer (below 1: worse).
	Advantage float64
}

// ChartRows returns one row per (section, figure, peer) that has a ratio, in report
// order.
func ChartRows(o Options, r Results) []ChartRow {
	var rows []ChartRow
	for _, s := range o.Sections() {
		if s.ID == SectionSharding {
			// Its ratios are per replica of several configurations: its own table.
			continue
		}
		prefix, _, _ := strings.Cut(s.Title, ".")
		for _, f := range s.Figures {
			for _, peer := range Peers {
				if !slices.Contains(s.Contenders, peer) {
					continue
				}
				ratio, ok := r.Ratio(s.ID, f.ID, s.Ours(), peer)
				if !ok || ratio <= 0 {
					continue
				}
				rows = append(rows, ChartRow{
					Label:     fmt.Sprintf("[%s] %s vs %s", prefix, f.Title, shortTitle(peer)),
					Advantage: Advantage(ratio, f.HigherIsBetter),
				})
			}
		}
	}
	return rows
}

// WriteChart saves rows as a horizontal bar chart (PNG) at path: one bar per row, the
// log10 of the advantage, green to the right when deltacache is better, red to the left
// when it is worse.
func WriteChart(path, title string, rows []ChartRow) error {
	if len(rows) == 0 {
		return fmt.Errorf("no ratios to chart")
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "times better than the peer (log scale; left of 1× = worse)"
	better := make(plotter.Values, len(rows))
	worse := make(plotter.Values, len(rows))
	labels := make([]string, len(rows))
	lo, hi := -1.0, 1.0
	for i, row := range rows {
		// The first row at the top: NominalY counts from the bottom.
		j := len(rows) - 1 - i
		x := math.Log10(row.Advantage)
		if x >= 0 {
			better[j] = x
		} else {
			worse[j] = x
		}
		labels[j] = row.Label
		lo, hi = min(lo, math.Floor(x)), max(hi, math.Ceil(x))
	}
	for _, bars := range []struct {
		values plotter.Values
		color  color.Color
	}{
		{better, color.RGBA{R: 0x2e, G: 0x9e, B: 0x4f, A: 0xff}},
		{worse, color.RGBA{R: 0xd6, G: 0x45, B: 0x3d, A: 0xff}},
	} {
		bc, err := plotter.NewBarChart(bars.values, vg.Points(9))
		if err != nil {
			return err
		}
		bc.Horizontal = true
		bc.Color = bars.color
		bc.LineStyle.Width = 0
		p.Add(bc)
	}
	p.NominalY(labels...)
	p.Y.Tick.Label.Font.Size = vg.Points(8)
	p.X.Min, p.X.Max = lo-0.1, hi+0.25 // room for the outermost tick labels
	var ticks []plot.Tick
	for e := int(lo); e <= int(hi); e++ {
		ticks = append(ticks, plot.Tick{Value: float64(e), Label: tickLabel(e)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	grid := plotter.NewGrid()
	grid.Horizontal.Width = 0
	p.Add(grid)
	height := vg.Length(len(rows))*vg.Points(13) + vg.Inch
	return p.Save(10*vg.Inch, height, path)
}

// tickLabel renders 10^e as "1×", "10×", "1/10×".
func tickLabel(e int) string {
	if e >= 0 {
		return fmt.Sprintf("%.0f×", math.Pow(10, float64(e)))
	}
	return fmt.Sprintf("1/%.0f×", math.Pow(10, float64(-e)))
}
