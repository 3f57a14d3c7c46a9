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
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Section L: the time from a watch event's write to the handler's call. The
// measurement is pkg/cache's BenchmarkEventToHandler (its wire feed: protobuf watch
// frames of server-shaped pods read by client-go's streaming decoder, both caches in
// one process, fed at once), which needs pkg/cache's test helpers: the runner builds
// that package's test binary once and runs the benchmark once per round, each rate
// for LatencyTime.

// SectionLatency is section L.
const SectionLatency = "latency"

// LatencyRates are the events per second section L feeds.
var LatencyRates = []int{100, 1000, 10000}

func figLatP50(rate int) string { return fmt.Sprintf("lat_p50_%d", rate) }
func figLatP99(rate int) string { return fmt.Sprintf("lat_p99_%d", rate) }

// rateTitle writes a rate with a thousands separator ("1,000").
func rateTitle(rate int) string {
	s := strconv.Itoa(rate)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func latencySection(o Options) Section {
	var figs []Figure
	for _, rate := range LatencyRates {
		figs = append(figs,
			Figure{figLatP50(rate), fmt.Sprintf("Event to handler p50, %s events/s", rateTitle(rate)), "µs", false},
			Figure{figLatP99(rate), fmt.Sprintf("Event to handler p99, %s events/s", rateTitle(rate)), "µs", false})
	}
	return Section{
		ID:    SectionLatency,
		Title: "L. Event to handler: a watch event's write to the handler's call",
		Description: fmt.Sprintf("pkg/cache's `BenchmarkEventToHandler/wire` (`go test ./pkg/cache -bench "+
			"EventToHandler/wire -benchtime %s`): deltacache with nothing configured and controller-runtime's "+
			"cache, each holding 20000 pods, in one process, fed at once at a steady rate, event by event: "+
			"protobuf watch frames of server-shaped pods (managedFields, an owner, a status), updates of the "+
			"pods in turn, read by client-go's streaming decoder as a REST watch reads them. The time runs from "+
			"the frame's write to the call of a handler added with GetInformer(...).AddEventHandler, as "+
			"controller-runtime's source.Kind adds it; it includes client-go's decode, which both pay. One "+
			"benchmark run per round; the ratios are per round.", o.LatencyTime),
		Contenders: []Contender{DeltacacheDefaults, ControllerRuntime},
		Figures:    figs,
	}
}

// runLatency is section L: the benchmark built once, then run once per round.
func (r *Runner) runLatency(ctx context.Context, results Results) error {
	o := r.Options
	if !o.RunsSection(SectionLatency) {
		return nil
	}
	root, err := moduleRoot()
	if err != nil {
		return fmt.Errorf("section L: %w", err)
	}
	dir, err := os.MkdirTemp("", "deltacache-bench-latency-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	exe := filepath.Join(dir, "cache.test")
	r.logf("section L: building pkg/cache's test binary")
	build := exec.CommandContext(ctx, "go", "test", "-c", "-o", exe, "./pkg/cache")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("section L: go test -c ./pkg/cache: %w\n%s", err, out)
	}
	rates := make([]string, len(LatencyRates))
	for i, rate := range LatencyRates {
		rates[i] = strconv.Itoa(rate)
	}
	for run := range o.Runs {
		r.logf("section L: run %d/%d (%d rates, %s each)", run+1, o.Runs, len(LatencyRates), o.LatencyTime)
		cmd := exec.CommandContext(ctx, exe, "-test.run", "^$",
			"-test.bench", "^BenchmarkEventToHandler$/^wire$/^rate-("+strings.Join(rates, "|")+")$",
			"-test.benchtime", o.LatencyTime.String())
		cmd.Dir = filepath.Join(root, "pkg", "cache")
		cmd.Stderr = r.Log
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("section L: BenchmarkEventToHandler: %w\n%s", err, out)
		}
		ours, theirs, err := parseEventToHandler(out)
		if err != nil {
			return fmt.Errorf("section L: %w\n%s", err, out)
		}
		results.Add(SectionLatency, DeltacacheDefaults, ours)
		results.Add(SectionLatency, ControllerRuntime, theirs)
		r.logf("section L: p99 µs deltacache %v, controller-runtime %v", ours, theirs)
	}
	return nil
}

// parseEventToHandler reads the p50 and p99 of both caches at every rate of
// LatencyRates from BenchmarkEventToHandler's output lines
// ("BenchmarkEventToHandler/wire/rate-100-2 N ns/op 92.7 controller-runtime-p50-µs ...").
// It is an error if a rate or a figure is missing.
func parseEventToHandler(out []byte) (ours, theirs Values, err error) {
	ours, theirs = Values{}, Values{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || !strings.HasPrefix(fields[0], "BenchmarkEventToHandler/wire/rate-") {
			continue
		}
		name := strings.TrimPrefix(fields[0], "BenchmarkEventToHandler/wire/rate-")
		if i := strings.IndexByte(name, '-'); i >= 0 { // the GOMAXPROCS suffix
			name = name[:i]
		}
		rate, err := strconv.Atoi(name)
		if err != nil {
			return nil, nil, fmt.Errorf("benchmark line %q: %w", sc.Text(), err)
		}
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				continue
			}
			switch fields[i+1] {
			case "deltacache-p50-µs":
				ours.add(figLatP50(rate), v)
			case "deltacache-p99-µs":
				ours.add(figLatP99(rate), v)
			case "controller-runtime-p50-µs":
				theirs.add(figLatP50(rate), v)
			case "controller-runtime-p99-µs":
				theirs.add(figLatP99(rate), v)
			}
		}
	}
	for _, rate := range LatencyRates {
		for _, fig := range []string{figLatP50(rate), figLatP99(rate)} {
			if len(ours[fig]) != 1 || len(theirs[fig]) != 1 {
				return nil, nil, fmt.Errorf("BenchmarkEventToHandler reported no single %s of both caches", fig)
			}
		}
	}
	return ours, theirs, nil
}

// moduleRoot returns the directory of the deltacache module (the git work tree the
// bench runs in).
func moduleRoot() (string, error) {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", fmt.Errorf("finding the repository's root (git rev-parse): %w", err)
	}
	root := strings.TrimSpace(string(out))
	if _, err := os.Stat(filepath.Join(root, "pkg", "cache")); err != nil {
		return "", err
	}
	return root, nil
}
