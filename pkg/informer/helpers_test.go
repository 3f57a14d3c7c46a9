package informer

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// Names and values that many tests share.
const (
	appLabel      = "app"  // label key of the "app" index
	tierLabel     = "tier" // label key of the "tier" index
	badLabelValue = "bad"  // label value on which the test index functions fail
	appWeb        = "app=web"
	ns1           = "ns1"
	podsResource  = "pods"
	podKind       = "Pod"
	podListKind   = "PodList"
	trueValue     = "true" // a query parameter or annotation set to true

	opList      = "list"      // ListWatchError.Op of a paginated LIST
	opWatchList = "watchlist" // ListWatchError.Op of a WatchList request

	modeWatchList = "WatchList" // subtest name of the WatchList mode
	oursName      = "ours"      // our informer in differential tests
	clientGoName  = "client-go" // the client-go reference in differential tests and benchmarks

	initialSuffix = " initial" // appended to a recorded add that is part of the initial list
	verbDelete    = "delete"
)

// pod builds a pod; labels are given as "k=v".
func pod(ns, name, rv string, labels ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}}
	for _, l := range labels {
		k, v, _ := strings.Cut(l, "=")
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = v
	}
	return p
}

// describe renders an object as "ns/name@rv", tombstones as "tombstone(ns/name@rv)".
func describe(obj any) string {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		if t.Obj == nil {
			return "tombstone(" + t.Key + ")"
		}
		return "tombstone(" + describe(t.Obj) + ")"
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Sprintf("%T", obj)
	}
	key := m.GetName()
	if m.GetNamespace() != "" {
		key = m.GetNamespace() + "/" + key
	}
	return key + "@" + m.GetResourceVersion()
}

func describeAll(objs []any) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, describe(o))
	}
	slices.Sort(out)
	return out
}

func keyOfObj(obj any) string {
	k, _ := toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	return k
}

// recorder is a ResourceEventHandler that records every call as a string:
// "add ns/n@rv initial", "update ns/n@old->new", "delete ns/n@rv".
type recorder struct {
	mu     sync.Mutex
	events []string
	byKey  map[string][]string
	notify chan struct{}
	block  chan struct{} // if set, every call waits for it to be closed
	onCall func(event string)
}

func newRecorder() *recorder {
	return &recorder{byKey: map[string][]string{}, notify: make(chan struct{}, 1)}
}

func (r *recorder) record(key, e string) {
	if r.block != nil {
		<-r.block
	}
	r.mu.Lock()
	r.events = append(r.events, e)
	r.byKey[key] = append(r.byKey[key], e)
	f := r.onCall
	r.mu.Unlock()
	select {
	case r.notify <- struct{}{}:
	default:
	}
	if f != nil {
		f(e)
	}
}

func (r *recorder) OnAdd(obj any, initial bool) {
	e := "add " + describe(obj)
	if initial {
		e += initialSuffix
	}
	r.record(keyOfObj(obj), e)
}

func (r *recorder) OnUpdate(oldObj, newObj any) {
	m, _ := meta.Accessor(oldObj)
	r.record(keyOfObj(newObj), "update "+describe(newObj)+" from "+m.GetResourceVersion())
}

func (r *recorder) OnDelete(obj any) { r.record(keyOfObj(obj), "delete "+describe(obj)) }

func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func (r *recorder) forKey(key string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.byKey[key])
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// eventually polls cond every millisecond until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitClosed waits for ch to close.
func waitClosed(t *testing.T, ch <-chan struct{}, timeout time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(timeout):
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func equalStrings(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n got: %q\nwant: %q", what, got, want)
	}
}

func sortStrings(s []string) { slices.Sort(s) }
