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
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// MemSnapshot is the part of runtime.MemStats the workloads report.
type MemSnapshot struct {
	// HeapAlloc is the bytes of live heap objects (after a GC when taken by LiveHeap).
	HeapAlloc uint64
	// Mallocs is the cumulative count of heap objects allocated.
	Mallocs uint64
	// TotalAlloc is the cumulative bytes allocated for heap objects.
	TotalAlloc uint64
}

// LiveHeap runs two garbage collections (the second frees what finalizers of the first
// released) and returns the memory statistics after them: HeapAlloc is then the heap in
// use by reachable objects, which is what pprof calls inuse_space.
func LiveHeap() MemSnapshot {
	runtime.GC()
	runtime.GC()
	return ReadMem()
}

// ReadMem returns the current memory statistics without collecting.
func ReadMem() MemSnapshot {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return MemSnapshot{HeapAlloc: ms.HeapAlloc, Mallocs: ms.Mallocs, TotalAlloc: ms.TotalAlloc}
}

// HeapGrowth returns after.HeapAlloc - before.HeapAlloc, or 0 if the heap shrank.
func HeapGrowth(before, after MemSnapshot) float64 {
	if after.HeapAlloc < before.HeapAlloc {
		return 0
	}
	return float64(after.HeapAlloc - before.HeapAlloc)
}

// PeakRSS returns the process's peak resident set size in bytes (VmHWM of
// /proc/self/status, Linux only).
func PeakRSS() (float64, error) { return procStatusBytes("VmHWM:") }

// procStatusBytes returns the field of /proc/self/status named by prefix (a size in kB,
// such as "VmHWM:" or "VmRSS:") in bytes.
func procStatusBytes(prefix string) (float64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		fields := strings.Fields(strings.TrimPrefix(line, prefix))
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("unexpected %s line %q", prefix, line)
		}
		kb, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return 0, err
		}
		return kb * 1024, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no %s in /proc/self/status", prefix)
}

// TimeOp calls op(i) for i = 0, 1, ... until at least minIters calls and minDuration
// have passed (and at most maxIters calls), and returns the mean nanoseconds per call.
// It stops at the first error.
func TimeOp(minIters, maxIters int, minDuration time.Duration, op func(i int) error) (float64, error) {
	cost, err := MeasureOp(Sampling{MinCalls: minIters, MaxCalls: maxIters, MinDuration: minDuration}, op)
	return cost.NS, err
}

// Sampling says how many times MeasureOp calls an operation.
type Sampling struct {
	// MinCalls and MinDuration must both be reached; MaxCalls stops the calls anyway.
	MinCalls, MaxCalls int
	MinDuration        time.Duration
	// MinGCCycles, when positive, keeps calling past MinDuration until that many
	// garbage collections have completed or MaxDuration has passed, so that the
	// collector's share of the cost is measured over whole cycles.
	MinGCCycles int
	MaxDuration time.Duration
}

// OpCost is the mean cost of one call of an operation.
type OpCost struct {
	// NS is the wall-clock nanoseconds per call.
	NS float64
	// AllocBytes is the heap bytes allocated per call (runtime/metrics
	// /gc/heap/allocs:bytes).
	AllocBytes float64
	// GCCPUNS is the garbage collector's CPU nanoseconds per call, on every core
	// (/cpu/classes/gc/total:cpu-seconds): the collections the calls' garbage brings
	// on, each of which marks the whole live heap, shared out over the calls. It means
	// little unless GCCycles is at least 1.
	GCCPUNS float64
	// GCCycles is the number of collections completed while the calls ran.
	GCCycles uint64
}

// MeasureOp calls op(i) for i = 0, 1, ... as s says and returns the mean cost of a
// call. It stops at the first error. The process must be otherwise idle for the
// allocation and collector figures to be the op's.
func MeasureOp(s Sampling, op func(i int) error) (OpCost, error) {
	samples := []metrics.Sample{
		{Name: "/gc/heap/allocs:bytes"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}, {Name: "/gc/cycles/total:gc-cycles"},
	}
	metrics.Read(samples)
	allocs, gcCPU, cycles := samples[0].Value.Uint64(), samples[1].Value.Float64(), samples[2].Value.Uint64()
	more := func(n int, elapsed time.Duration) bool {
		if n >= s.MaxCalls {
			return false
		}
		if n < s.MinCalls || elapsed < s.MinDuration {
			return true
		}
		if s.MinGCCycles <= 0 || elapsed >= s.MaxDuration {
			return false
		}
		metrics.Read(samples[2:])
		return samples[2].Value.Uint64()-cycles < uint64(s.MinGCCycles)
	}
	start := time.Now()
	n := 0
	for ; more(n, time.Since(start)); n++ {
		if err := op(n); err != nil {
			return OpCost{}, err
		}
	}
	elapsed := time.Since(start)
	metrics.Read(samples)
	calls := float64(max(n, 1))
	return OpCost{
		NS:         float64(elapsed.Nanoseconds()) / calls,
		AllocBytes: float64(samples[0].Value.Uint64()-allocs) / calls,
		GCCPUNS:    (samples[1].Value.Float64() - gcCPU) * 1e9 / calls,
		GCCycles:   samples[2].Value.Uint64() - cycles,
	}, nil
}

// pollUntil calls cond every interval until it returns true or ctx ends.
func pollUntil(ctx context.Context, interval time.Duration, cond func() bool) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}
