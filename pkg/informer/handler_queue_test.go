package informer

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/deltacache/deltacache/pkg/informer/informertest"
)

func add(rv string, initial bool) notification {
	return notification{kind: noteAdd, newObj: pod("a", "x", rv), initial: initial}
}
func upd(oldRV, newRV string) notification {
	return notification{kind: noteUpdate, oldObj: pod("a", "x", oldRV), newObj: pod("a", "x", newRV)}
}
func del(rv string) notification { return notification{kind: noteDelete, newObj: pod("a", "x", rv)} }

func renderNotes(notes []notification) []string {
	var out []string
	for _, n := range notes {
		switch n.kind {
		case noteAdd:
			s := "add " + describe(n.newObj)
			if n.initial {
				s += initialSuffix
			}
			out = append(out, s)
		case noteUpdate:
			out = append(out, "update "+describe(n.oldObj)+"->"+describe(n.newObj))
		case noteDelete:
			out = append(out, "delete "+describe(n.newObj))
		}
	}
	return out
}

// delOf is a Delete of the object of uid at rv.
func delOf(rv string, uid types.UID) notification {
	p := pod("a", "x", rv)
	p.UID = uid
	return notification{kind: noteDelete, newObj: p}
}

// TestHandlerQueueCoalescingRule pins the rule documented on mergeNotification.
func TestHandlerQueueCoalescingRule(t *testing.T) {
	cases := []struct {
		name string
		in   []notification
		want []string
	}{
		{"Add+Update → Add(latest), initial kept", []notification{add("1", true), upd("1", "2"), upd("2", "3")},
			[]string{"add a/x@3 initial"}},
		{"Update+Update → Update(oldest old, newest new)", []notification{upd("1", "2"), upd("2", "3")},
			[]string{"update a/x@1->a/x@3"}},
		{"Add+Delete → Add(latest), Delete", []notification{add("1", false), upd("1", "2"), del("3")},
			[]string{"add a/x@2", "delete a/x@3"}},
		//nolint:goconst // expected values are spelled out so the test reads as its specification
		{"Update+Delete → Delete", []notification{upd("1", "2"), del("3")}, []string{"delete a/x@3"}},
		{"Delete+Add → both", []notification{del("3"), add("4", false), upd("4", "5")},
			[]string{"delete a/x@3", "add a/x@5"}},
		{"Delete+Delete of one UID → the first", []notification{delOf("3", "u1"), delOf("4", "u1")},
			[]string{"delete a/x@3"}},
		{"Delete+Delete of two UIDs → both", []notification{delOf("3", "u1"), delOf("4", "u2")},
			[]string{"delete a/x@3", "delete a/x@4"}},
		{"Delete+Add+Delete → every life", []notification{upd("1", "2"), del("3"), add("4", false), del("5")},
			[]string{"delete a/x@3", "add a/x@4", "delete a/x@5"}},
		{"Add+Delete+Add → both lives", []notification{add("1", true), del("2"), add("3", false), upd("3", "4")},
			[]string{"add a/x@1 initial", "delete a/x@2", "add a/x@4"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var notes []notification
			for _, n := range tc.in {
				notes = mergeNotification(notes, n)
			}
			equalStrings(t, "pending", renderNotes(notes), tc.want)
		})
	}
}

// TestHandlerQueueMergeModel drives one key's handler queue with random
// server sequences (creations with new UIDs, updates, deletions) and random
// deliveries of what is pending, and checks what the handler receives
// against the server: an Add only of an absent key, an Update or Delete only
// of the object the handler holds (Update's old object being it), each
// object (UID) the server created is Added once and, once the server deleted
// it, Deleted once; the handler ends at the server's state; a key holds at
// most 1 + 2×(creations since the last delivery) notifications.
// Reproduce with INFORMER_TEST_SEED=<seed>.
func TestHandlerQueueMergeModel(t *testing.T) {
	seed := testSeed(t)
	t.Logf("seed %d (INFORMER_TEST_SEED=%d to reproduce)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	for round := range 2000 {
		mergeModelRound(t, rng, round)
	}
}

type modelObject struct {
	uid types.UID
	rv  int
}

