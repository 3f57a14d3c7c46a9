package sharding

import "testing"

func TestSharesAcceptsFairSplitsAndRejectsSkewAndGapsAndDoubles(t *testing.T) {
	if r, err := shares(map[string]int{"a": 9000, "b": 10000, "c": 11000}, 30000, 0.15); err != nil {
		t.Fatalf("a 10%% skew: %v", err)
	} else {
		t.Log(r)
	}
	for name, c := range map[string]struct {
		counts map[string]int
		total  int
	}{
		"skewed":         {map[string]int{"a": 8000, "b": 10000, "c": 12000}, 30000},
		"one missing":    {map[string]int{"a": 10000, "b": 10000, "c": 9999}, 30000},
		"one held twice": {map[string]int{"a": 10000, "b": 10001, "c": 10000}, 30000},
		"none":           {map[string]int{}, 30000},
	} {
		if _, err := shares(c.counts, c.total, 0.15); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
