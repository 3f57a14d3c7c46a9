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
func PeakRSS() (float64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "VmHWM:") {
			continue
		}
		fields := strings.Fields(strings.TrimPrefix(line, "VmHWM:"))
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("unexpected VmHWM line %q", line)
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
	return 0, fmt.Errorf("no VmHWM in /proc/self/status")
}

// TimeOp calls op(i) for i = 0, 1, ... until at least minIters calls and minDuration
// have passed (and at most maxIters calls), and returns the mean nanoseconds per call.
// It stops at the first error.
func TimeOp(minIters, maxIters int, minDuration time.Duration, op func(i int) error) (float64, error) {
	start := time.Now()
	n := 0
	for ; n < maxIters && (n < minIters || time.Since(start) < minDuration); n++ {
		if err := op(n); err != nil {
			return 0, err
		}
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n), nil
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
