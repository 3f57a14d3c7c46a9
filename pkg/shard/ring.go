package shard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// Lease labels and annotations of a ring member.
const (
	// RingLabel on a member's Lease names its ring.
	RingLabel = "sharding.deltacache.io/ring"
	// SlotsAnnotation on a member's Lease holds the slots it claims
	// (Slots.String): the slots it serves, and those it is about to serve.
	// A slot absent from it is released.
	SlotsAnnotation = "sharding.deltacache.io/slots"
)

// Defaults of Options.
const (
	DefaultLeaseDuration = 15 * time.Second
)

// Consumer is told which slots to serve. It is called by the Ring's goroutine,
// one call at a time, with the complete set: when the set shrinks, it must
// have stopped serving the slots left out (their objects dropped from its
// caches, their in-flight reconciles finished) before it returns, because
// the Ring then records their release and another replica may start serving
// them. An error is logged and the call is repeated at the next round with
// the then current set; the slots stay claimed meanwhile.
type Consumer func(ctx context.Context, serve Slots) error

// Options configure a Ring. Namespace, Name and Identity are required.
type Options struct {
	// Namespace of the Leases.
	Namespace string
	// Name of the ring: the RingLabel value of its Leases, and the prefix of
	// their names. Replicas of one operator share it.
	Name string
	// Identity of this replica, unique in the ring (e.g. the pod name); its
	// Lease is named Name + "-" + Identity.
	Identity string
	// LeaseDuration: a member whose Lease was not renewed for this long is
	// gone, and its slots are taken over. 0 = DefaultLeaseDuration.
	LeaseDuration time.Duration
	// RenewInterval: how often the Lease is renewed and the members are
	// looked at; 0 = LeaseDuration/5.
	RenewInterval time.Duration
	// Clock; default the real clock.
	Clock clock.WithTicker
	// Logger; zero value = logr.FromContextOrDiscard of Run's context.
	Logger logr.Logger
	// KeepLeaseOnStop: when Run's context ends, stop serving but leave the Lease
	// to expire instead of deleting it, so the others take over only after
	// LeaseDuration, as after a crash. Default false: the Lease is deleted and the
	// others take over at their next round.
	KeepLeaseOnStop bool
}

// Status is a Ring's view at the end of its last round.
type Status struct {
	// Members are the identities with an unexpired Lease, sorted.
	Members []string
	// Target is what this replica should serve given Members.
	Target Slots
	// Serving is what the Consumer may be serving: what it was last told to
	// serve and accepted; after a call that failed, also the slots that call
	// added (it may have moved part of the way), until a call succeeds.
	Serving Slots
	// Claimed is what this replica's Lease claims (⊇ Serving).
	Claimed Slots
	// Acquired and Released count the slots this replica started serving
	// (granted or taken over) and those it gave up, since the start: the
	// hand-offs.
	Acquired, Released int
	// LastRenew is when the Lease was last written successfully.
	LastRenew time.Time
}

// Ring is one replica's membership in a ring. Run it once.
//
// Each round (every RenewInterval) the Ring lists the ring's Leases (a
// consistent read), takes the members to be the Leases renewed within their
// duration (this replica included), computes its Target with Assign, and:
//
//  1. releases: slots it serves outside Target are taken from the Consumer
//     first (which returns once it stopped serving them), then removed from
//     its Lease (the release others wait for);
//  2. claims: slots of Target that no other member claims (released, or
//     claimed by an expired Lease) are added to its Lease;
//  3. verifies: after writing the claim it lists the Leases again; a
//     claimed slot it does not serve yet (newly claimed, or claimed before a
//     fence: its Lease may have expired meanwhile and others taken the slot)
//     that another member claims too is withdrawn (two replicas that claimed
//     at once both withdraw, and claim again in a later round); the others are
//     given to the Consumer.
//
// A slot is therefore served by at most one replica at a time, as long as
// clocks agree to well within the Lease duration and the Consumer stops
// serving within a quarter of it: a replica that cannot renew its Lease for
// 3/4 of the duration tells its Consumer to serve nothing (fencing) before
// others may consider the Lease expired. A round that would outlast that
// point (a request hanging on a frozen connection) is cancelled there, so
// the fence is never late; and a fence that fails is repeated before the
// replica serves anything again, renewing its Lease meanwhile (the slots the
// Consumer may still serve stay claimed). When Run's context ends, the
// Consumer is told to serve nothing and the Lease is deleted, so that the
// others take over at once.
type Ring struct {
	leases   coordinationclient.LeasesGetter
	consumer Consumer
	opts     Options
	clock    clock.WithTicker
	lease    string

	mu     sync.Mutex
	status Status
	// changed is closed and replaced whenever status changes.
	changed chan struct{}
	// firstRound is closed when Run's first round has ended.
	firstRound     chan struct{}
	firstRoundOnce sync.Once

	// Read and written by Run's goroutine only:
	//
	// unsettled: the Consumer's last call failed, so it may serve less than
	// status.Serving; the next round tells it again.
	unsettled bool
	// fencing: a fence was due and has not succeeded yet; until it does, the
	// Consumer is told nothing but to serve nothing, and rounds only renew.
	fencing bool
}