func mergeModelRound(t *testing.T, rng *rand.Rand, round int) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("round %d: "+format, append([]any{round}, args...)...)
	}
	obj := func(o modelObject) *corev1.Pod {
		p := pod("a", "x", strconv.Itoa(o.rv))
		p.UID = o.uid
		return p
	}
	rv, lives := 0, 0
	var server *modelObject // the server's object of the key, nil when absent
	var handler *modelObject
	created, deleted := map[types.UID]bool{}, map[types.UID]bool{}
	added, told := map[types.UID]bool{}, map[types.UID]bool{}
	if rng.IntN(2) == 0 { // the handler starts knowing an object
		lives++
		server = &modelObject{uid: types.UID(strconv.Itoa(lives)), rv: rv}
		h := *server
		handler = &h
		created[server.uid], added[server.uid] = true, true
	}
	var notes []notification
	creations := 0
	deliver := func() {
		for _, n := range notes {
			switch n.kind {
			case noteAdd:
				o := modelObject{uid: uidOf(n.newObj), rv: mustAtoi(rvOf(n.newObj))}
				if handler != nil || added[o.uid] {
					fail("Add of %v while the handler holds %v (added before: %v)", o, handler, added[o.uid])
				}
				added[o.uid], handler = true, &o
			case noteUpdate:
				old := modelObject{uid: uidOf(n.oldObj), rv: mustAtoi(rvOf(n.oldObj))}
				if handler == nil || *handler != old {
					fail("Update from %v while the handler holds %v", old, handler)
				}
				handler = &modelObject{uid: uidOf(n.newObj), rv: mustAtoi(rvOf(n.newObj))}
				if handler.uid != old.uid {
					fail("Update changes the UID %s → %s", old.uid, handler.uid)
				}
			case noteDelete:
				o := modelObject{uid: uidOf(n.newObj), rv: mustAtoi(rvOf(n.newObj))}
				if handler == nil || handler.uid != o.uid || told[o.uid] {
					fail("Delete of %v while the handler holds %v", o, handler)
				}
				told[o.uid], handler = true, nil
			}
		}
		notes, creations = nil, 0
	}
	for range 1 + rng.IntN(12) {
		rv++
		switch {
		case server == nil:
			lives++
			server = &modelObject{uid: types.UID(strconv.Itoa(lives)), rv: rv}
			created[server.uid] = true
			creations++
			notes = mergeNotification(notes, notification{kind: noteAdd, newObj: obj(*server)})
		case rng.IntN(3) == 0:
			gone := *server
			gone.rv = rv
			deleted[gone.uid], server = true, nil
			notes = mergeNotification(notes, notification{kind: noteDelete, newObj: obj(gone)})
		default:
			old := *server
			server.rv = rv
			notes = mergeNotification(notes, notification{kind: noteUpdate, oldObj: obj(old), newObj: obj(*server)})
		}
		if len(notes) > 1+2*creations {
			fail("%d notifications pending after %d creations: %q", len(notes), creations, renderNotes(notes))
		}
		if rng.IntN(4) == 0 {
			deliver()
		}
	}
	deliver()
	if (server == nil) != (handler == nil) || server != nil && *server != *handler {
		fail("handler ends at %v, server at %v", handler, server)
	}
	for uid := range created {
		if !added[uid] {
			fail("object %s was never added", uid)
		}
		if deleted[uid] != told[uid] {
			fail("object %s: deleted %v, handler told %v", uid, deleted[uid], told[uid])
		}
	}
}

func mustAtoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(err)
	}
	return n
}

func newTestRegistration(h toolscache.ResourceEventHandler) *HandlerRegistration {
	s := NewSharedIndexInformer(informertest.New(&corev1.Pod{}), &corev1.Pod{}, Options{Name: "test"})
	return newRegistration(s, h, 0, logr.Discard())
}

func TestCoalescedInitialAddStillCountsForSync(t *testing.T) {
	rec := newRecorder()
	reg := newTestRegistration(rec)
	reg.enqueue("a/x", add("1", true))
	reg.enqueue("a/y", notification{kind: noteAdd, newObj: pod("a", "y", "2"), initial: true})
	reg.enqueue("a/x", del("3"))        // x vanished before the handler saw it
	reg.enqueue("a/x", add("4", false)) // and was created again
	reg.enqueue("a/y", notification{kind: noteUpdate, oldObj: pod("a", "y", "2"), newObj: pod("a", "y", "5")})
	reg.markInformerSynced()
	if reg.HasSynced() {
		t.Fatal("synced with a/x and a/y undelivered")
	}
	reg.start()
	defer reg.stop()
	waitSynced(t, reg.HasSyncedChecker())
	// Synced once both initial adds were handled; x's Delete follows its Add.
	eventually(t, 5*time.Second, "4 deliveries", func() bool { return rec.count() == 4 })
	equalStrings(t, "delivered", rec.all(),
		[]string{"add a/x@1 initial", "delete a/x@3", "add a/x@4", "add a/y@5 initial"})
	reg.mu.Lock()
	left := reg.initialLeft
	reg.mu.Unlock()
	if left != 0 {
		t.Fatalf("initialLeft = %d after every initial add was delivered", left)
	}
}

