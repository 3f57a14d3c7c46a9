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
	"strings"
	"testing"
)

func TestParseEventToHandlerReadsBothCachesAtEveryRate(t *testing.T) {
	out := `goos: linux
BenchmarkEventToHandler/wire/rate-100-2   1212  9991688 ns/op  92.73 controller-runtime-p50-µs  330.8 controller-runtime-p99-µs  115.0 deltacache-p50-µs  328.2 deltacache-p99-µs  100.1 events/s  1.240 p50-ratio-x  0.9922 p99-ratio-x
BenchmarkEventToHandler/wire/rate-1000-2  12000  999000 ns/op  80 controller-runtime-p50-µs  400 controller-runtime-p99-µs  90 deltacache-p50-µs  380 deltacache-p99-µs  1000 events/s  1.1 p50-ratio-x  0.95 p99-ratio-x
BenchmarkEventToHandler/wire/rate-10000    120000  99900 ns/op  5000 controller-runtime-p50-µs  40000 controller-runtime-p99-µs  5200 deltacache-p50-µs  42000 deltacache-p99-µs  9990 events/s  1.04 p50-ratio-x  1.05 p99-ratio-x
PASS
`
	ours, theirs, err := parseEventToHandler([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	for fig, want := range map[string][2]float64{
		figLatP50(100): {115.0, 92.73}, figLatP99(100): {328.2, 330.8},
		figLatP50(1000): {90, 80}, figLatP99(1000): {380, 400},
		figLatP50(10000): {5200, 5000}, figLatP99(10000): {42000, 40000},
	} {
		if got := [2]float64{ours[fig][0], theirs[fig][0]}; got != want {
			t.Errorf("%s: got %v, want %v", fig, got, want)
		}
	}
	missing := strings.Replace(out, "rate-1000-2", "rate-999-2", 1)
	if _, _, err := parseEventToHandler([]byte(missing)); err == nil || !strings.Contains(err.Error(), "lat_p50_1000") {
		t.Errorf("a missing rate: %v, want an error naming lat_p50_1000", err)
	}
}
