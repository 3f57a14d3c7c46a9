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
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dcache "github.com/deltacache/deltacache/pkg/cache"
)

// A controller whose CRD is installed after the Manager started: its source.Kind's
// GetInformer waits for the kind instead of failing (controller-runtime would retry
// only 10 s later, and with a 10 s CacheSyncTimeout the Manager would stop). Until the
// CRD exists, the readyz check fails naming the kind and WaitForCacheSync does not
// return true; Get stays an immediate NoKindMatch. Once the CRD is established, the
// first object is reconciled within about 2 s (asserted: 6 s).
func TestEnvtestControllerStartedBeforeItsCRDReconcilesSoonAfterItIsInstalled(t *testing.T) {
	requireEnv(t)
	ns := createNamespace(t, "latecontroller")
	gadgetGVK := schema.GroupVersionKind{Group: ns + ".deltacache.io", Version: "v1", Kind: "Gadget"}

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme.Scheme,
		NewCache:               dcache.NewWith(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: new(true), CacheSyncTimeout: 10 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	dc := mgr.GetCache().(*dcache.Cache)
	gadget := &unstructured.Unstructured{}
	gadget.SetGroupVersionKind(gadgetGVK)
	reconciled := make(chan time.Time, 100)
	err = builder.ControllerManagedBy(mgr).
		Named("gadgets-" + ns).
		For(gadget).
		Complete(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
			reconciled <- time.Now()
			return reconcile.Result{}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	mgrErr := make(chan error, 1)
	go func() { mgrErr <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-mgrErr; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	// Not ready while the controller waits for its kind, and the check names it.
	eventually(t, 10*time.Second, func() error {
		err := dc.ReadyzCheck()(nil)
		if err == nil || !strings.Contains(err.Error(), "Gadget."+gadgetGVK.Group) {
			return fmt.Errorf("readyz = %v, want it to name Gadget.%s", err, gadgetGVK.Group)
		}
		return nil
	})
	t.Logf("readyz while the CRD is missing: %v", dc.ReadyzCheck()(nil))
	short, cancelShort := context.WithTimeout(ctx, 500*time.Millisecond)
	synced := dc.WaitForCacheSync(short)
	cancelShort()
	if synced {
		t.Error("WaitForCacheSync returned true while a controller waits for a kind that is not served")
	}
	start := time.Now()
	assertNoKindMatch(t, "Get", dc.Get(ctx, client.ObjectKey{Namespace: ns, Name: "g"}, gadget), gadgetGVK)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Get took %v to return NoKindMatch, want it at once", took)
	}
	time.Sleep(2 * time.Second) // the controller has been waiting a while (past source.Kind's first try)

	installOpts := envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{gadgetCRD(gadgetGVK)}}
	if _, err := envtest.InstallCRDs(cfg, installOpts); err != nil { // returns once established
		t.Fatal(err)
	}
	established := time.Now()
	t.Cleanup(func() { _ = envtest.UninstallCRDs(cfg, installOpts) })
	created := &unstructured.Unstructured{}
	created.SetGroupVersionKind(gadgetGVK)
	created.SetNamespace(ns)
	created.SetName("g")
	create(t, created)

	select {
	case at := <-reconciled:
		took := at.Sub(established)
		t.Logf("first reconcile %v after the CRD was established", took)
		if took > 6*time.Second {
			t.Errorf("first reconcile %v after the CRD was established, want about 2s", took)
		}
	case err := <-mgrErr:
		mgrErr <- err
		t.Fatalf("the manager stopped before the first reconcile: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no reconcile within 30s of the CRD being established")
	}
	eventually(t, 10*time.Second, func() error { return dc.ReadyzCheck()(nil) })
	if !dc.WaitForCacheSync(ctx) {
		t.Error("WaitForCacheSync false once the kind is served")
	}
}
