package informer

import (
	"fmt"
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

// logLines captures log lines as funcr renders them.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		l.lines = append(l.lines, args)
		l.mu.Unlock()
	}, funcr.Options{})
}

func (l *logLines) with(substrings ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		all := true
		for _, s := range substrings {
			all = all && strings.Contains(line, s)
		}
		if all {
			out = append(out, line)
		}
	}
	return out
}

func TestLongInitialListLogsProgressThenOneSummary(t *testing.T) {
	fc := clocktesting.NewFakeClock(time.Unix(1000, 0))
	f := informertest.New(&corev1.Pod{})
	for i := range 10 {
		f.Create(pod("a", fmt.Sprintf("p%02d", i), ""))
	}
	var logs logLines
	// Five pages, 3s each, progress every 5s: lines after pages 2 (6s) and 4
	// (12s); none after the last page, which the summary covers.
	s := newPodInformer(clockSteppingLW{f, fc, 3 * time.Second},
		Options{Name: podsResource, PageSize: 2, Clock: fc, Logger: logs.logger(), ListProgressInterval: 5 * time.Second})
	startInformer(t, s)
	waitSynced(t, s.HasSyncedChecker())
	eventually(t, 5*time.Second, "summary line", func() bool { return len(logs.with(`"msg"="informer synced"`)) == 1 })

	progress := logs.with(`"msg"="list in progress"`)
	want := [][]string{
		{`"objects"=4 `, `"seconds"=6 `, fmt.Sprintf(`"objectsPerSecond"=%v `, 4.0/6.0), `"initial"=true`, `"pages"=2`},
		{`"objects"=8 `, `"seconds"=12 `, fmt.Sprintf(`"objectsPerSecond"=%v `, 8.0/12.0), `"initial"=true`, `"pages"=4`},
	}
	if len(progress) != len(want) {
		t.Fatalf("progress lines:\n%s", strings.Join(progress, "\n"))
	}
	for i, line := range progress {
		for _, s := range append(want[i], `"informer"="pods"`) {
			if !strings.Contains(line, s) {
				t.Errorf("progress line %d lacks %s: %s", i, s, line)
			}
		}
	}
	summary := logs.with(`"msg"="informer synced"`)[0]
	for _, s := range []string{`"objects"=10 `, `"seconds"=15 `, `"pages"=5 `, `"streamed"=false`} {
		if !strings.Contains(summary, s) {
			t.Errorf("summary lacks %s: %s", s, summary)
		}
	}
}

func TestFailingListLogsOneLinePerBackoffStepWithReasonAndDelay(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.Create(pod("a", "p1", ""))
	for range 3 {
		f.ScriptList(informertest.ListResponse{Err: informertest.ErrForbidden()})
	}
	var logs logLines
	s := newPodInformer(f, Options{Logger: logs.logger(), Metrics: NewMetrics(),
		Backoff: Backoff{Initial: time.Millisecond, Max: 4 * time.Millisecond, Factor: 2, Jitter: -1}})
	startInformer(t, s)
	waitSynced(t, s.HasSyncedChecker())

	errorLines := logs.with(`"error"=`)
	if len(errorLines) != 3 {
		t.Fatalf("error lines (want one per failed list):\n%s", strings.Join(errorLines, "\n"))
	}
	for i, delay := range []string{"1ms", "2ms", "4ms"} {
		for _, s := range []string{`"msg"="list/watch failed; retrying"`, `"reason"="Forbidden"`,
			`"retryIn"="` + delay + `"`} {
			if !strings.Contains(errorLines[i], s) {
				t.Errorf("line %d lacks %s: %s", i, s, errorLines[i])
			}
		}
	}
}
