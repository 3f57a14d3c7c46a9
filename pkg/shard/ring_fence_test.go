package shard

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

// The fence and what follows it: a replica that may have lost its Lease stops
// serving in time, and serves again only what it verified no one else took.

// hookedLeases is one replica's Lease client over the world's fake API server:
// before each call it runs the hook set with setBefore, if any, with the call's
// context and verb ("list", "get", "create", "update", "delete"); an error the
// hook returns is the call's.
type hookedLeases struct {
	coordinationclient.LeasesGetter
	mu     sync.Mutex
	before func(ctx context.Context, verb string) error
}

func (h *hookedLeases) setBefore(f func(ctx context.Context, verb string) error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.before = f
}

func (h *hookedLeases) hook(ctx context.Context, verb string) error {
	h.mu.Lock()
	f := h.before
	h.mu.Unlock()
	if f == nil {
		return nil
	}
	return f(ctx, verb)
}

func (h *hookedLeases) Leases(namespace string) coordinationclient.LeaseInterface {
	return &hookedLeaseClient{LeaseInterface: h.LeasesGetter.Leases(namespace), h: h}
}

type hookedLeaseClient struct {
	coordinationclient.LeaseInterface
	h *hookedLeases
}

func (c *hookedLeaseClient) List(ctx context.Context, o metav1.ListOptions) (*coordinationv1.LeaseList, error) {
	if err := c.h.hook(ctx, "list"); err != nil {
		return nil, err
	}
	return c.LeaseInterface.List(ctx, o)
}

func (c *hookedLeaseClient) Get(ctx context.Context, name string, o metav1.GetOptions) (*coordinationv1.Lease, error) {
	if err := c.h.hook(ctx, "get"); err != nil {
		return nil, err
	}
	return c.LeaseInterface.Get(ctx, name, o)
}

func (c *hookedLeaseClient) Create(ctx context.Context, l *coordinationv1.Lease, o metav1.CreateOptions) (*coordinationv1.Lease, error) {
	if err := c.h.hook(ctx, "create"); err != nil {
		return nil, err
	}
	return c.LeaseInterface.Create(ctx, l, o)
}

func (c *hookedLeaseClient) Update(ctx context.Context, l *coordinationv1.Lease, o metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if err := c.h.hook(ctx, "update"); err != nil {
		return nil, err
	}
	return c.LeaseInterface.Update(ctx, l, o)
}

func (c *hookedLeaseClient) Delete(ctx context.Context, name string, o metav1.DeleteOptions) error {
	if err := c.h.hook(ctx, "delete"); err != nil {
		return err
	}
	return c.LeaseInterface.Delete(ctx, name, o)
}

// A replica that fenced and whose Lease expired claims its old share again in
// its next round, but between that round's list and its write the others saw its
// Lease expired and took the share over. The claims it held before the fence are
// no longer its own: it must verify them after its write, as new claims, and
// withdraw what the others hold.
func TestReplicaBackAfterItsLeaseExpiredVerifiesItsOldClaimsBeforeServing(t *testing.T) {
	w := newWorld(t)
	leases := &hookedLeases{LeasesGetter: w.client.CoordinationV1()}
	w.join("a")
	b := w.joinVia("b", leases)
	w.join("c")
	w.settle()
	w.assertBalanced()
	share := b.Status().Serving

	// b cannot reach the API server: it fences at 3/4 of its Lease, while a and c renew.
	w.clock.Step(testLease * 3 / 4)
	b.fence(context.Background())
	w.round("a")
	w.round("c")
	w.clock.Step(testLease / 4) // b's Lease expired

	// b is back. Its round lists the Leases (a's and c's, claiming their shares); before
	// its write lands, a and c see b's Lease expired and take its share over.
	var once sync.Once
	leases.setBefore(func(_ context.Context, verb string) error {
		if verb == "get" {
			once.Do(func() {
				w.round("a")
				w.round("c")
			})
		}
		return nil
	})
	w.round("b") // the world fails the test if b is told to serve a slot a or c serves
	leases.setBefore(nil)
	if taken := w.rings["a"].Status().Serving.Union(w.rings["c"].Status().Serving).Intersect(share); taken != share {
		t.Fatalf("a and c took %d of b's %d slots while its Lease was expired, want all", taken.Len(), share.Len())
	}
	if got := b.Status().Serving; !got.IsEmpty() {
		t.Fatalf("b serves %d slots that a and c took over", got.Len())
	}
	w.settle()
	w.assertBalanced()
}