// New returns a Ring that keeps this replica's Lease through leases and
// tells consumer what to serve.
func New(leases coordinationclient.LeasesGetter, consumer Consumer, opts Options) (*Ring, error) {
	if opts.Namespace == "" || opts.Name == "" || opts.Identity == "" {
		return nil, errors.New("shard: Options.Namespace, Name and Identity are required")
	}
	if opts.LeaseDuration <= 0 {
		opts.LeaseDuration = DefaultLeaseDuration
	}
	if opts.RenewInterval <= 0 {
		opts.RenewInterval = opts.LeaseDuration / 5
	}
	if opts.RenewInterval >= opts.LeaseDuration/2 {
		return nil, fmt.Errorf("shard: RenewInterval %v must be below half the LeaseDuration %v",
			opts.RenewInterval, opts.LeaseDuration)
	}
	r := &Ring{leases: leases, consumer: consumer, opts: opts, clock: opts.Clock,
		lease: opts.Name + "-" + opts.Identity, changed: make(chan struct{}), firstRound: make(chan struct{})}
	if r.clock == nil {
		r.clock = clock.RealClock{}
	}
	return r, nil
}

// FirstRound returns a channel closed once Run's first round has ended, with
// or without error: by then the Consumer has been told to serve the slots this
// replica's Lease could claim (a replica restarted with its Lease unexpired
// gets its slots back in that round).
func (r *Ring) FirstRound() <-chan struct{} { return r.firstRound }

// Status returns the Ring's view after its last round.
func (r *Ring) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.status
	s.Members = append([]string(nil), s.Members...)
	return s
}

// Changed returns a channel that is closed at the next change of Status.
func (r *Ring) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

// Identity returns this replica's identity.
func (r *Ring) Identity() string { return r.opts.Identity }

func (r *Ring) update(f func(s *Status)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.status)
	close(r.changed)
	r.changed = make(chan struct{})
}

// Run joins the ring and keeps this replica's share until ctx ends; then it
// serves nothing, deletes its Lease and returns nil.
func (r *Ring) Run(ctx context.Context) error {
	log := r.opts.Logger
	if log.GetSink() == nil {
		log = logr.FromContextOrDiscard(ctx)
	}
	log = log.WithValues("ring", r.opts.Name, "identity", r.opts.Identity)
	ctx = logr.NewContext(ctx, log)
	DefaultMetrics.add(r)
	defer DefaultMetrics.remove(r)
	ticker := r.clock.NewTicker(r.opts.RenewInterval)
	defer ticker.Stop()
	for {
		r.fence(ctx) // a fence that failed is repeated first
		rctx, cancel := r.roundContext(ctx)
		if err := r.round(rctx); err != nil && ctx.Err() == nil {
			log.Error(err, "Ring round failed; retrying")
		}
		cancel()
		r.firstRoundOnce.Do(func() { close(r.firstRound) })
		r.fence(ctx)
		// Wake at the next tick, or when the fence falls due if that comes first.
		var fenceDue clock.Timer
		var due <-chan time.Time
		if st := r.Status(); !st.Serving.IsEmpty() && !st.LastRenew.IsZero() {
			fenceDue = r.clock.NewTimer(max(0, r.fenceAfter()-r.clock.Since(st.LastRenew)))
			due = fenceDue.C()
		}
		select {
		case <-ctx.Done():
			r.leave(log)
			return nil
		case <-ticker.C():
		case <-due:
		}
		if fenceDue != nil {
			fenceDue.Stop()
		}
	}
}

// fenceAfter is how long after its last renewal a replica stops serving.
func (r *Ring) fenceAfter() time.Duration { return r.opts.LeaseDuration * 3 / 4 }

