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
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/deltacache/deltacache/internal/testenv"
	dcache "github.com/deltacache/deltacache/pkg/cache"
)

// Names many envtest tests share.
const (
	appLabel  = "app"  // label key of the "label:app" index
	sizeField = "size" // a field of the Widget and Sprocket custom resources' spec
)

// One envtest control plane serves every envtest test of the package. It starts on the
// first test that needs it (so unit-test-only runs stay fast) and stops in TestMain.

var (
	envOnce    sync.Once
	envErr     error
	envSkip    string
	testEnv    *envtest.Environment
	cfg        *rest.Config
	k8sClient  client.Client
	httpClient *http.Client
	mapper     meta.RESTMapper
)

// widgetGVK is a CRD installed in envtest and absent from the Scheme.
var widgetGVK = schema.GroupVersionKind{Group: "test.deltacache.io", Version: "v1", Kind: "Widget"}

func TestMain(m *testing.M) {
	code := m.Run()
	if gatedEnv != nil {
		if err := gatedEnv.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the gated envtest: %v\n", err)
		}
	}
	if testEnv != nil {
		if err := testEnv.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping envtest: %v\n", err)
		}
	}
	os.Exit(code)
}

// requireEnv starts the shared envtest control plane if needed, or skips the test when
// no binaries exist.
func requireEnv(t *testing.T) {
	t.Helper()
	envOnce.Do(startEnv)
	if envSkip != "" {
		t.Skip(envSkip)
	}
	if envErr != nil {
		t.Fatalf("envtest: %v", envErr)
	}
}

func startEnv() {
	assets := testenv.AssetsDir(filepath.Join("..", ".."))
	if assets == "" {
		envSkip = "envtest binaries not found: set KUBEBUILDER_ASSETS=$(bash hack/envtest-binaries.sh) " +
			"or run make envtest (it builds them into ~/.cache/deltacache/envtest)"
		return
	}
	testEnv = &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDs:                  []*apiextensionsv1.CustomResourceDefinition{widgetCRD()},
	}
	if cfg, envErr = testEnv.Start(); envErr != nil {
		return
	}
	if k8sClient, envErr = client.New(cfg, client.Options{Scheme: scheme.Scheme}); envErr != nil {
		return
	}
	if httpClient, envErr = rest.HTTPClientFor(cfg); envErr != nil {
		return
	}
	mapper, envErr = apiutil.NewDynamicRESTMapper(cfg, httpClient)
}

func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.test.deltacache.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: widgetGVK.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList",
			},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve,
				}},
			}},
		},
	}
}

// newEnvCache builds a deltacache Cache on the shared control plane (not started).
func newEnvCache(t *testing.T, opts crcache.Options, options ...dcache.Option) *dcache.Cache {
	t.Helper()
	requireEnv(t)
	if opts.HTTPClient == nil {
		opts.HTTPClient = httpClient
	}
	if opts.Mapper == nil {
		opts.Mapper = mapper
	}
	c, err := dcache.NewWith(options...)(cfg, opts)
	if err != nil {
		t.Fatalf("NewWith: %v", err)
	}
	return c.(*dcache.Cache)
}

// startEnvCache builds and starts a Cache until the test ends.
func startEnvCache(t *testing.T, opts crcache.Options, options ...dcache.Option) *dcache.Cache {
	t.Helper()
	c := newEnvCache(t, opts, options...)
	runCache(t, c)
	return c
}

// runCache starts c until the test ends and waits until Start has been called and the
// informers existing now have synced.
func runCache(t *testing.T, c crcache.Cache) {
	t.Helper()
	testenv.StartCache(t, c, 30*time.Second)
}

func envCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// createNamespace creates a namespace named after prefix with a random suffix and
// deletes it when the test ends.
func createNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := k8sClient.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), ns) })
	return ns.Name
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8sClient.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s/%s: %v", obj, obj.GetNamespace(), obj.GetName(), err)
	}
}

func newConfigMap(ns, name string, lbls map[string]string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls}, Data: data}
}

func newPod(ns, name string, lbls map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
}

// eventually polls check every 20ms until it returns nil or timeout passes.
func eventually(t *testing.T, timeout time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met after %v: %v", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runManager starts mgr until the test ends (then waits up to 30 s for it to stop) and
// returns the context it runs with.
func runManager(t *testing.T, mgr manager.Manager) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("manager: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("manager did not stop")
		}
	})
	return ctx
}
