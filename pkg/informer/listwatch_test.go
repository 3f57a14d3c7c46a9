package informer

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
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
	metadatafake "k8s.io/client-go/metadata/fake"
	restfake "k8s.io/client-go/rest/fake"
	"k8s.io/client-go/util/watchlist"
)

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
var podGVK = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}

func TestListWatchAppliesSelectorsAndDecidesBookmarks(t *testing.T) {
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
		ListWatchOptions{LabelSelector: "app=web", FieldSelector: "spec.nodeName=n1"},
	)
	_, err := lw.List(metav1.ListOptions{LabelSelector: "ignored", Limit: 5})
	must(t, err)
	_, err = lw.Watch(metav1.ListOptions{ResourceVersion: "7", AllowWatchBookmarks: true})
	must(t, err)
	want := []metav1.ListOptions{
		{LabelSelector: "app=web", FieldSelector: "spec.nodeName=n1", Limit: 5},
		{LabelSelector: "app=web", FieldSelector: "spec.nodeName=n1", ResourceVersion: "7", Watch: true, AllowWatchBookmarks: false},
	}
	for i := range want {
		if got[i].String() != want[i].String() {
			t.Fatalf("request %d options = %s, want %s", i, got[i].String(), want[i].String())
		}
	}
	if !watchlist.DoesClientNotSupportWatchListSemantics(lw) {
		t.Fatal("ListWatch must opt out of WatchList semantics")
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
				TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"},
				ListMeta: metav1.ListMeta{ResourceVersion: "9"},
				Items:    []corev1.Pod{*pod("ns1", "p1", "3")},
			})
			return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(bytes.NewReader(body))}, nil
		}),
	}
	lw := NewRESTListWatch(client, "pods", true, scheme.ParameterCodec, ListWatchOptions{Namespace: "ns1", LabelSelector: "app=web"})
	obj, err := lw.ListWithContext(context.Background(), metav1.ListOptions{Limit: 500})
	must(t, err)
	list, ok := obj.(*corev1.PodList)
	if !ok || len(list.Items) != 1 || list.Items[0].Name != "p1" || list.ResourceVersion != "9" {
		t.Fatalf("list = %#v", obj)
	}
	clusterLW := NewRESTListWatch(client, "nodes", false, scheme.ParameterCodec, ListWatchOptions{Namespace: "ns1"})
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
		map[schema.GroupVersionResource]string{podsGVR: "PodList"}, u("a", "p1"), u("b", "p2"))
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
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
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
	if list.GroupVersionKind().Kind != "PodList" {
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
