package informer

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/deltacache/deltacache/pkg/informer/informertest"
)

// verboseLogs captures the lines of a funcr logger, verbosity up to 1.
type verboseLogs struct {
	mu    sync.Mutex
	lines []string
}

func (l *verboseLogs) logger() *logr.Logger {
	log := funcr.New(func(_, args string) {
		l.mu.Lock()
		l.lines = append(l.lines, args)
		l.mu.Unlock()
	}, funcr.Options{Verbosity: 1})
	return &log
}

// withMsg returns the captured lines whose message is msg.
func (l *verboseLogs) withMsg(msg string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if strings.Contains(line, `"msg"="`+msg+`"`) {
			out = append(out, line)
		}
	}
	return out
}

func TestRepeated410RelistsOnceImmediatelyThenBacksOff(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.ScriptList(
		informertest.ListResponse{ResourceVersion: "10"},
		informertest.ListResponse{ResourceVersion: "20"},
		informertest.ListResponse{ResourceVersion: "30"},
	)
	f.ScriptWatch(
		informertest.WatchResponse{Err: informertest.ErrGone()},
		informertest.WatchResponse{Err: informertest.ErrExpired()},
		informertest.WatchResponse{},
	)
	fc := clocktesting.NewFakeClock(time.Now())
	logs := &verboseLogs{}
	runReflector(t, f, ReflectorOptions{Clock: fc, Logger: logs.logger(),
		Backoff: Backoff{Initial: 5 * time.Second, Jitter: -1}})

	// First 410: relist at once. Second 410 right after: back off.
	waitRequests(t, f, 4)
	eventually(t, 5*time.Second, "the reflector sleeping on the clock", fc.HasWaiters)
	fc.Step(5*time.Second - time.Millisecond)
	if !fc.HasWaiters() || len(f.Requests()) != 4 {
		t.Fatalf("the backoff ended early: %d requests", len(f.Requests()))
	}
	fc.Step(time.Millisecond)
	equalStrings(t, "requests", summarize(waitRequests(t, f, 6)[:6]), []string{
		reqList, reqWatch10, reqList, `watch rv="20"`, reqList, `watch rv="30"`,
	})
	if got := logs.withMsg("resourceVersion unusable; relisting with a consistent read"); len(got) != 1 {
		t.Fatalf("immediate relist lines: %q", got)
	}
	backoff := logs.withMsg("list/watch failed; retrying")
	if len(backoff) != 1 || !strings.Contains(backoff[0], `"reason"="Expired"`) || !strings.Contains(backoff[0],
		`"retryIn"="5s"`) {
		t.Fatalf("backoff lines: %q", backoff)
	}
}

func TestWatchTimeoutsAreRandomInFiveToTenMinutes(t *testing.T) {
	r := NewReflector(informertest.New(&corev1.Pod{}), &corev1.Pod{}, &recStore{}, ReflectorOptions{})
	seen := map[int64]bool{}
	for range 200 {
		s := r.watchTimeout()
		if s < 300 || s > 600 {
			t.Fatalf("watch timeout %ds outside [300, 600]", s)
		}
		seen[s] = true
	}
	if len(seen) < 20 {
		t.Fatalf("only %d distinct timeouts in 200 draws", len(seen))
	}
}
