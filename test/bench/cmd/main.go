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

// Command bench runs deltacache's benchmarks against controller-runtime's cache and
// client-go's informer and writes docs/benchmarks.md and its chart; `make bench` runs
// it. Every measurement runs in a child process of this binary (-child).
//
//	bench [-quick] [-runs N] [-out docs/benchmarks.md] [-chart docs/benchmarks.png]
//	      [-raw bin/bench-raw.json] [-from bin/bench-raw.json] [-command "make bench"]
//
// -raw keeps every measured value; -from rewrites the report and chart from such a file
// without measuring. The API server section needs KUBEBUILDER_ASSETS (kube-apiserver and
// etcd); without it that section is skipped and the report says so.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/deltacache/deltacache/test/bench"
)

func main() {
	child := flag.String(bench.ChildFlag, "", "run one measurement (a JSON ChildSpec) and print its values as JSON")
	quick := flag.Bool("quick", false, "small sizes and one run, for development; writes to bin/bench-quick/ by default")
	runs := flag.Int("runs", 0, "number of runs (default 5, 1 with -quick)")
	out := flag.String("out", "",
		"Markdown report (default docs/benchmarks.md, bin/bench-quick/benchmarks.md with -quick)")
	chart := flag.String("chart", "", "PNG chart (default: the report's path with .png)")
	command := flag.String("command", "", "the command to name in the report (default: this command line)")
	raw := flag.String("raw", "",
		"where to save every measured value as JSON (default bin/bench-raw.json, bin/bench-quick/ with -quick)")
	from := flag.String("from", "", "write the report and chart from values saved by -raw instead of measuring")
	only := flag.String("only", "", "comma-separated section IDs to run (e.g. apiserver,sync-large); default all")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *child != "" {
		os.Exit(runChild(ctx, *child))
	}

	opts := bench.DefaultOptions()
	if *quick {
		opts = bench.QuickOptions()
	}
	if *runs > 0 {
		opts.Runs = *runs
	}
	if *only != "" {
		opts.Only = strings.Split(*only, ",")
	}
	if *out == "" {
		*out = filepath.Join("docs", "benchmarks.md")
		if *quick {
			*out = filepath.Join("bin", "bench-quick", "benchmarks.md")
		}
	}
	if *raw == "" {
		*raw = filepath.Join("bin", "bench-raw.json")
		if *quick {
			*raw = filepath.Join("bin", "bench-quick", "bench-raw.json")
		}
	}
	if *chart == "" {
		*chart = strings.TrimSuffix(*out, filepath.Ext(*out)) + ".png"
	}
	if *command == "" {
		*command = strings.Join(append([]string{"bench"}, os.Args[1:]...), " ")
	}
	// envtest's CRD installation logs through controller-runtime's logger: without one
	// set it prints a stack trace saying so.
	ctrllog.SetLogger(logr.Discard())
	if err := run(ctx, opts, *quick, *out, *chart, *command, *raw, *from); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

// saved is what -raw writes and -from reads.
type saved struct {
	Options bench.Options
	Quick   bool
	Info    bench.RunInfo
	Results bench.Results
	Date    time.Time
	Command string
	Machine bench.Machine
}

func run(ctx context.Context, opts bench.Options, quick bool, out, chart, command, raw, from string) error {
	var s saved
	if from != "" {
		data, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(data, &s); err != nil {
			return fmt.Errorf("%s: %w", from, err)
		}
	} else {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		runner := &bench.Runner{Options: opts, Exe: exe, Log: os.Stderr}
		results, info, err := runner.Run(ctx)
		if err != nil {
			return err
		}
		s = saved{Options: opts, Quick: quick, Info: info, Results: results, Date: time.Now(), Command: command,
			Machine: bench.DescribeMachine()}
		data, err := json.MarshalIndent(s, "", " ")
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(raw), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(raw, data, 0o644); err != nil {
			return err
		}
	}
	report := bench.Report{
		Options: s.Options, Quick: s.Quick, Machine: s.Machine, Info: s.Info, Results: s.Results,
		Date: s.Date, Command: s.Command,
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	// A partial run (-only) may have no ratio to chart (e.g. only section E, whose
	// ratios are in its own table): the report is then written without a chart.
	if rows := bench.ChartRows(s.Options, s.Results); len(rows) == 0 {
		fmt.Fprintf(os.Stderr, "bench: no ratio to chart in the sections measured: no chart written\n")
	} else {
		if err := bench.WriteChart(chart, "deltacache vs controller-runtime (CR) and client-go", rows); err != nil {
			return fmt.Errorf("writing the chart: %w", err)
		}
		if rel, err := filepath.Rel(filepath.Dir(out), chart); err == nil {
			report.Chart = filepath.ToSlash(rel)
		}
	}
	if err := os.WriteFile(out, []byte(report.Markdown()), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "bench: wrote %s (chart %q; measured in %s)\n", out, report.Chart, s.Info.Duration.Round(time.Second))
	return nil
}

// runChild runs one measurement and prints its values; it returns the exit code.
func runChild(ctx context.Context, specJSON string) int {
	// The peers log expected warnings (e.g. the in-memory API refusing WatchList);
	// a failing measurement reports its error instead.
	klog.SetLogger(logr.Discard())
	if os.Getenv("BENCH_CHILD_LOG") != "" {
		// The caches' own log lines (informer synced, how a warm start went), for
		// finding where a figure's time goes; V(0) only. (controller-runtime's
		// logger can be set once.)
		ctrllog.SetLogger(funcr.New(func(prefix, args string) {
			fmt.Fprintln(os.Stderr, "bench child:", prefix, args)
		}, funcr.Options{}))
	} else {
		ctrllog.SetLogger(logr.Discard())
	}
	var spec bench.ChildSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Fprintf(os.Stderr, "bench child: %v\n", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	values, err := bench.RunChild(ctx, spec)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench child %s %s: %v\n", spec.Workload, spec.Contender, err)
		return 1
	}
	if err := json.NewEncoder(io.Writer(os.Stdout)).Encode(values); err != nil {
		fmt.Fprintf(os.Stderr, "bench child: %v\n", err)
		return 1
	}
	return 0
}
