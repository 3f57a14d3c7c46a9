package informer

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestBackoffDoublesWithJitterCapsAndResetsAfterHealthyPeriod(t *testing.T) {
	fc := clocktesting.NewFakePassiveClock(time.Unix(0, 0))
	b := newBackoffState(Backoff{}, fc, func() float64 { return 0.5 })
	got := make([]string, 0, 8)
	for range 8 {
		got = append(got, b.next().String())
		fc.SetTime(fc.Now().Add(time.Second))
	}
	//nolint:goconst // expected values are spelled out so the test reads as its specification
	equalStrings(t, "delays", got, []string{"1.2s", "2.4s", "4.8s", "9.6s", "19.2s", "30s", "30s", "30s"})
	fc.SetTime(fc.Now().Add(2 * time.Minute))
	if d := b.next(); d != 1200*time.Millisecond {
		t.Fatalf("after 2 healthy minutes: %s, want 1.2s", d)
	}
}

func TestBackoffWithoutJitter(t *testing.T) {
	fc := clocktesting.NewFakePassiveClock(time.Unix(0, 0))
	b := newBackoffState(Backoff{Initial: time.Second, Max: 5 * time.Second, Factor: 3, Jitter: -1}, fc, nil)
	got := make([]string, 0, 4)
	for range 4 {
		got = append(got, b.next().String())
	}
	equalStrings(t, "delays", got, []string{"1s", "3s", "5s", "5s"})
}