// roundContext returns the context of a round: ended, while this replica serves
// slots, at the point its fence falls due (so that a round hanging in a request
// cannot delay the fence), and at most half a Lease duration from now.
func (r *Ring) roundContext(ctx context.Context) (context.Context, context.CancelFunc) {
	limit := r.opts.LeaseDuration / 2
	if st := r.Status(); !st.Serving.IsEmpty() && !st.LastRenew.IsZero() && !r.fencing {
		limit = min(limit, r.fenceAfter()-r.clock.Since(st.LastRenew))
	}
	ctx, cancel := context.WithCancel(ctx)
	if limit <= 0 {
		cancel()
		return ctx, cancel
	}
	// r.clock's timer rather than context.WithTimeout: the deadline follows a fake clock.
	timer := r.clock.NewTimer(limit)
	stop := make(chan struct{})
	go func() {
		select {
		case <-timer.C():
			cancel()
		case <-stop:
		}
	}()
	return ctx, func() {
		close(stop)
		timer.Stop()
		cancel()
	}
}

// round is one pass of the protocol (see Ring). While a fence has not
// succeeded, it only renews the Lease with the slots claimed.
func (r *Ring) round(ctx context.Context) error {
	if r.fencing {
		return r.write(ctx, r.Status().Claimed)
	}
	leases, err := r.list(ctx)
	if err != nil {
		return err
	}
	st := r.Status()
	now := r.clock.Now()
	members, others := r.members(ctx, leases, now)
	target := Assign(members)[r.opts.Identity]
	r.update(func(s *Status) { s.Members, s.Target = members, target })

	// 1. Release what is served outside the target: the Consumer first (told
	// again, if its last call failed, what it may have left half done).
	if keep := st.Serving.Intersect(target); keep != st.Serving || r.unsettled {
		if err := r.serve(ctx, keep); err != nil {
			// Nothing is released, but the Lease is renewed.
			return errors.Join(err, r.write(ctx, st.Claimed))
		}
		st.Serving = keep
	}
	// 2. Claim the free slots of the target.
	free := target.Minus(st.Claimed).Minus(others)
	claimed := st.Claimed.Intersect(target).Union(free)
	if err := r.write(ctx, claimed); err != nil {
		return err
	}
	if released := st.Claimed.Minus(claimed); !released.IsEmpty() {
		logr.FromContextOrDiscard(ctx).Info("Released slots", "slots", released.String(), "members", members)
	}
	// 3. Verify the claims not served yet against a fresh read, those claimed
	// in an earlier round too (after a fence: the Lease may have expired since,
	// and others claimed them); serve what no one else claims.
	pending := claimed.Minus(st.Serving)
	if pending.Len() == 0 {
		return nil
	}
	if leases, err = r.list(ctx); err != nil {
		return err
	}
	_, others = r.members(ctx, leases, r.clock.Now())
	if conflict := pending.Intersect(others); !conflict.IsEmpty() {
		logr.FromContextOrDiscard(ctx).Info("Withdrawing slots claimed by another member too", "slots", conflict.String())
		claimed = claimed.Minus(conflict)
		pending = pending.Minus(conflict)
		if err := r.write(ctx, claimed); err != nil {
			return err
		}
	}
	if pending.IsEmpty() {
		return nil
	}
	if err := ctx.Err(); err != nil {
		// The round outlived its deadline: the fence may be due.
		return fmt.Errorf("not serving slots %q: %w", pending.String(), err)
	}
	return r.serve(ctx, st.Serving.Union(pending))
}

// members returns the identities of the unexpired Leases (this replica
// always included) and the union of the slots the other unexpired members
// claim.
func (r *Ring) members(ctx context.Context, leases []coordinationv1.Lease, now time.Time) ([]string, Slots) {
	members := []string{r.opts.Identity}
	var others Slots
	log := logr.FromContextOrDiscard(ctx)
	for i := range leases {
		l := &leases[i]
		id := ptr.Deref(l.Spec.HolderIdentity, "")
		if id == "" || id == r.opts.Identity || expired(l, now) {
			continue
		}
		members = append(members, id)
		claimed, err := ParseSlots(l.Annotations[SlotsAnnotation])
		if err != nil {
			log.Error(err, "Ignoring unreadable slots of a member", "lease", l.Name)
			continue
		}
		others = others.Union(claimed)
	}
	return sortedUnique(members), others
}

// expired reports whether Lease l was not renewed within its duration.
func expired(l *coordinationv1.Lease, now time.Time) bool {
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return true
	}
	return !now.Before(l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second))
}

