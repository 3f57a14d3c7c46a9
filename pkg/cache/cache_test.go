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

//nolint:goconst // Test fixtures read better as literals.
package cache

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/deltacache/deltacache/pkg/informer"
)

func TestNewWithRejectsInvalidLabelIndexKeys(t *testing.T) {
	newCache := NewWith(WithLabelIndexes(appLabel, "not a key!"))
	_, err := newCache(&rest.Config{Host: unreachableHost}, crcache.Options{Mapper: testMapper()})
	if err == nil || !strings.Contains(err.Error(), `"not a key!"`) {
		t.Errorf("err = %v", err)
	}
}

func TestNewRejectsNilConfig(t *testing.T) {
	if _, err := New(nil, crcache.Options{}); err == nil {
		t.Error("nil config accepted")
	}
}

func TestNewWithDeduplicatesLabelIndexesAndDefaultsTheRest(t *testing.T) {
	newCache := NewWith(WithLabelIndexes(appLabel, tierLabel), WithLabelIndexes(appLabel))
	c, err := newCache(&rest.Config{Host: unreachableHost}, crcache.Options{Mapper: testMapper()})
	if err != nil {
		t.Fatal(err)
	}
	dc := c.(*Cache)
	if !slices.Equal(dc.settings.LabelIndexes, []string{appLabel, tierLabel}) {
		t.Errorf("label indexes = %v", dc.settings.LabelIndexes)
	}
	if dc.scheme == nil || dc.httpClient == nil || dc.mapper == nil || dc.settings.Logger.GetSink() == nil {
		t.Error("Scheme, HTTPClient, Mapper or Logger not defaulted")
	}
	got := dc.baseIndexers()
	if len(got) != 3 || got["label:app"] == nil || got["label:tier"] == nil || got["namespace"] == nil {
		t.Errorf("base indexers = %v", got)
	}
}

func TestOptionsReachTheListWatchAndTheTransform(t *testing.T) {
	api := newFakeAPI(t,
		configMap("a", "x", nil),
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p1", Labels: map[string]string{appLabel: webApp}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p2", Labels: map[string]string{appLabel: webApp}}},
	)
	var mu sync.Mutex
	var transformedTypes []string
	c := newTestCache(t, api, crcache.Options{
		DefaultTransform: func(in any) (any, error) {
			obj := in.(client.Object)
			mu.Lock()
			transformedTypes = append(transformedTypes, fmt.Sprintf("%T", obj))
			mu.Unlock()
			obj.SetAnnotations(map[string]string{"transformed": "yes"})
			return obj, nil
		},
		DefaultEnableWatchBookmarks: new(false),
		ByObject: map[client.Object]crcache.ByObject{&corev1.Pod{}: {
			Label:     labels.SelectorFromSet(labels.Set{appLabel: webApp}),
			Field:     fields.OneTermEqualSelector("metadata.name", "p1"),
			Transform: func(in any) (any, error) { return in, nil },
		}},
	})
	startCache(t, c)
	ctx := testCtx(t)

	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "x"}, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Annotations["transformed"] != "yes" {
		t.Errorf("DefaultTransform not applied: annotations %v", cm.Annotations)
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods); err != nil {
		t.Fatal(err)
	}
	if got := keysOf(t, &pods); !slices.Equal(got, []string{"a/p1"}) {
		t.Errorf("pods = %v, want only a/p1 (ByObject selectors)", got)
	}
	if pods.Items[0].Annotations["transformed"] != "" {
		t.Error("ByObject.Transform did not replace DefaultTransform")
	}
	mu.Lock()
	if !slices.Equal(transformedTypes, []string{"*v1.ConfigMap"}) {
		t.Errorf("DefaultTransform saw %q, want only the ConfigMap", transformedTypes)
	}
	mu.Unlock()

	for _, call := range api.listCalls() {
		switch call.gvk {
		case gvkConfigMap:
			want := informer.ListWatchOptions{}
			if call.opts != want {
				t.Errorf("config map list/watch options = %+v, want %+v", call.opts, want)
			}
		case gvkPod:
			want := informer.ListWatchOptions{LabelSelector: "app=web", FieldSelector: "metadata.name=p1"}
			if call.opts != want {
				t.Errorf("pod list/watch options = %+v, want %+v", call.opts, want)
			}
		}
	}
}

func TestDefaultWatchErrorHandlerSeesListErrors(t *testing.T) {
	api := newFakeAPI(t)
	api.setListError(apierrors.NewServiceUnavailable("down for maintenance"))
	errs := make(chan error, 100)
	c := newTestCache(t, api, crcache.Options{
		DefaultWatchErrorHandler: func(ctx context.Context, r *toolscache.Reflector, err error) {
			// Operators wrap client-go's handler, which reads the Reflector's name and
			// type: a nil Reflector would crash the informer's goroutine here.
			if r == nil || r.Name() == "" || r.TypeDescription() != "*v1.ConfigMap" {
				t.Errorf("handler got Reflector %v, want one named after the ConfigMap informer", r)
			} else {
				toolscache.DefaultWatchErrorHandler(ctx, r, apierrors.NewResourceExpired("logged at V(4)"))
			}
			select {
			case errs <- err:
			default:
			}
		},
	})
	startCache(t, c)
	if _, err := c.GetInformer(testCtx(t), &corev1.ConfigMap{}, crcache.BlockUntilSynced(false)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		if !apierrors.IsServiceUnavailable(err) {
			t.Errorf("handler got %v, want the ServiceUnavailable list error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("DefaultWatchErrorHandler was not called")
	}
}

// crashChildEnv makes the test binary, re-run by
// TestCrashOnHandlerPanicCrashesTheProcessAsControllerRuntimes, run the cache whose
// handler panics.
const crashChildEnv = "DELTACACHE_TEST_CRASH_CHILD"

// Without the option a handler's panic is recovered (and counted); with
// WithCrashOnHandlerPanic it crashes the process, as controller-runtime's cache does.
// The crash runs in a child process: the test binary itself, re-run.
func TestCrashOnHandlerPanicCrashesTheProcessAsControllerRuntimes(t *testing.T) {
	if mode := os.Getenv(crashChildEnv); mode != "" {
		var options []Option
		if mode == "crash" {
			options = append(options, WithCrashOnHandlerPanic())
		}
		c := newTestCache(t, newFakeAPI(t, configMap("ns1", "a", nil)), crcache.Options{}, options...)
		startCache(t, c)
		inf, err := c.GetInformer(testCtx(t), &corev1.ConfigMap{})
		if err != nil {
			t.Fatal(err)
		}
		reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { panic("handler boom") },
		})
		if err != nil {
			t.Fatal(err)
		}
		// The initial add is delivered, and its panic recovered, before HasSynced.
		waitUntil(t, "the handler's initial add", reg.HasSynced)
		fmt.Println("handler panic contained")
		return
	}
	for _, tc := range []struct {
		mode  string
		crash bool
	}{{"default", false}, {"crash", true}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashOnHandlerPanicCrashesTheProcessAsControllerRuntimes$",
			"-test.v")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+tc.mode)
		out, err := cmd.CombinedOutput()
		crashed := err != nil && strings.Contains(string(out), "panic: handler boom")
		if crashed != tc.crash {
			t.Errorf("%s: crashed = %v (err %v), want %v; output:\n%s", tc.mode, crashed, err, tc.crash, out)
		}
		if !tc.crash && !strings.Contains(string(out), "handler panic contained") {
			t.Errorf("%s: the child did not get past the panic; output:\n%s", tc.mode, out)
		}
	}
}
