package informer

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// A consumer that stops its metadata watch while an event waits for it (the
// Reflector does, on a stall, an error or a relist) must not leave the
// watch's goroutine blocked on that event: watch.Filter's would be, forever.
func TestGVKWatchEndsAtStopWhileHoldingAnUnreadEvent(t *testing.T) {
	in := watch.NewFake()
	w := newGVKWatch(in, podGVK)
	sent := make(chan struct{})
	go func() {
		in.Add(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "p"}})
		close(sent)
	}()
	<-sent // the goroutine has taken the event and waits for a reader
	w.Stop()
	select {
	case <-w.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the watch's goroutine did not end at Stop")
	}
}

// Events read are stamped with the GroupVersionKind.
func TestGVKWatchStampsTheGroupVersionKind(t *testing.T) {
	in := watch.NewFake()
	w := newGVKWatch(in, podGVK)
	defer w.Stop()
	go in.Add(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "p"}})
	e := <-w.ResultChan()
	if got := e.Object.GetObjectKind().GroupVersionKind(); got != podGVK {
		t.Fatalf("GVK = %v, want %v", got, podGVK)
	}
}
