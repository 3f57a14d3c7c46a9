package informer

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
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

// TestHandlerQueueCoalescingRule pins the rule documented in doc.go.
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
		{"Add+Delete → nothing", []notification{add("1", false), upd("1", "2"), del("3")}, nil},
		//nolint:goconst // expected values are spelled out so the test reads as its specification
		{"Update+Delete → Delete", []notification{upd("1", "2"), del("3")}, []string{"delete a/x@3"}},
		{"Delete+Add → both", []notification{del("3"), add("4", false), upd("4", "5")},
			[]string{"delete a/x@3", "add a/x@5"}},
		{"Delete+Delete → first", []notification{del("3"), del("4")}, []string{"delete a/x@3"}},
		{"Delete+Add+Delete → first delete", []notification{upd("1", "2"), del("3"), add("4", false), del("5")},
			[]string{"delete a/x@3"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var notes []notification
			for _, n := range tc.in {
				notes = mergeNotification(notes, n)
				if len(notes) > 2 {
					t.Fatalf("key holds %d notifications", len(notes))
				}
			}
			equalStrings(t, "pending", renderNotes(notes), tc.want)
		})
	}
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
	reg.enqueue("a/x", del("3")) // x vanished before the handler saw it
	reg.markInformerSynced()
	if reg.HasSynced() {
		t.Fatal("synced with a/y undelivered")
	}
	reg.start()
	defer reg.stop()
	waitSynced(t, reg.HasSyncedChecker())
	equalStrings(t, "delivered", rec.all(), []string{"add a/y@2 initial"})
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
	reg.enqueue("a/p0", notification{kind: noteDelete, newObj: pod("a", "p0", "2")}) // add+delete: nothing
	reg.enqueue("a/p1", notification{kind: noteUpdate, oldObj: pod("a", "p1", "1"), newObj: pod("a", "p1", "3")})
	reg.start()
	defer reg.stop()
	eventually(t, 5*time.Second, "4 deliveries", func() bool { return rec.count() == 4 })
	equalStrings(t, "order", rec.all(), []string{"add a/p1@3", "add a/p2@1", "add a/p3@1", "add a/p4@1"})
}

func TestStoppedRegistrationDropsNotifications(t *testing.T) {
	rec := newRecorder()
	reg := newTestRegistration(rec)
	reg.start()
	reg.stop()
	reg.stop()
	waitClosed(t, reg.Stopped(), 5*time.Second, "goroutine exit")
	reg.enqueue("a/x", add("1", false))
	if reg.Pending() != 0 || rec.count() != 0 {
		t.Fatal("stopped registration accepted work")
	}
}