func TestRegistrationSyncedAtOnceWithEmptyInitialList(t *testing.T) {
	reg := newTestRegistration(newRecorder())
	reg.markInformerSynced()
	if !reg.HasSynced() {
		t.Fatal("not synced with nothing to deliver")
	}
}

func TestHandlerDeliversKeysInFirstQueuedOrderAndPerKeyInOrder(t *testing.T) {
	rec := newRecorder()
	reg := newTestRegistration(rec)
	for i := range 5 {
		reg.enqueue(fmt.Sprintf("a/p%d", i), notification{kind: noteAdd, newObj: pod("a", fmt.Sprintf("p%d", i), "1")})
	}
	reg.enqueue("a/p0", notification{kind: noteDelete, newObj: pod("a", "p0", "2")}) // add+delete: both
	reg.enqueue("a/p1", notification{kind: noteUpdate, oldObj: pod("a", "p1", "1"), newObj: pod("a", "p1", "3")})
	reg.start()
	defer reg.stop()
	eventually(t, 5*time.Second, "6 deliveries", func() bool { return rec.count() == 6 })
	equalStrings(t, "order", rec.all(),
		[]string{"add a/p0@1", "delete a/p0@2", "add a/p1@3", "add a/p2@1", "add a/p3@1", "add a/p4@1"})
}

func TestStoppedRegistrationDropsNotifications(t *testing.T) {
	rec := newRecorder()
	reg := newTestRegistration(rec)
	reg.start()
	reg.stop()
	reg.stop()
	waitClosed(t, reg.Stopped(), 5*time.Second, "goroutine exit")
	reg.enqueue("a/x", add("1", false))
	if reg.pendingCount() != 0 || rec.count() != 0 {
		t.Fatal("stopped registration accepted work")
	}
}

// queuedDeltas returns how many Deltas the DeltaFIFO holds for key.
func queuedDeltas(f *deltaFIFO, key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.items[key])
}

// An object created and deleted while the pop loop is busy reaches the pop
// loop as one key with [Added, Deleted], in one batch; its Add and Delete
// then wait together for a busy handler. The handler must still be told of
// the Delete (controller-runtime's read-your-writes client waits for the
// Delete of each UID it deleted), after the Add, as the server sequenced
// them.
func TestHandlerReceivesAddAndDeleteOfObjectCreatedAndDeletedInOneBatch(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	indexing, releaseIndex := make(chan struct{}), make(chan struct{})
	var gateIndexed sync.Once
	s := newPodInformer(f, Options{Indexers: toolscache.Indexers{"gate": func(obj any) ([]string, error) {
		if obj.(*corev1.Pod).Name == "gate" {
			// Holds the pop loop inside the gate's batch.
			gateIndexed.Do(func() { close(indexing); <-releaseIndex })
		}
		return nil, nil
	}}})
	rec := newRecorder()
	handling, releaseHandler := make(chan struct{}), make(chan struct{})
	reg := addHandler(t, s, toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if obj.(*corev1.Pod).Name == "gate" {
				// Holds the handler while the next batch is distributed.
				close(handling)
				<-releaseHandler
			}
			rec.OnAdd(obj, initial)
		},
		UpdateFunc: rec.OnUpdate,
		DeleteFunc: rec.OnDelete,
	})
	startInformer(t, s)
	waitSynced(t, reg.HasSyncedChecker())

	f.Create(pod("a", "gate", ""))
	waitClosed(t, indexing, 10*time.Second, "the pop loop indexing the gate")
	created := f.Create(pod("a", "x", ""))
	deleted := f.Delete(pod("a", "x", ""))
	eventually(t, 10*time.Second, "a/x's Added and Deleted queued under one key", func() bool {
		return queuedDeltas(s.fifo, "a/x") == 2
	})
	close(releaseIndex)
	waitClosed(t, handling, 10*time.Second, "the handler receiving the gate")
	last := f.ResourceVersion()
	eventually(t, 10*time.Second, "store at the last RV (a/x's batch distributed)", func() bool {
		return s.Indexer().LastStoreSyncResourceVersion() == last
	})
	if _, exists, _ := s.GetStore().GetByKey("a/x"); exists {
		t.Fatal("a/x is stored after its delete")
	}
	close(releaseHandler)
	f.Create(pod("a", "after", ""))
	eventually(t, 10*time.Second, "the handler receiving a/after", func() bool { return len(rec.forKey("a/after")) == 1 })
	equalStrings(t, "a/x", rec.forKey("a/x"), []string{"add " + describe(created), "delete " + describe(deleted)})
}
