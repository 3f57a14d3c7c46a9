package informer

import "errors"

// Streaming the initial list: client-go's Reflector collects a whole list
// (every page, or every event of a WatchList stream) before it hands it to
// its queue, so the queue's consumer (store, indexes, handlers) starts only
// once the last page has arrived, and the whole decoded list is held twice
// over at that moment. When nothing is queued and nothing is stored yet
// (the first list of an informer), there is nothing the list could delete,
// so deltacache's DeltaFIFO takes the list page by page instead: the pop
// loop fills the store while later pages are still being received and
// decoded (on two cores, the two halves of a sync overlap), and each page's
// objects are let go as soon as they are stored.
//
// What handlers and HasSynced see does not change: every listed object is a
// Replaced delta, delivered as an Add with isInInitialList true, and the
// FIFO is populated (HasSynced can become true) only when the list has
// ended, with the list's resourceVersion, exactly as after Replace. A list
// that fails part-way leaves what it streamed queued or stored: the next
// list is then a Replace, which deletes what that list no longer has.

// initialStreamer is the ReflectorStore side of streaming; DeltaFIFO
// implements it.
type initialStreamer interface {
	// beginInitialStream reports whether a list may be streamed now: the
	// store has never been populated, and nothing is queued, in flight or
	// known. After true, the Reflector calls appendInitial for each part
	// of the list and endInitialStream once it has all of it.
	beginInitialStream() bool
	// appendInitial queues a Replaced delta for every object of part that
	// the filter (SetFilter) admits.
	appendInitial(part []any) error
	// endInitialStream ends the list at resourceVersion, once no batch is
	// in flight: the queue is populated, and the keys still queued are the
	// rest of the initial list.
	endInitialStream(resourceVersion string)
}

func (f *deltaFIFO) beginInitialStream() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.populated || len(f.items) > 0 || f.processing || f.closed {
		return false
	}
	return f.known == nil || len(f.known.ListKeys()) == 0
}

func (f *deltaFIFO) appendInitial(part []any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	for _, obj := range part {
		if _, _, err := f.queueListedLocked(obj); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (f *deltaFIFO) endInitialStream(resourceVersion string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// As Replace: a batch in flight holds keys of this list that are not
	// queued any more, and HasSynced must wait for them too.
	for f.processing {
		f.cond.Wait()
	}
	f.finishReplaceLocked(resourceVersion)
}
