package informer

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	metadatafake "k8s.io/client-go/metadata/fake"
	restfake "k8s.io/client-go/rest/fake"
	"k8s.io/client-go/util/watchlist"
)

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: podsResource}
var podGVK = schema.GroupVersionKind{Version: "v1", Kind: podKind}

func TestListWatchAppliesSelectorsAndDecidesBookmarks(t *testing.T) {
	const onNode1 = "spec.nodeName=n1"
	var got []metav1.ListOptions
	lw := NewListWatch(
		func(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
			got = append(got, o)
			return &corev1.PodList{}, nil
		},
		func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
			got = append(got, o)
			return watch.NewEmptyWatch(), nil
		},
		ListWatchOptions{LabelSelector: appWeb, FieldSelector: onNode1},
	)
	_, err := lw.List(metav1.ListOptions{LabelSelector: "ignored", Limit: 5})
	must(t, err)
	_, err = lw.Watch(metav1.ListOptions{ResourceVersion: "7", AllowWatchBookmarks: true})
	must(t, err)
	want := []metav1.ListOptions{
		{LabelSelector: appWeb, FieldSelector: onNode1, Limit: 5},
		{LabelSelector: appWeb, FieldSelector: onNode1, ResourceVersion: "7", Watch: true, AllowWatchBookmarks: false},
	}
	for i := range want {
		if got[i].String() != want[i].String() {
			t.Fatalf("request %d options = %s, want %s", i, got[i].String(), want[i].String())
		}
	}
	if !watchlist.DoesClientNotSupportWatchListSemantics(lw) {
		t.Fatal("a ListWatch without bookmarks must opt out of WatchList semantics")
	}
}

func TestRESTListWatchBuildsNamespacedRequests(t *testing.T) {
	var mu sync.Mutex
	var urls []string
	client := &restfake.RESTClient{
		NegotiatedSerializer: scheme.Codecs.WithoutConversion(),
		GroupVersion:         corev1.SchemeGroupVersion,
		VersionedAPIPath:     "/api/v1",
		Client: restfake.CreateHTTPClient(func(req *http.Request) (*http.Response, error) {
			mu.Lock()
			urls = append(urls, req.URL.Path+"?"+req.URL.RawQuery)
			mu.Unlock()
			body, _ := json.Marshal(&corev1.PodList{
				TypeMeta: metav1.TypeMeta{Kind: podListKind, APIVersion: "v1"},
				ListMeta: metav1.ListMeta{ResourceVersion: "9"},
				Items:    []corev1.Pod{*pod(ns1, "p1", "3")},
			})
			return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(bytes.NewReader(body))}, nil
		}),
	}
	lw := NewRESTListWatch(client, podsResource, true, scheme.ParameterCodec,
		ListWatchOptions{Namespace: ns1, LabelSelector: appWeb})
	obj, err := lw.ListWithContext(context.Background(), metav1.ListOptions{Limit: 500})
	must(t, err)
	list, ok := obj.(*corev1.PodList)
	if !ok || len(list.Items) != 1 || list.Items[0].Name != "p1" || list.ResourceVersion != "9" {
		t.Fatalf("list = %#v", obj)
	}
	clusterLW := NewRESTListWatch(client, "nodes", false, scheme.ParameterCodec, ListWatchOptions{Namespace: ns1})
	_, _ = clusterLW.ListWithContext(context.Background(), metav1.ListOptions{})
	equalStrings(t, "urls", urls, []string{
		"/api/v1/namespaces/ns1/pods?labelSelector=app%3Dweb&limit=500",
		"/api/v1/nodes?",
	})
}

func TestDynamicListWatchListsUnstructuredInNamespace(t *testing.T) {
	u := func(ns, name string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{}
		o.SetGroupVersionKind(podGVK)
		o.SetNamespace(ns)
		o.SetName(name)
		return o
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{podsGVR: podListKind}, u("a", "p1"), u("b", "p2"))
	lw := NewDynamicListWatch(client, podsGVR, true, ListWatchOptions{Namespace: "a"})
	obj, err := lw.ListWithContext(context.Background(), metav1.ListOptions{})
	must(t, err)
	list := obj.(*unstructured.UnstructuredList)
	if len(list.Items) != 1 || list.Items[0].GetName() != "p1" {
		t.Fatalf("items = %v", list.Items)
	}
	all := NewDynamicListWatch(client, podsGVR, true, ListWatchOptions{})
	obj, err = all.ListWithContext(context.Background(), metav1.ListOptions{})
	must(t, err)
	if n := len(obj.(*unstructured.UnstructuredList).Items); n != 2 {
		t.Fatalf("all namespaces: %d items", n)
	}
}

