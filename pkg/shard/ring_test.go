package shard

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// world is a set of replicas sharing a fake API server and a fake clock;
// every consumer call checks that no slot is served by two live replicas.
type world struct {
	t       *testing.T
	clock   *clocktesting.FakeClock
	client  *fake.Clientset
	mu      sync.Mutex
	serving map[string]Slots // live replicas' served slots
	rings   map[string]*Ring
	// refuse, if set for a replica, fails its consumer's next call: the call
	// leaves it serving what refuse returns (part of the way), with its error.
	refuse map[string]func(before, asked Slots) (Slots, error)
}

const testLease = 10 * time.Second

func newWorld(t *testing.T) *world {
	return &world{t: t, clock: clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0)), client: fake.NewClientset(),
		serving: map[string]Slots{}, rings: map[string]*Ring{}, refuse: map[string]func(Slots, Slots) (Slots, error){}}
}

func (w *world) join(id string) *Ring {
	w.t.Helper()
	return w.joinVia(id, w.client.CoordinationV1())
}

// joinVia joins replica id, whose Lease calls go through leases.
func (w *world) joinVia(id string, leases coordinationclient.LeasesGetter) *Ring {
	w.t.Helper()
	consumer := func(_ context.Context, serve Slots) error {
		w.mu.Lock()
		defer w.mu.Unlock()
		var err error
		if refuse := w.refuse[id]; refuse != nil {
			delete(w.refuse, id)
			serve, err = refuse(w.serving[id], serve)
		}
		for other, s := range w.serving {
			if other != id && !s.Intersect(serve).IsEmpty() {
				w.t.Errorf("%s told to serve slots %s that %s serves", id, s.Intersect(serve).String(), other)
			}
		}
		w.serving[id] = serve
		return err
	}
	r, err := New(leases, consumer, Options{Namespace: "ops", Name: "demo", Identity: id,
		LeaseDuration: testLease, RenewInterval: testLease / 5, Clock: w.clock})
	if err != nil {
		w.t.Fatal(err)
	}
	w.rings[id] = r
	return r
}

// kill ends a replica without a goodbye: its process is gone, its Lease stays.
func (w *world) kill(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.serving, id)
	delete(w.rings, id)
}

func (w *world) round(id string) {
	w.t.Helper()
	if err := w.rings[id].round(context.Background()); err != nil {
		w.t.Fatalf("%s: round: %v", id, err)
	}
}

// settle runs rounds of every live replica, in identity order, until nothing changes.
func (w *world) settle() {
	w.t.Helper()
	for range 10 {
		before := fmt.Sprint(w.served())
		for _, id := range w.ids() {
			w.round(id)
		}
		if fmt.Sprint(w.served()) == before {
			return
		}
	}
	w.t.Fatal("the ring did not settle in 10 rounds")
}

func (w *world) ids() []string {
	var ids []string
	for id := range w.rings {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (w *world) served() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]string{}
	for id, s := range w.serving {
		out[id] = s.String()
	}
	return out
}

// assertBalanced checks that the live replicas serve exactly Assign's shares.
func (w *world) assertBalanced() {
	w.t.Helper()
	want := Assign(w.ids())
	w.mu.Lock()
	defer w.mu.Unlock()
	var union Slots
	for _, id := range w.ids() {
		if w.serving[id] != want[id] {
			w.t.Errorf("%s serves %d slots, want its %d", id, w.serving[id].Len(), want[id].Len())
		}
		union = union.Union(w.serving[id])
	}
	if union != AllSlots() {
		w.t.Errorf("the replicas serve %d slots in all, want %d", union.Len(), NumSlots)
	}
}

