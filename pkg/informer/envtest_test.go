package informer_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/deltacache/deltacache/internal/testenv"
	"github.com/deltacache/deltacache/pkg/informer"
)

// These tests run our adapters and informer against a real kube-apiserver
// (envtest, KUBEBUILDER_ASSETS or the binaries make envtest builds), to prove that the initial
// list is streamed (WatchList) and that the store equals the server.

var (
	envOnce sync.Once
	envErr  error
	envSkip string
	testEnv *envtest.Environment
	envCfg  *rest.Config
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, env := range []*envtest.Environment{testEnv, gatedEnv} {
		if env == nil {
			continue
		}
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping envtest: %v\n", err)
		}
	}
	os.Exit(code)
}

// requireAPIServer starts the shared control plane on first use, or skips.
func requireAPIServer(t *testing.T) *rest.Config {
	t.Helper()
	envOnce.Do(func() {
		dir := testenv.AssetsDir(filepath.Join("..", ".."))
		if dir == "" {
			envSkip = "no envtest binaries (kube-apiserver, etcd): " +
				"set KUBEBUILDER_ASSETS=$(bash hack/envtest-binaries.sh) or run make envtest"
			return
		}
		testEnv = &envtest.Environment{BinaryAssetsDirectory: dir}
		envCfg, envErr = testEnv.Start()
	})
	if envSkip != "" {
		t.Skip(envSkip)
	}
	if envErr != nil {
		t.Fatalf("starting envtest: %v", envErr)
	}
	return rest.CopyConfig(envCfg)
}

// recordingLW wraps one of our ListWatch adapters and records every request,
// forwarding its WatchList support.
type recordingLW struct {
	*informer.ListWatch
	mu    sync.Mutex
	lists []metav1.ListOptions
	watch []metav1.ListOptions
}

func (r *recordingLW) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	r.mu.Lock()
	r.lists = append(r.lists, o)
	r.mu.Unlock()
	return r.ListWatch.ListWithContext(ctx, o)
}

func (r *recordingLW) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	r.mu.Lock()
	r.watch = append(r.watch, o)
	r.mu.Unlock()
	return r.ListWatch.WatchWithContext(ctx, o)
}

func (r *recordingLW) List(o metav1.ListOptions) (runtime.Object, error) {
	return r.ListWithContext(context.Background(), o)
}

func (r *recordingLW) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return r.WatchWithContext(context.Background(), o)
}

func (r *recordingLW) requests() (lists, watches []metav1.ListOptions) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.lists), slices.Clone(r.watch)
}

// contentTypes records the Content-Type of every watch response.
type contentTypes struct {
	mu    sync.Mutex
	types []string
}

func (c *contentTypes) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil && req.URL.Query().Get("watch") == "true" {
			c.mu.Lock()
			c.types = append(c.types, resp.Header.Get("Content-Type"))
			c.mu.Unlock()
		}
		return resp, err
	})
}

func (c *contentTypes) all() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.types)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
var configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

// namespaces counts the namespaces made, so that repeated runs (-count)
// against one control plane get fresh ones.
var namespaces atomic.Int64

// seedNamespace creates a namespace named after prefix with n ConfigMaps and
// returns its name and the server's view: key → resourceVersion.
func seedNamespace(t *testing.T, cs kubernetes.Interface, prefix string, n int) (string, map[string]string) {
	t.Helper()
	ctx := context.Background()
	ns := fmt.Sprintf("%s-%d", prefix, namespaces.Add(1))
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%03d", i)},
			Data: map[string]string{"i": fmt.Sprint(i)}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return ns, serverState(t, cs, ns)
}

func serverState(t *testing.T, cs kubernetes.Interface, ns string) map[string]string {
	t.Helper()
	list, err := cs.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, cm := range list.Items {
		out[cm.Namespace+"/"+cm.Name] = cm.ResourceVersion
	}
	return out
}

func storeState(t *testing.T, store toolscache.Store, wantGVK schema.GroupVersionKind) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, obj := range store.List() {
		m, err := meta.Accessor(obj)
		if err != nil {
			t.Fatal(err)
		}
		if !wantGVK.Empty() {
			if gvk := obj.(runtime.Object).GetObjectKind().GroupVersionKind(); gvk != wantGVK {
				t.Fatalf("stored %s has GVK %v, want %v", m.GetName(), gvk, wantGVK)
			}
		}
		out[m.GetNamespace()+"/"+m.GetName()] = m.GetResourceVersion()
	}
	return out
}

// runSynced starts s and waits for it to sync.
func runSynced(t *testing.T, s *informer.SharedIndexInformer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.RunWithContext(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-s.HasSyncedChecker().Done():
	case <-time.After(30 * time.Second):
		t.Fatalf("informer did not sync; last error: %v", s.LastError())
	}
}

// assertStreamed checks that the informer's only list was a WatchList stream.
func assertStreamed(t *testing.T, lw *recordingLW, s *informer.SharedIndexInformer) {
	t.Helper()
	lists, watches := lw.requests()
	if len(lists) != 0 {
		t.Fatalf("%d LIST requests, want none (the initial list must be streamed)", len(lists))
	}
	if len(watches) == 0 {
		t.Fatal("no watch request")
	}
	o := watches[0]
	if o.SendInitialEvents == nil || !*o.SendInitialEvents || o.ResourceVersion != "" ||
		o.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan || !o.AllowWatchBookmarks {
		t.Fatalf("first watch options = %s, want a WatchList request", o.String())
	}
	if st, ok := s.LastListSummary(); !ok || !st.WatchList {
		t.Fatalf("LastListSummary = %+v, want a streamed list", st)
	}
}