// A blackhole freezes the connection under a round's request (no reset, no
// answer): the round must not hold the fence back. Run cancels the round when
// the fence falls due, 3/4 of the Lease after the last renewal, and fences then,
// well before the others may take the slots over.
func TestReplicaWhoseRoundHangsFencesAtThreeQuartersOfItsLease(t *testing.T) {
	w := newWorld(t)
	leases := &hookedLeases{LeasesGetter: w.client.CoordinationV1()}
	r := w.joinVia("a", leases)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() {
		leases.setBefore(nil)
		cancel()
		<-done
	}()
	<-r.FirstRound()
	if got := w.served()["a"]; got != AllSlots().String() {
		t.Fatalf("a serves %q after its first round, want every slot", got)
	}
	renewed := r.Status().LastRenew

	hung := make(chan string, 100)
	leases.setBefore(func(ctx context.Context, verb string) error {
		hung <- verb
		<-ctx.Done()
		return ctx.Err()
	})
	w.clock.Step(r.opts.RenewInterval) // the next round starts, and its first request hangs
	select {
	case <-hung:
	case <-time.After(30 * time.Second):
		t.Fatal("the round after the first did not start")
	}
	w.clock.SetTime(renewed.Add(testLease * 3 / 4))

	deadline := time.Now().Add(30 * time.Second)
	for w.served()["a"] != "" {
		if time.Now().After(deadline) {
			t.Fatalf("a serves %d slots at 3/4 of its Lease after its last renewal (%s), its round hung in a request",
				r.Status().Serving.Len(), renewed.Format(time.RFC3339))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A fence whose Consumer fails midway (an eviction timed out) leaves it serving
// part of the share. The Lease is renewed at the next round: the ring must not
// take the Consumer's failure for a fence done, nor for no fence at all: it fences
// again, and serves the share again only through a new claim.
func TestFenceThatFailsMidwayIsRepeatedAndTheShareServedAgainWhole(t *testing.T) {
	w := newWorld(t)
	a := w.join("a")
	w.join("b")
	w.settle()
	share := a.Status().Serving
	var half Slots
	for slot := range NumSlots {
		if share.Has(slot) && half.Len() < share.Len()/2 {
			half.Add(slot)
		}
	}

	w.clock.Step(testLease * 3 / 4)
	w.mu.Lock()
	w.refuse["a"] = func(before, _ Slots) (Slots, error) {
		return before.Minus(half), errors.New("evicting ConfigMaps: context deadline exceeded")
	}
	w.mu.Unlock()
	a.fence(context.Background()) // the Consumer stopped serving half of the share, then failed
	w.round("b")
	w.round("a") // the Lease renewed
	a.fence(context.Background())
	w.settle()

	st := a.Status()
	if got := w.served()["a"]; got != st.Serving.String() {
		t.Fatalf("a's Consumer serves %d slots, its ring says it serves %d", mustParse(t, got).Len(), st.Serving.Len())
	}
	if st.Serving != share {
		t.Fatalf("a serves %d slots, want its share of %d", st.Serving.Len(), share.Len())
	}
	w.assertBalanced()
}

func mustParse(t *testing.T, s string) Slots {
	t.Helper()
	slots, err := ParseSlots(s)
	if err != nil {
		t.Fatal(err)
	}
	return slots
}
