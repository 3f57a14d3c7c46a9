package informer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
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
	runReflector(t, f, reflectorOptions{Clock: fc, Logger: logs.logger(),
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
	r := newReflector(informertest.New(&corev1.Pod{}), &corev1.Pod{}, &recStore{}, reflectorOptions{})
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

// A ListerWatcher that fails with a context.Canceled of its own, while the
// Reflector's context is alive, is backed off from like any failure, not
// taken for a stop and relisted at once in a tight loop.
func TestCanceledErrorsOfTheListerWatcherAreBackedOffFrom(t *testing.T) {
	var lists atomic.Int64
	canceled := fmt.Errorf("request aborted: %w", context.Canceled)
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			lists.Add(1)
			return nil, canceled
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return nil, canceled
		},
	}
	run := runReflector(t, lw, reflectorOptions{
		Backoff: Backoff{Initial: 100 * time.Millisecond, Max: 100 * time.Millisecond, Jitter: -1},
	})
	if err := run.nextErr(t); !errors.Is(err, context.Canceled) {
		t.Fatalf("first error %v, want the ListerWatcher's Canceled", err)
	}
	time.Sleep(500 * time.Millisecond)
	run.stop(t)
	// 500ms at one attempt per 100ms: about 5 lists; a tight loop makes thousands.
	if n := lists.Load(); n < 2 || n > 12 {
		t.Errorf("%d lists in 500ms with a 100ms backoff, want about 5", n)
	}
	if !errors.Is(run.r.LastError(), context.Canceled) {
		t.Errorf("LastError = %v, want the Canceled list error", run.r.LastError())
	}
}
