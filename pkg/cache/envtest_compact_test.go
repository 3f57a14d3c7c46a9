/*
Copyright 2026.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package cache_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	demov1alpha1 "github.com/deltacache/deltacache/api/v1alpha1"
	dcache "github.com/deltacache/deltacache/pkg/cache"
	"github.com/deltacache/deltacache/pkg/informer"
)

// expiringTransport makes the informers relist on demand: expire cuts every open watch
// and answers the next plain watch (one that resumes from a resourceVersion, not a
// WatchList stream) of each resource path with 410 Expired. It counts the lists (LIST
// requests and WatchList streams) sent after expire, by path.
type expiringTransport struct {
	next http.RoundTripper

	mu      sync.Mutex
	open    []io.Closer
	pending map[string]bool // path → its next plain watch was failed
	armed   bool
	relists map[string]int
}

func (e *expiringTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	q := req.URL.Query()
	isWatch := q.Get("watch") == "true" || q.Get("watch") == "1"
	if !isWatch || q.Get("sendInitialEvents") == "true" {
		e.mu.Lock()
		if e.armed {
			e.relists[req.URL.Path]++
		}
		e.mu.Unlock()
	}
	if isWatch && q.Get("sendInitialEvents") != "true" {
		e.mu.Lock()
		fail := e.armed && !e.pending[req.URL.Path]
		if fail {
			e.pending[req.URL.Path] = true
		}
		e.mu.Unlock()
		if fail {
			body := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",` +
				`"message":"too old resource version","reason":"Expired","code":410}`
			return &http.Response{StatusCode: http.StatusGone, Status: "410 Gone", Request: req,
				Header:     http.Header{"Content-Type": []string{"application/json"}},
				Body:       io.NopCloser(strings.NewReader(body)),
				ProtoMajor: 1, ProtoMinor: 1}, nil
		}
	}
	resp, err := e.next.RoundTrip(req)
	if err == nil && isWatch {
		e.mu.Lock()
		e.open = append(e.open, resp.Body)
		e.mu.Unlock()
	}
	return resp, err
}

// expire cuts the open watches and arms one 410 per resource path.
func (e *expiringTransport) expire() {
	e.mu.Lock()
	open := e.open
	e.open, e.pending, e.relists, e.armed = nil, map[string]bool{}, map[string]int{}, true
	e.mu.Unlock()
	for _, c := range open {
		_ = c.Close()
	}
}

// compactKind is one kind and shape the differential test caches.
type compactKind struct {
	name  string
	list  func() client.ObjectList // an empty list of the kind and shape
	fresh func(ns, name string) client.Object
}

func appGVK(kind string) schema.GroupVersionKind { return demov1alpha1.GroupVersion.WithKind(kind) }

func compactKinds() []compactKind {
	pods := func() client.ObjectList { return &corev1.PodList{} }
	return []compactKind{
		{"pods (typed, protobuf)", pods, func(ns, name string) client.Object {
			return newPod(ns, name, map[string]string{appLabel: "web"})
		}},
		{"pods (metadata-only, protobuf)", func() client.ObjectList {
			l := &metav1.PartialObjectMetadataList{}
			l.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
			return l
		}, nil},
		{"secrets (typed, protobuf)", func() client.ObjectList { return &corev1.SecretList{} }, func(ns, name string) client.Object {
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{appLabel: "web"}},
				Data: map[string][]byte{"key": bytes.Repeat([]byte{0, 1, 2, 255}, 1024)}, Type: corev1.SecretTypeOpaque}
		}},
		{"apps (typed CRD, Plan)", func() client.ObjectList { return &demov1alpha1.AppList{} }, func(ns, name string) client.Object {
			return &demov1alpha1.App{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{appLabel: "web"}},
				Spec: demov1alpha1.AppSpec{Selector: name, MinReady: 2}}
		}},
		{"apps (unstructured, CBOR)", func() client.ObjectList {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(appGVK("AppList"))
			return l
		}, nil},
	}
}

// normalized returns the items of list sorted by name, with managedFields dropped (the
// cache strips them) and TypeMeta set to gvk (the server's typed list items have none).
func normalized(t *testing.T, list client.ObjectList, gvk schema.GroupVersionKind) []runtime.Object {
	t.Helper()
	items, err := apimeta.ExtractList(list)
	if err != nil {
		t.Fatal(err)
	}
	for _, item := range items {
		m, err := apimeta.Accessor(item)
		if err != nil {
			t.Fatal(err)
		}
		m.SetManagedFields(nil)
		item.GetObjectKind().SetGroupVersionKind(gvk)
	}
	slices.SortFunc(items, func(a, b runtime.Object) int {
		ma, _ := apimeta.Accessor(a)
		mb, _ := apimeta.Accessor(b)
		return strings.Compare(ma.GetName(), mb.GetName())
	})
	return items
}

// sameAsServer returns nil once the cache's List of every kind in ns equals the server's.
func sameAsServer(ctx context.Context, t *testing.T, c crcache.Cache, server client.Client, ns string) error {
	t.Helper()
	for _, k := range compactKinds() {
		want, got := k.list(), k.list()
		if err := server.List(ctx, want, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if err := c.List(ctx, got, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		gvk, err := itemGVK(k.list())
		if err != nil {
			t.Fatal(err)
		}
		w, g := normalized(t, want, gvk), normalized(t, got, gvk)
		if len(w) != len(g) {
			return fmt.Errorf("%s: cache has %d objects, server %d", k.name, len(g), len(w))
		}
		for i := range w {
			if !apiequality.Semantic.DeepEqual(w[i], g[i]) {
				return fmt.Errorf("%s: object %d differs:\ncache  %+v\nserver %+v", k.name, i, g[i], w[i])
			}
		}
	}
	return nil
}

// exampleOfList returns an object of the kind and shape of list's items.
func exampleOfList(list client.ObjectList) (client.Object, error) {
	gvk, err := itemGVK(list)
	if err != nil {
		return nil, err
	}
	switch list.(type) {
	case *unstructured.UnstructuredList:
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return u, nil
	case *metav1.PartialObjectMetadataList:
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvk)
		return m, nil
	}
	obj, err := compactScheme().New(gvk)
	if err != nil {
		return nil, err
	}
	return obj.(client.Object), nil
}

// itemGVK returns the GVK of the items of an empty list.
func itemGVK(list client.ObjectList) (schema.GroupVersionKind, error) {
	gvk := list.GetObjectKind().GroupVersionKind()
	if gvk.Empty() {
		gvks, _, err := compactScheme().ObjectKinds(list)
		if err != nil {
			return schema.GroupVersionKind{}, err
		}
		gvk = gvks[0]
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	return gvk, nil
}

var compactSchemeOnce = sync.OnceValue(func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := demov1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
})

func compactScheme() *runtime.Scheme { return compactSchemeOnce() }

func TestEnvtestCompactStorageReturnsWhatTheServerReturns(t *testing.T) {
	requireEnv(t)
	installAppCRD(t)
	ns := createNamespace(t, "compact")
	ctx := envCtx(t)
	server, err := client.New(cfg, client.Options{Scheme: compactScheme()})
	if err != nil {
		t.Fatal(err)
	}
	create := func(k compactKind, name string) {
		if k.fresh == nil {
			return
		}
		if err := server.Create(ctx, k.fresh(ns, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range compactKinds() {
		for i := range 5 {
			create(k, fmt.Sprintf("o-%d", i))
		}
	}

	expiring := &expiringTransport{}
	ecfg := rest.CopyConfig(cfg)
	ecfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { expiring.next = rt; return expiring }
	hc, err := rest.HTTPClientFor(ecfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := dcache.NewWith(dcache.WithStorage(dcache.StorageCompact))(ecfg,
		crcache.Options{HTTPClient: hc, Mapper: mapper, Scheme: compactScheme()})
	if err != nil {
		t.Fatal(err)
	}
	runCache(t, c)
	check := func(what string) {
		t.Helper()
		eventually(t, 30*time.Second, func() error {
			if err := sameAsServer(ctx, t, c, server, ns); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			return nil
		})
	}
	check("after the initial list")
	for _, k := range compactKinds() {
		example, err := exampleOfList(k.list())
		if err != nil {
			t.Fatal(err)
		}
		inf, err := c.GetInformer(ctx, example)
		if err != nil {
			t.Fatal(err)
		}
		stats := inf.(*informer.SharedIndexInformer).Indexer().StoredStats()
		if stats.Objects == 0 || stats.Encoded != stats.Objects || stats.EncodedBytes == 0 {
			t.Errorf("%s: stored %+v, want every object encoded", k.name, stats)
		}
	}

	// Updates, deletes and re-creates of every writable kind.
	for _, k := range compactKinds() {
		if k.fresh == nil {
			continue
		}
		for i := range 3 {
			obj := k.fresh(ns, fmt.Sprintf("o-%d", i))
			if err := server.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				t.Fatal(err)
			}
			obj.SetLabels(map[string]string{appLabel: "web", "step": "updated"})
			obj.SetAnnotations(map[string]string{"note": strings.Repeat("n", i*50)})
			if err := server.Update(ctx, obj); err != nil {
				t.Fatal(err)
			}
		}
		for _, name := range []string{"o-3", "o-4"} {
			if err := server.Delete(ctx, k.fresh(ns, name)); err != nil {
				t.Fatal(err)
			}
		}
		create(k, "o-4")
		create(k, "o-5")
	}
	check("after updates, deletes and re-creates")

	// A relist: every watch cut, and answered 410 Expired once.
	expiring.expire()
	for _, k := range compactKinds() {
		if k.fresh == nil {
			continue
		}
		if err := server.Delete(ctx, k.fresh(ns, "o-0")); err != nil {
			t.Fatal(err)
		}
		create(k, "o-6")
	}
	check("after a relist")
	expiring.mu.Lock()
	relists := maps.Clone(expiring.relists)
	expiring.mu.Unlock()
	for _, path := range []string{"/api/v1/pods", "/api/v1/secrets", "/apis/demo.deltacache.io/v1alpha1/apps"} {
		if relists[path] == 0 {
			t.Errorf("no relist of %s after the watches were cut (relists: %v)", path, relists)
		}
	}
}

// installAppCRD installs the demo App CRD from config/crd/bases once per run.
func installAppCRD(t *testing.T) {
	t.Helper()
	appCRDOnce.Do(func() {
		_, appCRDErr = envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{
			Paths: []string{filepath.Join("..", "..", "config", "crd", "bases")}, ErrorIfPathMissing: true})
	})
	if appCRDErr != nil {
		t.Fatal(appCRDErr)
	}
}

var (
	appCRDOnce sync.Once
	appCRDErr  error
)

func TestEnvtestObjectsTheCodecCannotEncodeStayReadableAndAreCountedAndLoggedOnce(t *testing.T) {
	requireEnv(t)
	ns := createNamespace(t, "badcodec")
	ctx := envCtx(t)
	newWidget := func(name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(widgetGVK)
		u.SetNamespace(ns)
		u.SetName(name)
		u.Object["spec"] = map[string]any{"size": int64(1)}
		return u
	}
	for _, name := range []string{"w-bad", "w-ok"} {
		create(t, newWidget(name))
	}
	// A transform that puts a value JSON cannot carry into one object.
	addNaN := func(obj any) (any, error) {
		if u, ok := obj.(*unstructured.Unstructured); ok && u.GetName() == "w-bad" {
			u.Object["spec"].(map[string]any)["ratio"] = math.NaN()
		}
		return obj, nil
	}
	log, lines := capturingLogger()
	c := startEnvCache(t, crcache.Options{DefaultTransform: addNaN}, dcache.WithLogger(log), dcache.WithStorage(dcache.StorageCompact))

	got := newWidget("w-bad")
	if err := c.Get(ctx, client.ObjectKeyFromObject(got), got); err != nil {
		t.Fatalf("Get of the object the codec cannot encode: %v", err)
	}
	if r, _ := got.Object["spec"].(map[string]any)["ratio"].(float64); !math.IsNaN(r) {
		t.Fatalf("spec.ratio = %v, want NaN (the transformed object, kept decoded)", got.Object["spec"])
	}
	// An update of it fails to encode again: counted, not logged again.
	got.Object["spec"].(map[string]any)["size"] = int64(2)
	delete(got.Object["spec"].(map[string]any), "ratio")
	if err := k8sClient.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"group": widgetGVK.Group, "version": widgetGVK.Version, "kind": widgetGVK.Kind,
		"shape": informer.ShapeUnstructured}
	eventually(t, 30*time.Second, func() error {
		s := crSeries(t, labels)
		if s["deltacache_informer_storage_codec_errors_total{op=encode}"] != 2 ||
			s["deltacache_informer_stored_objects{form=decoded}"] != 1 ||
			s["deltacache_informer_stored_objects{form=encoded}"] != 1 || s["deltacache_informer_stored_bytes"] == 0 {
			return fmt.Errorf("series %v, want 2 encode errors, 1 object decoded, 1 encoded", s)
		}
		return nil
	})
	var list unstructured.UnstructuredList
	list.SetGroupVersionKind(widgetGVK.GroupVersion().WithKind("WidgetList"))
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil || len(list.Items) != 2 {
		t.Fatalf("List = %d items, %v; want both widgets", len(list.Items), err)
	}
	var logged []string
	for _, l := range lines() {
		if strings.Contains(l, "Could not encode object for compact storage") {
			logged = append(logged, l)
		}
	}
	if len(logged) != 1 || !strings.Contains(logged[0], `"key"="`+ns+`/w-bad"`) ||
		!strings.Contains(logged[0], "object.spec.ratio") {
		t.Errorf("codec error lines %q, want one naming the key and the path of the value", logged)
	}
}
