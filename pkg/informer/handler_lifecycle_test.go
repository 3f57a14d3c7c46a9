package informer

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/deltacache/deltacache/pkg/informer/informertest"
)

// After RemoveEventHandler returns, only the call already in progress may
// finish; a second notification of the same key that was taken together with
// it ([Delete, Add] of a re-created object) must not be delivered.
func TestRemoveEventHandlerDropsTheOtherNotificationsOfTheKeyInProgress(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.Create(pod("ns", "a-k", ""))
	f.Create(pod("ns", "b-gate", ""))
	s := newPodInformer(f, Options{})

	gate1 := make(chan struct{})
	gate2 := make(chan struct{})
	blocked := make(chan struct{})
	inDelete := make(chan struct{})
	var mu sync.Mutex
	removed := false
	var afterRemoval []string
	h := toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			key := keyOfObj(obj)
			mu.Lock()
			if removed {
				afterRemoval = append(afterRemoval, "add "+describe(obj))
			}
			mu.Unlock()
			if key == "ns/b-gate" {
				close(blocked)
				<-gate1
			}
		},
		DeleteFunc: func(obj any) {
			if keyOfObj(obj) == "ns/a-k" {
				close(inDelete)
				<-gate2
			}
		},
	}
	regI, err := s.AddEventHandler(h)
	must(t, err)
	reg := regI.(*HandlerRegistration)
	startInformer(t, s)
	// Registered after startInformer's, this cleanup runs first: if the test
	// fails while the handler is blocked, the informer can still stop.
	openGate1 := sync.OnceFunc(func() { close(gate1) })
	openGate2 := sync.OnceFunc(func() { close(gate2) })
	t.Cleanup(func() { openGate1(); openGate2() })
	waitSynced(t, s.HasSyncedChecker())
	// Keys are delivered in list order, so once the handler blocks in
	// OnAdd(b-gate) it has seen a-k's Add: a-k's Delete cannot merge into it.
	waitClosed(t, blocked, 10*time.Second, "the handler to block in OnAdd(b-gate)")

	// Delete and re-create a-k while the handler is blocked.
	f.Delete(pod("ns", "a-k", ""))
	created := f.Create(pod("ns", "a-k", ""))
	rv := created.(*corev1.Pod).ResourceVersion
	eventually(t, 10*time.Second, "re-created a-k in the store", func() bool {
		o, ok, _ := s.GetStore().GetByKey("ns/a-k")
		return ok && o.(*corev1.Pod).ResourceVersion == rv
	})
	// A barrier: once deliverMu is free, the batch that stored it has
	// distributed its notes to the handler's queue.
	s.deliverMu.Lock()
	s.deliverMu.Unlock() //nolint:staticcheck // SA2001: the empty section is the barrier

	openGate1()
	// The handler is in OnDelete(a-k); OnAdd(a-k) is the next note of that key.
	waitClosed(t, inDelete, 10*time.Second, "the handler to enter OnDelete(a-k)")
	must(t, s.RemoveEventHandler(reg))
	mu.Lock()
	removed = true
	mu.Unlock()
	openGate2()
	waitClosed(t, reg.Stopped(), 5*time.Second, "handler goroutine to exit")
	mu.Lock()
	defer mu.Unlock()
	if len(afterRemoval) > 0 {
		t.Fatalf("handler called after RemoveEventHandler returned (beyond the call in progress): %q", afterRemoval)
	}
}

// As client-go's (sharedProcessor.run ends with p.wg.Wait()), RunWithContext
// returns only once no handler call is running: after Run, no handler code runs.
func TestRunWithContextReturnsAfterTheRunningHandlerCall(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.Create(pod("ns", "a", ""))
	s := newPodInformer(f, Options{})
	entered := make(chan struct{})
	release := make(chan struct{})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	regI, err := s.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(any) {
		close(entered)
		<-release
	}})
	must(t, err)
	reg := regI.(*HandlerRegistration)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.RunWithContext(ctx) }()
	<-entered
	cancel()
	select {
	case <-done:
		t.Error("RunWithContext returned while a handler call was still running")
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	waitClosed(t, done, 10*time.Second, "informer to stop")
	select {
	case <-reg.Stopped():
	default:
		t.Error("RunWithContext returned before the handler's goroutine exited")
	}
}