// serve tells the Consumer to serve s and records it. If the Consumer fails, it
// may have moved part of the way: Serving becomes what it may serve (the slots
// it served and those of s), and the next round tells it again.
func (r *Ring) serve(ctx context.Context, s Slots) error {
	before := r.Status().Serving
	if err := r.consumer(ctx, s); err != nil {
		r.unsettled = true
		r.update(func(st *Status) { st.Serving = before.Union(s) })
		return fmt.Errorf("consumer refused slots (serving %d, asked %d: acquiring %q, releasing %q): %w",
			before.Len(), s.Len(), s.Minus(before).String(), before.Minus(s).String(), err)
	}
	r.unsettled = false
	acquired, released := s.Minus(before), before.Minus(s)
	if !acquired.IsEmpty() || !released.IsEmpty() {
		logr.FromContextOrDiscard(ctx).Info("Serving slots", "serving", s.Len(),
			"acquired", acquired.String(), "released", released.String())
	}
	r.update(func(st *Status) {
		st.Serving = s
		st.Acquired += acquired.Len()
		st.Released += released.Len()
	})
	return nil
}

// fence tells the Consumer to serve nothing when the Lease has not been
// renewed for 3/4 of its duration (others may soon take the slots over), or
// when an earlier fence failed: the Consumer may still serve some of the
// slots, and others may have taken them over since. Until a fence succeeds,
// rounds only renew the Lease; the slots are claimed again and verified after.
func (r *Ring) fence(ctx context.Context) {
	st := r.Status()
	log := logr.FromContextOrDiscard(ctx)
	switch {
	case r.fencing:
		log.Info("Fencing again: the Consumer may still serve slots", "serving", st.Serving.Len())
	case st.Serving.IsEmpty() || st.LastRenew.IsZero() || r.clock.Since(st.LastRenew) < r.fenceAfter():
		return
	default:
		log.Info("Lease not renewed in time; serving nothing until it is",
			"lastRenew", st.LastRenew, "sinceRenew", r.clock.Since(st.LastRenew), "serving", st.Serving.Len())
	}
	r.fencing = true
	if err := r.serve(ctx, Slots{}); err != nil {
		log.Error(err, "Consumer did not stop serving; fencing again at the next round")
		return
	}
	r.fencing = false
}

// leave stops serving and deletes the Lease (best effort, with a fresh
// context: Run's has ended).
func (r *Ring) leave(log logr.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), r.opts.LeaseDuration/2)
	defer cancel()
	if !r.Status().Serving.IsEmpty() {
		if err := r.serve(ctx, Slots{}); err != nil {
			log.Error(err, "Consumer did not stop serving; leaving the Lease to expire")
			return
		}
	}
	if r.opts.KeepLeaseOnStop {
		log.Info("Stopped serving; the Lease is left to expire", "lease", r.lease)
		return
	}
	err := r.leases.Leases(r.opts.Namespace).Delete(ctx, r.lease, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		log.Error(err, "Could not delete Lease; it expires", "lease", r.lease)
		return
	}
	r.update(func(s *Status) { s.Claimed = Slots{} })
	log.Info("Left the ring", "lease", r.lease)
}

// list reads the ring's Leases with a consistent read.
func (r *Ring) list(ctx context.Context) ([]coordinationv1.Lease, error) {
	list, err := r.leases.Leases(r.opts.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: RingLabel + "=" + r.opts.Name,
	})
	if err != nil {
		return nil, fmt.Errorf("listing the ring's Leases: %w", err)
	}
	return list.Items, nil
}

// write renews this replica's Lease with claimed as its slots, creating it
// if need be.
func (r *Ring) write(ctx context.Context, claimed Slots) error {
	now := metav1.NewMicroTime(r.clock.Now())
	api := r.leases.Leases(r.opts.Namespace)
	lease, err := api.Get(ctx, r.lease, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: r.lease, Namespace: r.opts.Namespace}}
		lease.Spec.AcquireTime = &now
		r.fill(lease, claimed, now)
		_, err = api.Create(ctx, lease, metav1.CreateOptions{})
	case err == nil:
		r.fill(lease, claimed, now)
		_, err = api.Update(ctx, lease, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("writing Lease %s: %w", r.lease, err)
	}
	r.update(func(s *Status) { s.Claimed, s.LastRenew = claimed, now.Time })
	return nil
}

func (r *Ring) fill(l *coordinationv1.Lease, claimed Slots, now metav1.MicroTime) {
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Labels[RingLabel] = r.opts.Name
	l.Annotations[SlotsAnnotation] = claimed.String()
	l.Spec.HolderIdentity = ptr.To(r.opts.Identity)
	l.Spec.LeaseDurationSeconds = ptr.To(int32((r.opts.LeaseDuration + time.Second - 1) / time.Second))
	l.Spec.RenewTime = &now
}

func sortedUnique(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}
