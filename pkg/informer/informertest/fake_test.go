package informertest

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

func pod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name}}
}

func names(t *testing.T, obj runtime.Object) (out []string, rv, cont string) {
	t.Helper()
	items, err := meta.ExtractList(obj)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		m, _ := meta.Accessor(it)
		out = append(out, m.GetName()+"@"+m.GetResourceVersion())
	}
	lm, _ := meta.ListAccessor(obj)
	return out, lm.GetResourceVersion(), lm.GetContinue()
}

func recv(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case e, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("no event")
		return watch.Event{}
	}
}

func describeEvent(e watch.Event) string {
	if e.Type == watch.Error {
		return "ERROR " + string(apierrors.ReasonForError(apierrors.FromObject(e.Object)))
	}
	m, _ := meta.Accessor(e.Object)
	return string(e.Type) + " " + m.GetName() + "@" + m.GetResourceVersion()
}

func TestStateListIsPaginatedFromOneSnapshot(t *testing.T) {
	f := New(&corev1.Pod{})
	f.Create(pod("p1"))
	f.Create(pod("p2"))
	f.Create(pod("p3"))
	page1, err := f.List(metav1.ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	got, rv, cont := names(t, page1)
	if len(got) != 2 || got[0] != "p1@2" || got[1] != "p2@3" || rv != "4" || cont == "" {
		t.Fatalf("page 1: %v rv=%s continue=%q", got, rv, cont)
	}
	f.Create(pod("p4")) // not part of the snapshot
	page2, err := f.List(metav1.ListOptions{Limit: 2, Continue: cont})
	if err != nil {
		t.Fatal(err)
	}
	got, rv, cont = names(t, page2)
	if len(got) != 1 || got[0] != "p3@4" || rv != "4" || cont != "" {
		t.Fatalf("page 2: %v rv=%s continue=%q", got, rv, cont)
	}
	reqs := f.Requests()
	if len(reqs) != 2 || reqs[1].Options.Continue == "" || reqs[0].Verb != VerbList {
		t.Fatalf("requests %+v", reqs)
	}
}

func TestExpiredContinueTokenAnswers410(t *testing.T) {
	f := New(&corev1.Pod{})
	f.Create(pod("p1"))
	f.Create(pod("p2"))
	page1, err := f.List(metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, _, cont := names(t, page1)
	if cont == "" {
		t.Fatal("page 1 of 2 has no continue token")
	}
	f.ExpireContinueTokens(true)
	if _, err := f.List(metav1.ListOptions{Limit: 1, Continue: cont}); !apierrors.IsResourceExpired(err) {
		t.Fatalf("continuation = %v, want 410 Expired", err)
	}
	f.ExpireContinueTokens(false)
	page2, err := f.List(metav1.ListOptions{Limit: 1, Continue: cont})
	if err != nil {
		t.Fatalf("continuation after ExpireContinueTokens(false) = %v", err)
	}
	if got, rv, cont := names(t, page2); len(got) != 1 || got[0] != "p2@3" || rv != "3" || cont != "" {
		t.Fatalf("page 2: %v rv=%s continue=%q", got, rv, cont)
	}
}

func TestWatchReplaysHistoryAfterRVThenFollowsLiveChanges(t *testing.T) {
	f := New(&corev1.Pod{})
	f.Create(pod("p1")) // rv 2
	f.Update(pod("p1")) // rv 3
	f.Create(pod("p2")) // rv 4
	w, err := f.Watch(metav1.ListOptions{ResourceVersion: "2"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	f.Delete(pod("p1")) // rv 5
	f.SendBookmark()
	got := make([]string, 0, 4)
	for range 4 {
		got = append(got, describeEvent(recv(t, w)))
	}
	want := []string{"MODIFIED p1@3", "ADDED p2@4", "DELETED p1@5", "BOOKMARK @5"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events %q, want %q", got, want)
		}
	}
}

func TestCompactExpiresWatchesAndOldRVs(t *testing.T) {
	f := New(&corev1.Pod{})
	f.Create(pod("p1"))
	w, err := f.Watch(metav1.ListOptions{ResourceVersion: "2"})
	if err != nil {
		t.Fatal(err)
	}
	f.Create(pod("p2"))
	f.Compact()
	if got := describeEvent(recv(t, w)); got != "ADDED p2@3" {
		t.Fatalf("first event %s", got)
	}
	if got := describeEvent(recv(t, w)); got != "ERROR Expired" {
		t.Fatalf("second event %s", got)
	}
	if _, ok := <-w.ResultChan(); ok {
		t.Fatal("stream not closed after Compact")
	}
	if _, err := f.Watch(metav1.ListOptions{ResourceVersion: "2"}); !apierrors.IsResourceExpired(err) {
		t.Fatalf("watch from compacted RV = %v", err)
	}
	if _, err := f.Watch(metav1.ListOptions{ResourceVersion: "99"}); err == nil || !apierrors.IsTimeout(err) {
		t.Fatalf("watch from future RV = %v, want too large RV", err)
	}
}

func TestScriptedAnswersComeFirstAndRecordOptions(t *testing.T) {
	f := New(&corev1.Pod{})
	f.ScriptList(ListResponse{Err: ErrForbidden()},
		ListResponse{Items: []runtime.Object{pod("x")}, ResourceVersion: "50", Continue: "c"})
	f.ScriptWatch(WatchResponse{Events: []watch.Event{{Type: watch.Added, Object: pod("y")}}, Close: true})
	if _, err := f.List(metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("first list = %v", err)
	}
	l, err := f.List(metav1.ListOptions{Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	got, rv, cont := names(t, l)
	if len(got) != 1 || got[0] != "x@" || rv != "50" || cont != "c" {
		t.Fatalf("scripted page %v %s %s", got, rv, cont)
	}
	w, err := f.Watch(metav1.ListOptions{ResourceVersion: "50", AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := describeEvent(recv(t, w)); got != "ADDED y@" {
		t.Fatalf("event %s", got)
	}
	if _, ok := <-w.ResultChan(); ok {
		t.Fatal("scripted stream with Close did not close")
	}
	opts := f.RequestsOf(VerbWatch)
	if len(opts) != 1 || opts[0].ResourceVersion != "50" || !opts[0].AllowWatchBookmarks {
		t.Fatalf("watch requests %+v", opts)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := f.WaitForWatch(ctx, 0)
	if err != nil || s.Options.ResourceVersion != "50" {
		t.Fatalf("WaitForWatch = %v, %v", s, err)
	}
	reqs := f.Requests()
	if len(reqs) != 3 || reqs[0].Verb != VerbList || reqs[1].Options.Limit != 3 || reqs[2].Verb != VerbWatch {
		t.Fatalf("requests %+v, want list, list (limit 3), watch", reqs)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel2()
	if _, err := f.WaitForRequests(ctx2, 10); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitForRequests = %v", err)
	}
}

func TestStreamStopUnblocksAndDropsFurtherSends(t *testing.T) {
	s := newStream(metav1.ListOptions{})
	s.Add(pod("p"))
	s.Stop()
	s.Stop()
	if s.Add(pod("q")) {
		t.Fatal("send after Stop accepted")
	}
	select {
	case <-s.Stopped():
	default:
		t.Fatal("Stopped not closed")
	}
	// The result channel closes.
	for range s.ResultChan() {
	}
}

func TestWaitForWatchSeesAWatchOpenedConcurrently(t *testing.T) {
	f := New(&corev1.Pod{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	type result struct {
		s   *Stream
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := f.WaitForWatch(ctx, 1)
		done <- result{s, err}
	}()
	for _, rv := range []string{"", "1"} {
		w, err := f.Watch(metav1.ListOptions{ResourceVersion: rv})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
	}
	r := <-done
	if r.err != nil || r.s.Options.ResourceVersion != "1" {
		t.Fatalf("WaitForWatch(1) = %v, %v; want the watch from RV 1", r.s, r.err)
	}
}

func TestServeWatchListSendsStateThenEndBookmarkThenLiveChanges(t *testing.T) {
	f := New(&corev1.Pod{})
	if !f.IsWatchListSemanticsUnSupported() {
		t.Fatal("a new Fake claims WatchList support")
	}
	f.Create(pod("p1")) // rv 2
	f.Create(pod("p2")) // rv 3
	f.Compact()
	initial := true
	opts := metav1.ListOptions{ResourceVersion: "2", SendInitialEvents: &initial,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true}
	if _, err := f.Watch(opts); !apierrors.IsResourceExpired(err) {
		t.Fatalf("watch from a compacted RV without WatchList = %v, want 410 Expired", err)
	}

	f.ServeWatchList(true)
	if f.IsWatchListSemanticsUnSupported() {
		t.Fatal("ServeWatchList(true) not reported")
	}
	w, err := f.Watch(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	want := []string{"ADDED p1@2", "ADDED p2@3", "BOOKMARK @3"}
	var end watch.Event
	for i := range want {
		e := recv(t, w)
		if got := describeEvent(e); got != want[i] {
			t.Fatalf("event %d = %s, want %s", i, got, want[i])
		}
		end = e
	}
	if m, _ := meta.Accessor(end.Object); m.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
		t.Fatalf("last initial event %+v lacks the %s annotation", end.Object, metav1.InitialEventsAnnotationKey)
	}
	if _, ok := end.Object.(*corev1.Pod); !ok {
		t.Fatalf("bookmark object is %T, want *v1.Pod", end.Object)
	}
	f.Create(pod("p3"))
	if got := describeEvent(recv(t, w)); got != "ADDED p3@4" {
		t.Fatalf("live event %s, want ADDED p3@4", got)
	}
}
