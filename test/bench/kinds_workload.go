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

package bench

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	demov1alpha1 "github.com/deltacache/deltacache/api/v1alpha1"
	dcache "github.com/deltacache/deltacache/pkg/cache"
)

// Section C: kinds other than pods on the real API server — Secrets with ~4 KB of
// data, and the demo App CRD read typed and unstructured — each cached alone by a
// contender in its own process.

// The kinds of section C (ChildSpec.Kind).
const (
	KindSecret          = "secret"
	KindApp             = "app"
	KindAppUnstructured = "app-unstructured"
)

// Kinds are section C's kinds, in report order.
var Kinds = []string{KindSecret, KindApp, KindAppUnstructured}

// kindTitles name the kinds in the report.
var kindTitles = map[string]string{
	KindSecret: "Secrets (4 KB of data)", KindApp: "App CRD, typed", KindAppUnstructured: "App CRD, unstructured",
}

// Figure IDs of section C, per kind.
func figKindHeap(kind string) string { return kind + "_heap_bytes_per_object" }
func figKindGet(kind string) string  { return kind + "_get_us" }
func figKindList(kind string) string { return kind + "_list_namespace_us" }

// KindsLayout is what section C creates: Secrets and Apps spread over Namespaces.
type KindsLayout struct {
	Secrets, Apps, Namespaces int
}

// NewKindsLayout returns the layout for a run whose section A has pods pods: a
// quarter as many Secrets, as many Apps (5k and 20k at the default 20k).
func NewKindsLayout(pods int) KindsLayout {
	return KindsLayout{Secrets: max(1, pods/4), Apps: max(1, pods), Namespaces: 20}
}

func (l KindsLayout) namespace(i int) string { return fmt.Sprintf("kinds-%02d", i%l.Namespaces) }
func (l KindsLayout) name(kind string, i int) string {
	if kind == KindSecret {
		return fmt.Sprintf("secret-%05d", i)
	}
	return fmt.Sprintf("app-%05d", i)
}

// count returns how many objects of kind the layout has.
func (l KindsLayout) count(kind string) int {
	if kind == KindSecret {
		return l.Secrets
	}
	return l.Apps
}

// secretData is the 4 KB of a seeded Secret (different per Secret).
func secretData(i int) map[string][]byte {
	r := rand.New(rand.NewPCG(uint64(i), 7))
	tls := make([]byte, 3072)
	for j := range tls {
		tls[j] = byte(r.IntN(256))
	}
	return map[string][]byte{"tls.crt": tls, "tls.key": bytes.Repeat([]byte{byte(i)}, 1024)}
}

func (l KindsLayout) newSecret(i int) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: l.namespace(i), Name: l.name(KindSecret, i),
			Labels: map[string]string{appLabel: fmt.Sprintf("app-%04d", i%500)}},
		Type: corev1.SecretTypeTLS, Data: secretData(i),
	}
}

func (l KindsLayout) newApp(i int) *demov1alpha1.App {
	name := l.name(KindApp, i)
	return &demov1alpha1.App{
		ObjectMeta: metav1.ObjectMeta{Namespace: l.namespace(i), Name: name,
			Labels: map[string]string{appLabel: name, "team": []string{"payments", "search", "infra"}[i%3]}},
		Spec: demov1alpha1.AppSpec{Selector: name, MinReady: 2},
	}
}

// benchScheme is client-go's scheme plus the demo API.
var benchScheme = sync.OnceValue(func() *kruntime.Scheme {
	s := kruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := demov1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
})

// appCRDDir is the directory of the App CRD, relative to the repository root (where
// `make bench` runs).
var appCRDDir = filepath.Join("config", "crd", "bases")

// SeedKinds installs the App CRD and creates l's Secrets and Apps with workers
// concurrent clients; the Apps get a status as the demo operator writes it.
func SeedKinds(ctx context.Context, cfg *rest.Config, l KindsLayout, workers int) error {
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{appCRDDir},
		ErrorIfPathMissing: true}); err != nil {
		return fmt.Errorf("installing the App CRD from %s: %w", appCRDDir, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: benchScheme()})
	if err != nil {
		return err
	}
	for n := range l.Namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: l.namespace(n)}}
		if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	type job struct {
		kind string
		i    int
	}
	jobs := make(chan job)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for range max(1, workers) {
		wg.Go(func() {
			for j := range jobs {
				var obj client.Object
				if j.kind == KindSecret {
					obj = l.newSecret(j.i)
				} else {
					obj = l.newApp(j.i)
				}
				err := c.Create(ctx, obj)
				if err == nil && j.kind == KindApp {
					app := obj.(*demov1alpha1.App)
					app.Status = appStatus(app)
					err = c.Status().Update(ctx, app)
				}
				if err != nil && !apierrors.IsAlreadyExists(err) {
					cancel(fmt.Errorf("creating %s %d: %w", j.kind, j.i, err))
				}
			}
		})
	}
	for _, kind := range []string{KindSecret, KindApp} {
		for i := range l.count(kind) {
			select {
			case jobs <- job{kind, i}:
			case <-ctx.Done():
			}
		}
	}
	close(jobs)
	wg.Wait()
	return context.Cause(ctx)
}

