package informer

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/deltacache/deltacache/pkg/informer/informertest"
)

// sleepyHandler takes step of the fake clock for every object (and a little real
// time, so that the progress loop keeps up).
type sleepyHandler struct {
	clock *clocktesting.FakeClock
	step  time.Duration
}

func (h sleepyHandler) OnAdd(any, bool) {
	h.clock.Step(h.step)
	time.Sleep(time.Millisecond)
}
func (h sleepyHandler) OnUpdate(any, any) {}
func (h sleepyHandler) OnDelete(any)      {}

var progressField = regexp.MustCompile(`"(delivered|total|objectsPerSecond)"=([0-9.e+-]+)`)

// A handler that takes 20 ms per object holds its registration back for 6 s after
// the informer synced with 300 objects: HandlersNotSynced, and a log line every
// second, name it with its objects delivered out of 300 and its rate (50 per second).
func TestSlowHandlerAtStartIsNamedWithItsProgressAndRate(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	for i := range 300 {
		f.Create(pod("a", fmt.Sprintf("p%03d", i), ""))
	}
	fc := clocktesting.NewFakeClock(time.Now())
	logs := &verboseLogs{}
	s := newPodInformer(f, Options{Clock: fc, Logger: *logs.logger(), ListProgressInterval: time.Second})
	reg := addHandler(t, s, sleepyHandler{clock: fc, step: 20 * time.Millisecond})
	startInformer(t, s)
	waitSynced(t, s.HasSyncedChecker())

	if reg.HasSynced() {
		t.Fatal("the registration synced with the informer; the handler should still be busy")
	}
	// The registrations hear of the informer's sync just after it.
	eventually(t, 5*time.Second, "the registration told of the informer's sync", func() bool {
		return reg.initialProgress().InformerSynced
	})
	behind := s.HandlersNotSynced()
	if len(behind) != 1 || behind[0].Label != "informer.sleepyHandler" || behind[0].Total != 300 ||
		!behind[0].InformerSynced || behind[0].Delivered >= 300 {
		t.Fatalf("HandlersNotSynced() = %+v, want informer.sleepyHandler behind on 300 objects", behind)
	}
	waitSynced(t, reg.HasSyncedChecker())
	if behind := s.HandlersNotSynced(); len(behind) != 0 {
		t.Errorf("HandlersNotSynced() after the sync = %+v, want none", behind)
	}
	p := reg.initialProgress()
	if !p.Synced || p.Delivered != 300 || p.Total != 300 || p.Elapsed != 6*time.Second || p.Rate() != 50 {
		t.Errorf("InitialProgress() after the sync = %+v (rate %v), want 300 of 300 in 6s, 50/s", p, p.Rate())
	}

	lines := logs.withMsg("event handler not synced yet: initial objects delivered so far")
	if len(lines) < 2 {
		t.Fatalf("%d progress lines over 6 s at one a second, want at least 2:\n%v", len(lines), lines)
	}
	last := -1
	for _, line := range lines {
		fields := map[string]float64{}
		for _, m := range progressField.FindAllStringSubmatch(line, -1) {
			fields[m[1]], _ = strconv.ParseFloat(m[2], 64)
		}
		if !regexp.MustCompile(`"handler"="informer.sleepyHandler"`).MatchString(line) || fields["total"] != 300 {
			t.Errorf("progress line does not name informer.sleepyHandler with total 300: %s", line)
		}
		delivered := int(fields["delivered"])
		if delivered <= last || delivered >= 300 {
			t.Errorf("delivered %d after %d (of 300): %s", delivered, last, line)
		}
		last = delivered
		// 20 ms of the clock per object: 50 per second, a little less while one is under way.
		if rate := fields["objectsPerSecond"]; rate < 45 || rate > 50 {
			t.Errorf("objectsPerSecond %v, want about 50: %s", rate, line)
		}
	}
}
