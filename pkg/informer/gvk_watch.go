package informer

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// gvkWatch passes the events of a metadata watch on with the GroupVersionKind
// set on each *metav1.PartialObjectMetadata (the metadata client leaves it
// empty). Unlike apimachinery's watch.Filter, whose goroutine stays blocked
// forever on an event nobody reads once the consumer has stopped (a leak the
// soak found: one goroutine per stopped watch that had an event in hand),
// its goroutine ends at Stop.
type gvkWatch struct {
	in   watch.Interface
	gvk  schema.GroupVersionKind
	out  chan watch.Event
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

func newGVKWatch(in watch.Interface, gvk schema.GroupVersionKind) *gvkWatch {
	w := &gvkWatch{in: in, gvk: gvk, out: make(chan watch.Event),
		stop: make(chan struct{}), done: make(chan struct{})}
	go w.loop()
	return w
}

func (w *gvkWatch) ResultChan() <-chan watch.Event { return w.out }

// Stop stops the upstream watch and ends the goroutine, even while it holds
// an event for a reader that is gone.
func (w *gvkWatch) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.in.Stop()
	})
}

func (w *gvkWatch) loop() {
	defer close(w.done)
	defer close(w.out)
	for {
		select {
		case <-w.stop:
			return
		case e, ok := <-w.in.ResultChan():
			if !ok {
				return
			}
			if p, ok := e.Object.(*metav1.PartialObjectMetadata); ok {
				p.SetGroupVersionKind(w.gvk)
			}
			select {
			case w.out <- e:
			case <-w.stop:
				return
			}
		}
	}
}