func equalState(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s:\n got %v\nwant %v", what, got, want)
	}
}

func eventuallyState(t *testing.T, what string, get func() map[string]string, want map[string]string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for fmt.Sprint(get()) != fmt.Sprint(want) {
		if time.Now().After(deadline) {
			equalState(t, what, get(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestEnvtestTypedRESTAdapterStreamsInitialListOverProtobuf(t *testing.T) {
	cfg := requireAPIServer(t)
	cs := kubernetes.NewForConfigOrDie(cfg)
	ns, want := seedNamespace(t, cs, "informer-typed", 120)

	types := &contentTypes{}
	rc := rest.CopyConfig(cfg)
	rc.GroupVersion = &corev1.SchemeGroupVersion
	rc.APIPath = "/api"
	rc.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	rc.ContentType = runtime.ContentTypeProtobuf
	rc.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	rc.WrapTransport = types.wrap
	client, err := rest.RESTClientFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	lw := &recordingLW{ListWatch: informer.NewRESTListWatch(client, "configmaps", true, scheme.ParameterCodec,
		informer.ListWatchOptions{Namespace: ns, AllowWatchBookmarks: true})}
	s := informer.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, informer.Options{Name: "configmaps"})
	runSynced(t, s)

	assertStreamed(t, lw, s)
	equalState(t, "store after the streamed list", storeState(t, s.GetStore(), schema.GroupVersionKind{}), want)
	if ct := types.all(); len(ct) == 0 || !strings.HasPrefix(ct[0], runtime.ContentTypeProtobuf) {
		t.Fatalf("watch response content types %q, want protobuf", ct)
	}

	// The stream goes on as the watch: later changes arrive without a new request.
	ctx := context.Background()
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "late"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, "cm-000", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want = serverState(t, cs, ns)
	eventuallyState(t, "store after live changes", func() map[string]string {
		return storeState(t, s.GetStore(), schema.GroupVersionKind{})
	}, want)
	if _, watches := lw.requests(); len(watches) != 1 {
		t.Fatalf("%d watch requests, want the one WatchList stream", len(watches))
	}
}

func TestEnvtestMetadataAdapterStreamsInitialListWithGVK(t *testing.T) {
	cfg := requireAPIServer(t)
	cs := kubernetes.NewForConfigOrDie(cfg)
	ns, want := seedNamespace(t, cs, "informer-metadata", 60)

	lw := &recordingLW{ListWatch: informer.NewMetadataListWatch(metadata.NewForConfigOrDie(cfg),
		configMapsGVR, configMapGVK, true, informer.ListWatchOptions{Namespace: ns, AllowWatchBookmarks: true})}
	example := &metav1.PartialObjectMetadata{}
	example.SetGroupVersionKind(configMapGVK)
	s := informer.NewSharedIndexInformer(lw, example, informer.Options{Name: "configmaps-metadata"})
	runSynced(t, s)

	assertStreamed(t, lw, s)
	equalState(t, "store after the streamed list", storeState(t, s.GetStore(), configMapGVK), want)
}

// runDynamicConfigMaps seeds a namespace with n ConfigMaps and runs our
// informer over the dynamic adapter (bookmarks as given) until synced; it
// returns the recording adapter, the informer and the seeded state.
func runDynamicConfigMaps(t *testing.T, prefix string, n int, bookmarks bool) (
	*recordingLW, *informer.SharedIndexInformer, map[string]string,
) {
	t.Helper()
	cfg := requireAPIServer(t)
	ns, want := seedNamespace(t, kubernetes.NewForConfigOrDie(cfg), prefix, n)
	lw := &recordingLW{ListWatch: informer.NewDynamicListWatch(dynamic.NewForConfigOrDie(cfg), configMapsGVR, true,
		informer.ListWatchOptions{Namespace: ns, AllowWatchBookmarks: bookmarks})}
	example := &unstructured.Unstructured{}
	example.SetGroupVersionKind(configMapGVK)
	s := informer.NewSharedIndexInformer(lw, example, informer.Options{Name: prefix})
	runSynced(t, s)
	return lw, s, want
}

func TestEnvtestDynamicAdapterStreamsInitialList(t *testing.T) {
	lw, s, want := runDynamicConfigMaps(t, "informer-dynamic", 30, true)
	assertStreamed(t, lw, s)
	equalState(t, "store after the streamed list", storeState(t, s.GetStore(), configMapGVK), want)
}

func TestEnvtestWithoutBookmarksListsInsteadOfStreaming(t *testing.T) {
	lw, s, want := runDynamicConfigMaps(t, "informer-nobookmarks", 10, false)
	lists, watches := lw.requests()
	if len(lists) != 1 || lists[0].ResourceVersion != "" || lists[0].Limit != 500 {
		t.Fatalf("lists = %v, want one paginated consistent LIST", lists)
	}
	for _, o := range watches {
		if o.SendInitialEvents != nil {
			t.Fatalf("watch %s asked for initial events without bookmarks", o.String())
		}
	}
	equalState(t, "store after LIST", storeState(t, s.GetStore(), configMapGVK), want)
}
