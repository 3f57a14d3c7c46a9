package informer

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/deltacache/deltacache/pkg/informer/informertest"
)

// lossyLW loses, once each, the watch events listed in drop (event type and
// object name), as a proxy that breaks watch semantics would.
type lossyLW struct {
	*informertest.Fake
	mu   sync.Mutex
	drop map[string]bool // "ADDED victim"
}

func (l *lossyLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := l.Fake.WatchWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
		m, err := meta.Accessor(e.Object)
		if err != nil {
			return e, true
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		what := string(e.Type) + " " + m.GetName()
		if l.drop[what] {
			delete(l.drop, what)
			return e, false
		}
		return e, true
	}), nil
}

// metadataOf serves ConsistencyCheck.List and Get from the fake's objects.
func metadataOf(f *informertest.Fake) ConsistencyCheck {
	return ConsistencyCheck{
		List: func(context.Context, metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
			rv := f.ResourceVersion()
			list := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}
			for _, o := range f.Objects() {
				m, _ := meta.Accessor(o)
				list.Items = append(list.Items, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
					Namespace: m.GetNamespace(), Name: m.GetName(), UID: m.GetUID(), ResourceVersion: m.GetResourceVersion()}})
			}
			return list, nil
		},
		Get: func(_ context.Context, namespace, name string) (*metav1.PartialObjectMetadata, error) {
			o, ok := f.Get(namespace + "/" + name)
			if !ok {
				return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, name)
			}
			m, _ := meta.Accessor(o)
			return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
				Namespace: namespace, Name: name, UID: m.GetUID(), ResourceVersion: m.GetResourceVersion()}}, nil
		},
	}
}

// lossyInformer runs an informer over a fake that loses the ADDED of
// a/victim, the DELETED of a/gone and the MODIFIED of a/old, then makes those
// changes (and one more, a/last, which arrives, so that the store's RV is
// past the lost ones).
func lossyInformer(
	t *testing.T, check func(ConsistencyCheck) ConsistencyCheck,
) (*informertest.Fake, *SharedIndexInformer) {
	t.Helper()
	f := informertest.New(&corev1.Pod{})
	f.Create(pod("a", "gone", ""))
	f.Create(pod("a", "old", ""))
	lw := &lossyLW{Fake: f, drop: map[string]bool{"ADDED victim": true, "DELETED gone": true, "MODIFIED old": true}}
	s := newPodInformer(lw, Options{ConsistencyCheck: check(metadataOf(f))})
	reg := addHandler(t, s, newRecorder())
	startInformer(t, s)
	waitSynced(t, reg.HasSyncedChecker())
	f.Create(pod("a", "victim", ""))
	f.Delete(pod("a", "gone", ""))
	o := pod("a", "old", "")
	o.Labels = map[string]string{"v": "2"}
	f.Update(o)
	f.Create(pod("a", "last", ""))
	eventually(t, 5*time.Second, "a/last in the store", func() bool {
		_, ok, _ := s.GetStore().GetByKey("a/last")
		return ok
	})
	return f, s
}

// Without the check, the lost events leave the store wrong for good; one
// check names exactly what drifted.
func TestConsistencyCheckReportsMissingExtraAndStaleObjects(t *testing.T) {
	_, s := lossyInformer(t, func(c ConsistencyCheck) ConsistencyCheck { return c }) // Interval 0: no loop
	want := []string{"a/gone@2", "a/last@7", "a/old@3"}
	equalStrings(t, "store with the check off", storeContent(s), want)
	time.Sleep(300 * time.Millisecond)
	equalStrings(t, "store with the check off, later", storeContent(s), want)

	report, err := s.CheckConsistency(context.Background())
	must(t, err)
	equalStrings(t, "missing", report.Missing, []string{"a/victim"})
	equalStrings(t, "extra", report.Extra, []string{"a/gone"})
	equalStrings(t, "stale", report.Stale, []string{"a/old"})
	if report.Objects != 3 || report.ResourceVersion != "7" || report.Requests != 2 {
		t.Errorf("report = %+v, want 3 objects at RV 7, one LIST page and one Get", report)
	}
}

// With the check on, the drift is found and healed by a relist, and the next
// check finds none.
func TestConsistencyCheckHealsDriftWithARelist(t *testing.T) {
	f, s := lossyInformer(t, func(c ConsistencyCheck) ConsistencyCheck {
		c.Interval = 200 * time.Millisecond
		return c
	})
	eventually(t, 10*time.Second, "the store healed", func() bool {
		got := storeContent(s)
		return len(got) == 3 && got[0] == "a/last@7" && got[1] == "a/old@6" && got[2] == "a/victim@4"
	})
	eventually(t, 10*time.Second, "a clean check after the relist", func() bool {
		r, ok := s.LastDriftReport()
		return ok && !r.Drifted() && r.ResourceVersion == f.ResourceVersion()
	})
}

// An object deleted at the server after the check's list, whose delete the
// store has applied by the time the check compares, is not missing: its
// listed resourceVersion is older than the store's, but the store removed it
// after the list. The check cannot Get it here (Get nil, as when a Get fails
// during a fault, or beyond maxDriftGets): before, every such object counted
// as missing and the informer relisted (the sharded soak found bursts of
// them after its faults).
func TestConsistencyCheckDoesNotCountAnObjectDeletedAfterItsListAsMissing(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.Create(pod("a", "stays", ""))
	f.Create(pod("a", "goes", ""))
	var s *SharedIndexInformer
	var deleteOnce sync.Once
	check := metadataOf(f)
	list := check.List
	check.Get = nil
	check.List = func(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
		page, err := list(ctx, opts)
		if err != nil {
			return nil, err
		}
		// The first check's list: the delete happens after it and reaches the
		// store before the comparison.
		deleteOnce.Do(func() {
			f.Delete(pod("a", "goes", ""))
			eventually(t, 5*time.Second, "a/goes deleted from the store", func() bool {
				_, ok, _ := s.GetStore().GetByKey("a/goes")
				return !ok
			})
		})
		return page, nil
	}
	s = newPodInformer(f, Options{ConsistencyCheck: check})
	startInformer(t, s)
	waitSynced(t, s.HasSyncedChecker())

	report, err := s.CheckConsistency(context.Background())
	must(t, err)
	if report.Drifted() || report.Objects != 2 {
		t.Errorf("report = %+v, want the 2 listed objects and no drift", report)
	}
	// The record of removals lasts only as long as a check: a second check,
	// listing the store's state, compares from scratch.
	report, err = s.CheckConsistency(context.Background())
	must(t, err)
	if report.Drifted() || report.Objects != 1 {
		t.Errorf("second report = %+v, want 1 object and no drift", report)
	}
}
