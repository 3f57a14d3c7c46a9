package sharding

import (
	"fmt"
	"slices"
	"strings"
)

// shares checks that counts (per replica) add up to exactly total and that each is
// total/len(counts) within ±tolerance (a fraction: 0.15 for ±15 %). The message lists
// every replica's deviation, for the report, whether or not the check passed.
func shares(counts map[string]int, total int, tolerance float64) (report string, err error) {
	if len(counts) == 0 {
		return "", fmt.Errorf("no replicas")
	}
	names := make([]string, 0, len(counts))
	for n := range counts {
		names = append(names, n)
	}
	slices.Sort(names)
	fair := float64(total) / float64(len(counts))
	sum := 0
	var parts, bad []string
	for _, n := range names {
		c := counts[n]
		sum += c
		dev := float64(c)/fair - 1
		parts = append(parts, fmt.Sprintf("%s %d (%+.1f%%)", n, c, 100*dev))
		if dev < -tolerance || dev > tolerance {
			bad = append(bad, n)
		}
	}
	report = fmt.Sprintf("%s; sum %d of %d", strings.Join(parts, ", "), sum, total)
	switch {
	case sum != total:
		return report, fmt.Errorf("the replicas hold %d together, want exactly %d: %s", sum, total, report)
	case len(bad) > 0:
		return report, fmt.Errorf("%v outside a fair share ±%.0f%%: %s", bad, 100*tolerance, report)
	}
	return report, nil
}
