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
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/deltacache/deltacache/internal/faultproxy"
	dcache "github.com/deltacache/deltacache/pkg/cache"
	"github.com/deltacache/deltacache/pkg/informer"
)

// proxiedCache starts a cache of ConfigMaps in ns that reaches the API server
// through a proxy dropping the first watch event that names victim.
func proxiedCache(t *testing.T, ns, victim string, options ...dcache.Option) (*dcache.Cache, *faultproxy.WatchDropper) {
	t.Helper()
	proxy, err := faultproxy.NewWatchDropper(cfg, faultproxy.DropOnce(victim))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	pcfg := proxy.Config()
	hc, err := rest.HTTPClientFor(pcfg)
	if err != nil {
		t.Fatal(err)
	}
	pmapper, err := apiutil.NewDynamicRESTMapper(pcfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := dcache.NewWith(options...)(pcfg, crcache.Options{
		Scheme: scheme.Scheme, HTTPClient: hc, Mapper: pmapper,
		DefaultNamespaces: map[string]crcache.Config{ns: {}},
	})
	if err != nil {
		t.Fatal(err)
	}
	dc := c.(*dcache.Cache)
	runCache(t, dc)
	if _, err := dc.GetInformer(envCtx(t), &corev1.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	return dc, proxy
}

// A proxy silently drops one watch event (the ADDED of a ConfigMap) and nothing
// else goes wrong, as with aggregated API servers that break watch semantics. With
// the consistency checker on, the cache finds the missing object and heals within a
// few intervals; with it off, the cache stays wrong.
func TestEnvtestConsistencyCheckHealsAWatchEventLostByAProxy(t *testing.T) {
	requireEnv(t)
	ns := createNamespace(t, "driftcheck")
	victim := "victim-" + ns
	const interval = 2 * time.Second
	checked, checkedProxy := proxiedCache(t, ns, victim, dcache.WithConsistencyCheck(interval))
	unchecked, uncheckedProxy := proxiedCache(t, ns, victim)

	create(t, newConfigMap(ns, victim, nil, nil))
	created := time.Now()
	create(t, newConfigMap(ns, "after-"+ns, nil, nil)) // arrives: the stores move past the victim
	ctx := envCtx(t)
	for _, c := range []*dcache.Cache{checked, unchecked} {
		eventually(t, 10*time.Second, func() error {
			return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "after-" + ns}, &corev1.ConfigMap{})
		})
	}
	if checkedProxy.Dropped() != 1 || uncheckedProxy.Dropped() != 1 {
		t.Fatalf("dropped %d and %d watch events, want one each", checkedProxy.Dropped(), uncheckedProxy.Dropped())
	}

	key := client.ObjectKey{Namespace: ns, Name: victim}
	eventually(t, 5*interval, func() error { return checked.Get(ctx, key, &corev1.ConfigMap{}) })
	t.Logf("checker on: %s in the cache %v after it was created", victim, time.Since(created).Round(time.Millisecond))

	time.Sleep(interval) // as long again for the unchecked cache
	err := unchecked.Get(ctx, key, &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("checker off: Get(%s) = %v, want NotFound: the cache should still miss the object", victim, err)
	}
	if err := k8sClient.Get(ctx, key, &corev1.ConfigMap{}); err != nil {
		t.Fatalf("the server lost %s: %v", victim, err)
	}
	t.Logf("checker off: %s still missing from the cache %v after it was created",
		victim, time.Since(created).Round(time.Millisecond))
}

// countingTransport counts the requests and response bytes of the consistency
// checker's LISTs (the only requests with a limit) and Gets.
type countingTransport struct {
	base            http.RoundTripper
	requests, bytes atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(r)
	if err != nil || r.URL.Query().Get("limit") == "" {
		return resp, err
	}
	c.requests.Add(1)
	resp.Body = &countingBody{ReadCloser: resp.Body, n: &c.bytes}
	return resp, nil
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// The cost of one check to the API server, for the docs: requests and bytes per
// check of N ConfigMaps (the metadata-only LIST is JSON; bytes are those of the
// response bodies, uncompressed).
func TestEnvtestConsistencyCheckCost(t *testing.T) {
	requireEnv(t)
	ns := createNamespace(t, "driftcost")
	const n = 1000
	// Other tests' ConfigMap informers list every namespace: leave nothing behind.
	t.Cleanup(func() {
		_ = k8sClient.DeleteAllOf(context.Background(), &corev1.ConfigMap{}, client.InNamespace(ns))
	})
	for i := range n {
		cm := newConfigMap(ns, "cm-"+strconv.Itoa(i), map[string]string{appLabel: "cost"}, map[string]string{"k": "v"})
		create(t, cm)
	}
	counter := &countingTransport{}
	hcfg := rest.CopyConfig(cfg)
	hcfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { counter.base = rt; return counter })
	hc, err := rest.HTTPClientFor(hcfg)
	if err != nil {
		t.Fatal(err)
	}
	c := startEnvCache(t, crcache.Options{HTTPClient: hc, DefaultNamespaces: map[string]crcache.Config{ns: {}}},
		dcache.WithConsistencyCheck(time.Hour))
	ctx := envCtx(t)
	inf, err := c.GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	counter.requests.Store(0)
	counter.bytes.Store(0)
	report, err := inf.(*informer.SharedIndexInformer).CheckConsistency(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if report.Drifted() || report.Objects != n {
		t.Fatalf("report = %+v, want %d objects and no drift", report, n)
	}
	if got := counter.requests.Load(); got != 2 {
		t.Errorf("requests per check = %d, want 2 (pages of 500)", got)
	}
	t.Logf("consistency check of %d ConfigMaps: %d requests, %d bytes (%.0f B/object)", n,
		counter.requests.Load(), counter.bytes.Load(), float64(counter.bytes.Load())/n)
}
