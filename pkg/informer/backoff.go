package informer

import (
	"math/rand/v2"
	"time"

	"k8s.io/utils/clock"
)

// Backoff configures the delays between failed list/watch attempts.
// The zero value means DefaultBackoff.
type Backoff struct {
	// Initial is the first delay; default 800ms.
	Initial time.Duration
	// Max caps every delay, jitter included; default 30s.
	Max time.Duration
	// Factor multiplies the delay after each consecutive failure; default 2.
	Factor float64
	// Jitter adds up to Jitter×delay at random; default 1.0 (delay in [d, 2d]).
	// A negative value disables jitter.
	Jitter float64
	// ResetAfter: a failure that comes at least this long after the previous
	// one starts again from Initial; default 2 minutes.
	ResetAfter time.Duration
}

// DefaultBackoff is client-go's reflector backoff: 0.8s doubling to 30s with
// full jitter, reset after 2 minutes without failures.
var DefaultBackoff = Backoff{
	Initial:    800 * time.Millisecond,
	Max:        30 * time.Second,
	Factor:     2,
	Jitter:     1,
	ResetAfter: 2 * time.Minute,
}

func (b Backoff) withDefaults() Backoff {
	d := DefaultBackoff
	if b.Initial > 0 {
		d.Initial = b.Initial
	}
	if b.Max > 0 {
		d.Max = b.Max
	}
	if b.Factor > 0 {
		d.Factor = b.Factor
	}
	if b.Jitter != 0 {
		d.Jitter = max(b.Jitter, 0)
	}
	if b.ResetAfter > 0 {
		d.ResetAfter = b.ResetAfter
	}
	if d.Max < d.Initial {
		d.Max = d.Initial
	}
	return d
}

// backoffState produces the delay sequence of one Reflector. It is used by
// one goroutine only.
type backoffState struct {
	cfg         Backoff
	clock       clock.PassiveClock
	random      func() float64
	step        time.Duration // un-jittered delay of the last failure; 0 = none
	lastFailure time.Time
}

func newBackoffState(cfg Backoff, c clock.PassiveClock, random func() float64) *backoffState {
	if random == nil {
		random = rand.Float64
	}
	return &backoffState{cfg: cfg.withDefaults(), clock: c, random: random}
}

// next records a failure and returns how long to wait before retrying.
func (b *backoffState) next() time.Duration {
	now := b.clock.Now()
	if b.step == 0 || now.Sub(b.lastFailure) >= b.cfg.ResetAfter {
		b.step = b.cfg.Initial
	} else {
		b.step = min(time.Duration(float64(b.step)*b.cfg.Factor), b.cfg.Max)
	}
	b.lastFailure = now
	d := b.step
	if b.cfg.Jitter > 0 {
		d += time.Duration(b.random() * b.cfg.Jitter * float64(d))
	}
	return min(d, b.cfg.Max)
}
