package informer

import (
	"context"
	"time"

	"github.com/go-logr/logr"
)

// InitialProgress is how far a registration is through its initial objects: the
// adds of the informer's initial list (or, for a handler added after start, of
// the store replayed to it) that HasSynced waits for.
type InitialProgress struct {
	// Label is the registration's metric label (MetricLabel), Name its Name.
	Label, Name string
	// Delivered is how many initial objects the handler has returned from (an
	// add merged with a later change of its key counts once that is delivered).
	Delivered int
	// Total initial objects queued for the handler; final once InformerSynced.
	Total int
	// Elapsed from the first initial object's queueing to the sync (or now).
	Elapsed time.Duration
	// InformerSynced: the informer's initial list is in its store.
	InformerSynced bool
	// Synced is HasSynced.
	Synced bool
}

// Rate is the handler's delivery rate over Elapsed, in objects per second; 0
// before anything was delivered.
func (p InitialProgress) Rate() float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return float64(p.Delivered) / p.Elapsed.Seconds()
}

// InitialProgress returns the registration's progress through its initial
// objects.
func (r *HandlerRegistration) initialProgress() InitialProgress {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := InitialProgress{
		Label: r.label, Name: r.name,
		Delivered: r.initialQueued - r.initialLeft, Total: r.initialQueued,
		InformerSynced: r.informerSynced, Synced: r.syncedClosed,
	}
	switch {
	case r.initialQueued == 0:
	case r.syncedClosed:
		p.Elapsed = r.syncedAt.Sub(r.initialSince)
	default:
		p.Elapsed = r.informer.clock.Since(r.initialSince)
	}
	return p
}

// HandlersNotSynced returns the progress of the registrations not synced yet
// (all of them before the informer syncs), in the order added; nil if none.
func (s *SharedIndexInformer) HandlersNotSynced() []InitialProgress {
	s.mu.Lock()
	handlers := append([]*HandlerRegistration(nil), s.handlers...)
	s.mu.Unlock()
	var out []InitialProgress
	for _, h := range handlers {
		if p := h.initialProgress(); !p.Synced {
			out = append(out, p)
		}
	}
	return out
}

// wakeSyncProgress tells syncProgressLoop that a registration may be waiting
// for its initial objects (the informer synced, or a handler was added).
func (s *SharedIndexInformer) wakeSyncProgress() {
	select {
	case s.progressWake <- struct{}{}:
	default:
	}
}

// syncProgressLoop logs, every ListProgressInterval (default 5 s; negative:
// never) while a registration of the synced informer has not synced, one
// "handler not synced yet" line per such registration, through its own logger
// (controller-runtime's carries the controller's name): its metric label, the
// initial objects delivered out of the total, the rate and the elapsed time.
// Before the informer has synced, the Reflector's "list in progress" lines say
// where it is. The clock is only waited on while a registration is behind.
func (s *SharedIndexInformer) syncProgressLoop(ctx context.Context) {
	interval := s.opts.ListProgressInterval
	if interval == 0 {
		interval = defaultListProgressInterval
	}
	if interval < 0 {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.progressWake:
		}
		if !s.followSyncProgress(ctx, interval) {
			return
		}
	}
}

// followSyncProgress logs the waiting registrations every interval until none
// is left; false when ctx ended.
func (s *SharedIndexInformer) followSyncProgress(ctx context.Context, interval time.Duration) bool {
	next := s.clock.Now().Add(interval)
	for {
		waiting := s.waitingRegistrations()
		if len(waiting) == 0 {
			return true
		}
		timer := s.clock.NewTimer(next.Sub(s.clock.Now()))
		select {
		case <-ctx.Done():
			timer.Stop()
			return false
		case <-waiting[0].synced:
		case <-timer.C():
			for _, h := range waiting {
				h.logInitialProgress()
			}
			next = s.clock.Now().Add(interval)
		}
		timer.Stop()
	}
}

// waitingRegistrations are the running registrations that wait only for their
// own initial objects (the informer has synced, they have not).
func (s *SharedIndexInformer) waitingRegistrations() []*HandlerRegistration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*HandlerRegistration
	for _, h := range s.handlers {
		h.mu.Lock()
		waiting := h.informerSynced && !h.syncedClosed && !h.stopped
		h.mu.Unlock()
		if waiting {
			out = append(out, h)
		}
	}
	return out
}

// logger returns the informer's logger (set by Run).
func (s *SharedIndexInformer) logger() logr.Logger {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log
}

// logInitialProgress logs the registration's InitialProgress.
func (r *HandlerRegistration) logInitialProgress() {
	p := r.initialProgress()
	if p.Synced {
		return
	}
	log := r.log
	if log.GetSink() == nil {
		log = r.informer.logger()
	}
	log.Info("event handler not synced yet: initial objects delivered so far",
		"registration", r.name, "handler", p.Label, "delivered", p.Delivered, "total", p.Total,
		"objectsPerSecond", p.Rate(), "seconds", p.Elapsed.Seconds(), "pendingKeys", r.pendingCount())
}
