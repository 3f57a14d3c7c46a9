package informer

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// Resync waits for the key being processed, as client-go's does (its Pop holds
// the lock while processing), and then queues a Sync for it too: a periodic
// resync skips no key because it was in flight.
func TestResyncWaitsForTheKeyInFlightAndQueuesItsSync(t *testing.T) {
	ix := NewIndexer(toolscache.DeletionHandlingMetaNamespaceKeyFunc, nil)
	f := newFIFO(ix)
	must(t, f.Add(pod("a", "x", "1")))

	inProcess := make(chan struct{})
	release := make(chan struct{})
	popped := make(chan error, 1)
	go func() {
		popped <- f.Pop(func(ds deltaList, _ bool) error {
			if err := ix.Add(ds.Newest().Object); err != nil {
				return err
			}
			close(inProcess)
			<-release
			return nil
		})
	}()
	<-inProcess // a/x is stored and still being processed

	resynced := make(chan error, 1)
	go func() { resynced <- f.Resync() }()
	select {
	case err := <-resynced:
		t.Errorf("Resync returned (%v) while a/x was being processed", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	must(t, <-popped)
	select {
	case err := <-resynced:
		must(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Resync did not return once the key was processed")
	}
	if f.Len() != 1 {
		t.Fatalf("after Resync %d keys are queued, want 1 (a Sync of a/x)", f.Len())
	}
	must(t, f.Pop(func(ds deltaList, _ bool) error {
		if len(ds) != 1 || ds[0].Type != deltaSync || ds[0].Object.(*corev1.Pod).ResourceVersion != "1" {
			t.Errorf("queued deltas %v, want one Sync of the stored a/x at RV 1", ds)
		}
		return nil
	}))
}