// appStatus is the status the demo operator writes for an App with three ready pods.
func appStatus(app *demov1alpha1.App) demov1alpha1.AppStatus {
	at := metav1.NewTime(time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC))
	return demov1alpha1.AppStatus{ObservedGeneration: app.Generation, Pods: 3, Ready: 3, Nodes: 2,
		Phases: map[string]int32{"Running": 3},
		Conditions: []metav1.Condition{
			{Type: "Available", Status: metav1.ConditionTrue, Reason: "MinimumPodsReady",
				Message: "3 of 3 pods ready", LastTransitionTime: at, ObservedGeneration: app.Generation},
			{Type: "Progressing", Status: metav1.ConditionFalse, Reason: "AllPodsReady",
				Message: "all pods are ready", LastTransitionTime: at, ObservedGeneration: app.Generation},
		}}
}

// KindWorkload measures one contender caching one kind of section C: live heap per
// object after sync, then Get by key and List of a namespace, each the mean over at
// least OpTime.
type KindWorkload struct {
	Contender Contender
	Config    *rest.Config
	Kind      string
	Layout    KindsLayout
	OpTime    time.Duration
	Seed      uint64
}

// example returns an empty object and list of w's kind and shape.
func (w KindWorkload) example() (client.Object, func() client.ObjectList) {
	switch w.Kind {
	case KindSecret:
		return &corev1.Secret{}, func() client.ObjectList { return &corev1.SecretList{} }
	case KindApp:
		return &demov1alpha1.App{}, func() client.ObjectList { return &demov1alpha1.AppList{} }
	default:
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(demov1alpha1.GroupVersion.WithKind("App"))
		return u, func() client.ObjectList {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(demov1alpha1.GroupVersion.WithKind("AppList"))
			return l
		}
	}
}

// Run builds the cache, syncs the kind's informer and measures it.
func (w KindWorkload) Run(ctx context.Context) (Values, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	opts := crcache.Options{Scheme: benchScheme()}
	var newCache crcache.NewCacheFunc
	switch w.Contender {
	case DeltacacheDefaults:
		newCache = dcache.New
	case DeltacacheCompact:
		newCache = dcache.NewWith(dcache.WithStorage(dcache.StorageCompact))
	case ControllerRuntime:
		newCache = crcache.New
	default:
		return nil, fmt.Errorf("section C does not measure %q", w.Contender)
	}
	example, newList := w.example()
	before := LiveHeap()
	c, err := newCache(w.Config, opts)
	if err != nil {
		return nil, err
	}
	if _, err := c.GetInformer(ctx, example, crcache.BlockUntilSynced(false)); err != nil {
		return nil, err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("%s: %s cache did not sync", w.Contender, w.Kind)
	}
	n := w.Layout.count(w.Kind)
	all := newList()
	if err := c.List(ctx, all); err != nil {
		return nil, err
	}
	if got := len(mustExtract(all)); got != n {
		return nil, fmt.Errorf("%s: %s cache holds %d objects, want %d", w.Contender, w.Kind, got, n)
	}
	all = nil
	after := LiveHeap()

	v := Values{}
	v.add(figKindHeap(w.Kind), HeapGrowth(before, after)/float64(n))
	rng := rand.New(rand.NewPCG(w.Seed, 3))
	const prepared = 1024
	keys := make([]client.ObjectKey, prepared)
	for i := range keys {
		j := rng.IntN(n)
		keys[i] = client.ObjectKey{Namespace: w.Layout.namespace(j), Name: w.Layout.name(w.Kind, j)}
	}
	ops := []struct {
		id string
		op func(i int) error
	}{
		{figKindGet(w.Kind), func(i int) error {
			obj, _ := w.example()
			return c.Get(ctx, keys[i%prepared], obj)
		}},
		{figKindList(w.Kind), func(i int) error {
			return c.List(ctx, newList(), client.InNamespace(w.Layout.namespace(i)))
		}},
	}
	for _, o := range ops {
		runtime.GC()
		cost, err := MeasureOp(Sampling{MinCalls: 20, MaxCalls: 1_000_000, MinDuration: w.OpTime}, o.op)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", w.Contender, o.id, err)
		}
		v.add(o.id, cost.NS/1e3)
	}
	return v, nil
}

func mustExtract(list client.ObjectList) []kruntime.Object {
	items, err := meta.ExtractList(list)
	if err != nil {
		panic(err)
	}
	return items
}