func TestMetadataListWatchStampsGVKOnItemsAndEvents(t *testing.T) {
	s := metadatafake.NewTestScheme()
	must(t, metav1.AddMetaToScheme(s))
	pom := func(name string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: podKind},
			ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name},
		}
	}
	client := metadatafake.NewSimpleMetadataClient(s, pom("p1"))
	lw := NewMetadataListWatch(client, podsGVR, podGVK, true, ListWatchOptions{Namespace: "a"})
	obj, err := lw.ListWithContext(context.Background(), metav1.ListOptions{})
	must(t, err)
	list := obj.(*metav1.PartialObjectMetadataList)
	if len(list.Items) != 1 || list.Items[0].GroupVersionKind() != podGVK {
		t.Fatalf("items = %+v", list.Items)
	}
	if list.GroupVersionKind().Kind != podListKind {
		t.Fatalf("list kind %v", list.GroupVersionKind())
	}
	w, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{})
	must(t, err)
	defer w.Stop()
	// The tracker stores objects without a kind; the adapter stamps it.
	bare := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p2"}}
	must(t, client.Tracker().Create(podsGVR, bare, "a"))
	for seen := false; !seen; {
		select {
		case e := <-w.ResultChan():
			p, ok := e.Object.(*metav1.PartialObjectMetadata)
			if !ok || p.GroupVersionKind() != podGVK {
				t.Fatalf("event = %v %#v", e.Type, e.Object)
			}
			seen = p.Name == "p2"
		case <-time.After(5 * time.Second):
			t.Fatal("no watch event for p2")
		}
	}
}

func TestListWatchSupportsWatchListOnlyWithBookmarksAndAClientThatDoes(t *testing.T) {
	noop := func(context.Context, metav1.ListOptions) (runtime.Object, error) { return &corev1.PodList{}, nil }
	noWatch := func(context.Context, metav1.ListOptions) (watch.Interface, error) { return watch.NewEmptyWatch(), nil }
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{podsGVR: podListKind})
	md := metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
	for _, tc := range []struct {
		name        string
		lw          *ListWatch
		unsupported bool
	}{
		{"funcs with bookmarks", NewListWatch(noop, noWatch, ListWatchOptions{AllowWatchBookmarks: true}), false},
		{"funcs without bookmarks", NewListWatch(noop, noWatch, ListWatchOptions{}), true},
		{"REST client with bookmarks",
			NewRESTListWatch(&restfake.RESTClient{}, podsResource, true, scheme.ParameterCodec,
				ListWatchOptions{AllowWatchBookmarks: true}), false},
		{"fake dynamic client (opts out)",
			NewDynamicListWatch(dyn, podsGVR, true, ListWatchOptions{AllowWatchBookmarks: true}), true},
		{"fake metadata client (opts out)",
			NewMetadataListWatch(md, podsGVR, podGVK, true, ListWatchOptions{AllowWatchBookmarks: true}), true},
	} {
		if got := tc.lw.IsWatchListSemanticsUnSupported(); got != tc.unsupported {
			t.Errorf("%s: IsWatchListSemanticsUnSupported = %v, want %v", tc.name, got, tc.unsupported)
		}
	}
}

// watchStreamServer answers REST watch requests with a JSON watch stream: the
// first with events, later ones with a stream that stays open. It records
// every request's query.
type watchStreamServer struct {
	mu      sync.Mutex
	queries []url.Values
	first   []watch.Event
	pipes   []*io.PipeWriter
}

func (s *watchStreamServer) roundTrip(t *testing.T) func(*http.Request) (*http.Response, error) {
	return func(req *http.Request) (*http.Response, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.queries = append(s.queries, req.URL.Query())
		var body bytes.Buffer
		if len(s.queries) == 1 {
			enc := json.NewEncoder(&body)
			for _, e := range s.first {
				raw, err := json.Marshal(e.Object)
				must(t, err)
				must(t, enc.Encode(&metav1.WatchEvent{Type: string(e.Type), Object: runtime.RawExtension{Raw: raw}}))
			}
		}
		r, w := io.Pipe()
		s.pipes = append(s.pipes, w)
		go func() { _, _ = w.Write(body.Bytes()) }()
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: r}, nil
	}
}

func (s *watchStreamServer) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.pipes {
		_ = w.Close()
	}
}

func (s *watchStreamServer) query(i int) url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i >= len(s.queries) {
		return nil
	}
	return s.queries[i]
}