func TestFirstReplicaServesEverySlot(t *testing.T) {
	w := newWorld(t)
	r := w.join("a")
	w.round("a")
	st := r.Status()
	if st.Serving != AllSlots() || st.Claimed != AllSlots() || !slices.Equal(st.Members, []string{"a"}) {
		t.Fatalf("status = serving %d, claimed %d, members %v", st.Serving.Len(), st.Claimed.Len(), st.Members)
	}
	lease, err := w.client.CoordinationV1().Leases("ops").Get(context.Background(), "demo-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lease.Labels[RingLabel] != "demo" || lease.Annotations[SlotsAnnotation] != "0-1023" ||
		*lease.Spec.HolderIdentity != "a" || *lease.Spec.LeaseDurationSeconds != 10 {
		t.Fatalf("Lease = labels %v, annotations %v, spec %+v", lease.Labels, lease.Annotations, lease.Spec)
	}
}

func TestJoiningReplicaServesOnlyAfterTheOwnerReleased(t *testing.T) {
	w := newWorld(t)
	w.join("a")
	w.round("a")
	w.join("b")
	w.round("b") // b's share is claimed by a: b claims nothing
	if s := w.rings["b"].Status(); !s.Serving.IsEmpty() || !s.Claimed.IsEmpty() {
		t.Fatalf("b serves %d, claims %d slots before a released them", s.Serving.Len(), s.Claimed.Len())
	}
	w.round("a") // a releases b's share
	if got, want := w.rings["a"].Status().Claimed, Assign([]string{"a", "b"})["a"]; got != want {
		t.Fatalf("a claims %d slots after the release, want its %d", got.Len(), want.Len())
	}
	w.round("b") // b takes it
	w.assertBalanced()
	if st := w.rings["b"].Status(); st.Acquired != st.Serving.Len() {
		t.Errorf("b acquired %d slots, serves %d", st.Acquired, st.Serving.Len())
	}
}

func TestKilledReplicasSlotsAreTakenOverOnceItsLeaseExpired(t *testing.T) {
	w := newWorld(t)
	for _, id := range []string{"a", "b", "c"} {
		w.join(id)
	}
	w.settle()
	w.assertBalanced()
	w.kill("b")
	w.clock.Step(testLease - time.Second)
	w.settle() // b's Lease is still valid: nobody takes its slots
	if got := w.rings["a"].Status().Serving.Union(w.rings["c"].Status().Serving).Len(); got == NumSlots {
		t.Fatal("b's slots were taken before its Lease expired")
	}
	w.clock.Step(time.Second)
	w.settle()
	w.assertBalanced()
	if m := w.rings["a"].Status().Members; !slices.Equal(m, []string{"a", "c"}) {
		t.Fatalf("members = %v, want [a c]", m)
	}
}

func TestLeavingReplicaDeletesItsLeaseAndIsTakenOverAtOnce(t *testing.T) {
	w := newWorld(t)
	for _, id := range []string{"a", "b"} {
		w.join(id)
	}
	w.settle()
	w.rings["b"].leave(w.rings["b"].opts.Logger)
	if !w.rings["b"].Status().Serving.IsEmpty() {
		t.Fatal("b still serves after leaving")
	}
	w.kill("b")
	w.settle() // no clock step: the Lease is gone
	w.assertBalanced()
}

func TestReplicaThatCannotRenewStopsServingBeforeItsLeaseExpires(t *testing.T) {
	w := newWorld(t)
	r := w.join("a")
	w.round("a")
	w.clock.Step(testLease * 3 / 4)
	r.fence(context.Background())
	if !r.Status().Serving.IsEmpty() {
		t.Fatal("a still serves 3/4 of a Lease duration after its last renewal")
	}
	w.round("a") // a renewal restores it
	if r.Status().Serving != AllSlots() {
		t.Fatal("a does not serve again after renewing")
	}
}

// TestRingNeverServesASlotTwice runs replicas that join, die and leave in a
// random order, with rounds in a random order and time passing (seed:
// SHARD_TEST_SEED, else random and logged); the world's
// consumer fails the test if two live replicas are ever told to serve one
// slot, and once things settle the live replicas serve exactly Assign's
// shares.
func TestRingNeverServesASlotTwice(t *testing.T) {
	seed := rand.Uint64()
	if v, err := strconv.ParseUint(os.Getenv("SHARD_TEST_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("seed %d (SHARD_TEST_SEED)", seed)
	rng := rand.New(rand.NewPCG(seed, 13))
	w := newWorld(t)
	next := 0
	for step := range 400 {
		ids := w.ids()
		switch op := rng.IntN(20); {
		case op == 0 && len(ids) < 5:
			w.join(fmt.Sprintf("r%d", next))
			next++
		case op == 1 && len(ids) > 1:
			w.kill(ids[rng.IntN(len(ids))])
		case op == 2 && len(ids) > 1:
			id := ids[rng.IntN(len(ids))]
			w.rings[id].leave(w.rings[id].opts.Logger)
			w.kill(id)
		case op == 3:
			// Time passes; each live replica's ticker fences it if need be
			// (Run calls fence every RenewInterval).
			w.clock.Step(time.Duration(rng.IntN(int(testLease/time.Second))) * time.Second)
			for _, id := range w.ids() {
				w.rings[id].fence(context.Background())
			}
		default:
			if len(ids) > 0 {
				w.round(ids[rng.IntN(len(ids))])
			}
		}
		if len(w.rings) == 0 {
			w.join(fmt.Sprintf("r%d", next))
			next++
		}
		if t.Failed() {
			t.Fatalf("step %d (seed %d)", step, seed)
		}
	}
	w.clock.Step(testLease) // Leases of killed replicas expire
	for _, id := range w.ids() {
		w.rings[id].fence(context.Background())
	}
	w.settle()
	w.assertBalanced()
}
