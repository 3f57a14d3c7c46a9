package informertest

import (
	"errors"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Stream is one watch opened on a Fake, as seen by the server: the test
// pushes events into it and ends it. It implements watch.Interface for the
// client. Sends never block: events are buffered without limit until the
// client reads them or stops the watch.
type Stream struct {
	// Options the watch was opened with.
	Options metav1.ListOptions

	mu      sync.Mutex
	queue   []watch.Event
	closing bool // server ended the stream; deliver the queue, then close
	stopped bool // client called Stop
	live    bool // fed by the Fake's state changes
	wake    chan struct{}
	stopCh  chan struct{}
	result  chan watch.Event
}

func newStream(opts metav1.ListOptions) *Stream {
	s := &Stream{
		Options: opts,
		wake:    make(chan struct{}, 1),
		stopCh:  make(chan struct{}),
		result:  make(chan watch.Event),
	}
	go s.pump()
	return s
}

func (s *Stream) pump() {
	defer close(s.result)
	for {
		s.mu.Lock()
		if s.stopped {
			s.mu.Unlock()
			return
		}
		if len(s.queue) == 0 {
			if s.closing {
				s.mu.Unlock()
				return
			}
			s.mu.Unlock()
			select {
			case <-s.wake:
			case <-s.stopCh:
			}
			continue
		}
		e := s.queue[0]
		s.queue = s.queue[1:]
		s.mu.Unlock()
		select {
		case s.result <- e:
		case <-s.stopCh:
			return
		}
	}
}

// ResultChan is the client's channel of events.
func (s *Stream) ResultChan() <-chan watch.Event { return s.result }

// Stop is the client ending the watch. Idempotent.
func (s *Stream) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stopped {
		s.stopped = true
		close(s.stopCh)
	}
}

// Stopped is closed once the client stopped the watch.
func (s *Stream) Stopped() <-chan struct{} { return s.stopCh }

// IsStopped reports whether the client stopped the watch.
func (s *Stream) IsStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// Send queues e; it reports false if the stream was already ended or stopped.
func (s *Stream) Send(e watch.Event) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing || s.stopped {
		return false
	}
	s.queue = append(s.queue, e)
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return true
}

// Add sends an ADDED event.
func (s *Stream) Add(obj runtime.Object) bool {
	return s.Send(watch.Event{Type: watch.Added, Object: obj})
}

// Modify sends a MODIFIED event.
func (s *Stream) Modify(obj runtime.Object) bool {
	return s.Send(watch.Event{Type: watch.Modified, Object: obj})
}

// Error sends an ERROR event carrying err's status (see StatusEvent).
func (s *Stream) Error(err error) bool { return s.Send(StatusEvent(err)) }

// Close is the server ending the stream (e.g. its timeout): queued events are
// delivered, then the result channel closes.
func (s *Stream) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing = true
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// BookmarkEvent builds a BOOKMARK event: an empty object of example's type
// with only resourceVersion set, as the apiserver sends it.
func BookmarkEvent(example runtime.Object, rv string) watch.Event {
	obj := example.DeepCopyObject()
	if m, err := meta.Accessor(obj); err == nil {
		gvk := obj.GetObjectKind().GroupVersionKind()
		empty, ok := newEmpty(obj)
		if ok {
			obj = empty
			obj.GetObjectKind().SetGroupVersionKind(gvk)
			m, _ = meta.Accessor(obj)
		}
		m.SetResourceVersion(rv)
	}
	return watch.Event{Type: watch.Bookmark, Object: obj}
}

// InitialEventsEndBookmark builds the BOOKMARK that ends the initial events
// of a WatchList stream (annotated k8s.io/initial-events-end: "true").
func InitialEventsEndBookmark(example runtime.Object, rv string) watch.Event {
	e := BookmarkEvent(example, rv)
	if m, err := meta.Accessor(e.Object); err == nil {
		m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	}
	return e
}

// StatusEvent builds an ERROR watch event from err's API status (a 500
// InternalError status if err carries none).
func StatusEvent(err error) watch.Event {
	var status apierrors.APIStatus
	var st metav1.Status
	if errors.As(err, &status) {
		st = status.Status()
	} else {
		st = apierrors.NewInternalError(err).Status()
	}
	return watch.Event{Type: watch.Error, Object: &st}
}
