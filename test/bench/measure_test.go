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
	"errors"
	"testing"
	"time"
)

var measureSink []byte

func allocMiB(int) error {
	measureSink = make([]byte, 1<<20)
	return nil
}

func TestMeasureOpStopsAtMinCallsWithoutACycleTarget(t *testing.T) {
	calls := 0
	cost, err := MeasureOp(Sampling{MinCalls: 7, MaxCalls: 100}, func(i int) error {
		if i != calls {
			t.Errorf("call %d got index %d", calls, i)
		}
		calls++
		return allocMiB(i)
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 7 {
		t.Errorf("%d calls, want 7", calls)
	}
	if cost.AllocBytes < 1<<20 {
		t.Errorf("AllocBytes = %v per call, want at least 1 MiB", cost.AllocBytes)
	}
	if cost.NS <= 0 {
		t.Errorf("NS = %v, want a positive duration", cost.NS)
	}
}

func TestMeasureOpRunsUntilTheCollectionsItAskedFor(t *testing.T) {
	cost, err := MeasureOp(Sampling{MinCalls: 1, MaxCalls: 1_000_000, MinGCCycles: 2, MaxDuration: time.Minute},
		allocMiB)
	if err != nil {
		t.Fatal(err)
	}
	if cost.GCCycles < 2 {
		t.Errorf("GCCycles = %d, want at least 2", cost.GCCycles)
	}
	if cost.GCCPUNS <= 0 {
		t.Errorf("GCCPUNS = %v with %d collections, want a positive figure", cost.GCCPUNS, cost.GCCycles)
	}
}

func TestMeasureOpReturnsTheFirstError(t *testing.T) {
	boom := errors.New("boom")
	calls := 0
	_, err := MeasureOp(Sampling{MinCalls: 10, MaxCalls: 10}, func(int) error { calls++; return boom })
	if !errors.Is(err, boom) || calls != 1 {
		t.Errorf("err %v after %d calls, want boom after 1", err, calls)
	}
}
