package informer

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
)

// defaultListProgressInterval is how often a list in progress is logged when
// ListProgressInterval is 0.
const defaultListProgressInterval = 5 * time.Second

// listProgress logs a long list's progress: at most one "list in progress"
// line per interval, with the objects received so far, the elapsed seconds,
// the rate, and the pages (or streamed=true for a WatchList stream). The
// informer's "informer synced" line is the summary.
type listProgress struct {
	log         logr.Logger
	clock       clock.PassiveClock
	interval    time.Duration
	start, last time.Time
	initial     bool
	streamed    bool
}

// newListProgress starts the progress report of one list.
func (r *reflector) newListProgress(ctx context.Context, streamed bool) *listProgress {
	interval := r.opts.ListProgressInterval
	if interval == 0 {
		interval = defaultListProgressInterval
	}
	r.mu.Lock()
	initial := r.listCount == 0
	r.mu.Unlock()
	now := r.clock.Now()
	return &listProgress{log: r.logger(ctx).WithValues("reflector", r.name), clock: r.clock,
		interval: interval, start: now, last: now, initial: initial, streamed: streamed}
}

// report logs the progress if interval has passed since the last line (or
// the start). Negative intervals disable it.
func (p *listProgress) report(objects, pages int) {
	if p.interval < 0 {
		return
	}
	now := p.clock.Now()
	if now.Sub(p.last) < p.interval {
		return
	}
	p.last = now
	seconds := now.Sub(p.start).Seconds()
	kv := []any{
		"objects", objects, "seconds", seconds,
		"objectsPerSecond", float64(objects) / seconds, "initial", p.initial,
	}
	if p.streamed {
		kv = append(kv, "streamed", true)
	} else {
		kv = append(kv, "pages", pages)
	}
	p.log.Info("list in progress", kv...)
}