func TestRESTListWatchStreamsInitialListWithWatchListParameters(t *testing.T) {
	typed := func(p *corev1.Pod) *corev1.Pod {
		p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: podKind}
		return p
	}
	end := typed(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "9",
		Annotations: map[string]string{metav1.InitialEventsAnnotationKey: trueValue}}})
	srv := &watchStreamServer{first: []watch.Event{
		{Type: watch.Added, Object: typed(pod(ns1, "p1", "3"))},
		{Type: watch.Added, Object: typed(pod(ns1, "p2", "7"))},
		{Type: watch.Bookmark, Object: end},
	}}
	t.Cleanup(srv.close)
	client := &restfake.RESTClient{
		NegotiatedSerializer: scheme.Codecs.WithoutConversion(),
		GroupVersion:         corev1.SchemeGroupVersion,
		VersionedAPIPath:     "/api/v1",
		Client:               restfake.CreateHTTPClient(srv.roundTrip(t)),
	}
	lw := NewRESTListWatch(client, podsResource, true, scheme.ParameterCodec,
		ListWatchOptions{Namespace: ns1, AllowWatchBookmarks: true})
	run := runReflector(t, lw, reflectorOptions{})
	eventually(t, 10*time.Second, "streamed list installed", func() bool { return len(run.store.all()) > 0 })
	equalStrings(t, "store", run.store.all(), []string{"replace [ns1/p1@3 ns1/p2@7] rv=9"})
	if st, ok := run.r.LastListSummary(); !ok || !st.WatchList {
		t.Fatalf("LastListSummary = %+v, want a streamed list", st)
	}
	q := srv.query(0)
	for k, v := range map[string]string{
		"watch": trueValue, "sendInitialEvents": trueValue, "resourceVersionMatch": "NotOlderThan",
		"allowWatchBookmarks": trueValue, "resourceVersion": "",
	} {
		if q.Get(k) != v {
			t.Errorf("query %s = %q, want %q (query %v)", k, q.Get(k), v, q)
		}
	}
}

// streamingMetadata is a metadata.Interface whose watches return the
// scripted stream; it does not opt out of WatchList.
type streamingMetadata struct {
	metadata.Interface
	stream watch.Interface
}

func (m streamingMetadata) Resource(gvr schema.GroupVersionResource) metadata.Getter {
	return streamingGetter{m.Interface.Resource(gvr), m.stream}
}

type streamingGetter struct {
	metadata.Getter
	stream watch.Interface
}

func (g streamingGetter) Namespace(ns string) metadata.ResourceInterface {
	return streamingResource{g.Getter.Namespace(ns), g.stream}
}

type streamingResource struct {
	metadata.ResourceInterface
	stream watch.Interface
}

func (r streamingResource) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return r.stream, nil
}

func TestMetadataListWatchStampsGVKOnStreamedInitialEvents(t *testing.T) {
	stream := watch.NewRaceFreeFake()
	// The metadata API sends items and bookmarks without a kind.
	stream.Add(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p1",
		ResourceVersion: "3"}})
	stream.Action(watch.Bookmark, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "4",
		Annotations: map[string]string{metav1.InitialEventsAnnotationKey: trueValue}}})
	s := metadatafake.NewTestScheme()
	must(t, metav1.AddMetaToScheme(s))
	client := streamingMetadata{Interface: metadatafake.NewSimpleMetadataClient(s), stream: stream}
	lw := NewMetadataListWatch(client, podsGVR, podGVK, true, ListWatchOptions{Namespace: "a", AllowWatchBookmarks: true})
	if lw.IsWatchListSemanticsUnSupported() {
		t.Fatal("the adapter over a streaming client must support WatchList")
	}
	example := &metav1.PartialObjectMetadata{}
	example.SetGroupVersionKind(podGVK)
	store := &objStore{}
	r := newReflector(lw, example, store, reflectorOptions{Backoff: fastBackoff})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	eventually(t, 5*time.Second, "streamed list installed", func() bool { return store.replaced() != nil })
	if st, ok := r.LastListSummary(); !ok || !st.WatchList || st.ResourceVersion != "4" {
		t.Fatalf("LastListSummary = %+v, want a streamed list at RV 4", st)
	}
	objs := store.replaced()
	if len(objs) != 1 {
		t.Fatalf("replaced %d objects, want 1", len(objs))
	}
	p := objs[0].(*metav1.PartialObjectMetadata)
	if p.Name != "p1" || p.GroupVersionKind() != podGVK {
		t.Fatalf("stored %s with GVK %v, want a/p1 with %v", p.Name, p.GroupVersionKind(), podGVK)
	}
}

// objStore keeps the objects of the last Replace.
type objStore struct {
	mu   sync.Mutex
	last []any
}

func (s *objStore) Add(any) error    { return nil }
func (s *objStore) Update(any) error { return nil }
func (s *objStore) Delete(any) error { return nil }
func (s *objStore) Replace(list []any, _ string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = list
	return nil
}
func (s *objStore) replaced() []any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}
