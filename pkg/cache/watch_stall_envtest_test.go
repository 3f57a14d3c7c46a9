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
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/deltacache/deltacache/internal/faultproxy"
	dcache "github.com/deltacache/deltacache/pkg/cache"
)

// A proxy keeps the watch open but forwards nothing (every frame dropped while silent:
// the ADDED of a new ConfigMap and any bookmark). The watch is abandoned after the stall
// timeout (2 s here) and re-opened from the last resourceVersion, which brings the
// missed ADDED; with stall detection off it would wait for the watch's own timeout
// (5 to 10 minutes).
func TestEnvtestSilentWatchBehindAProxyIsReopenedAfterTheStallTimeout(t *testing.T) {
	requireEnv(t)
	ns := createNamespace(t, "watchstall")
	var silent atomic.Bool
	proxy, err := faultproxy.NewWatchDropper(cfg, func([]byte) bool { return silent.Load() })
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
	log, lines := capturingLogger()
	c, err := dcache.NewWith(dcache.WithLogger(log), dcache.WithWatchStallTimeout(2*time.Second))(pcfg, crcache.Options{
		Scheme: scheme.Scheme, HTTPClient: hc, Mapper: pmapper,
		DefaultNamespaces: map[string]crcache.Config{ns: {}},
	})
	if err != nil {
		t.Fatal(err)
	}
	runCache(t, c)
	ctx := envCtx(t)
	if _, err := c.GetInformer(ctx, &corev1.ConfigMap{}); err != nil {
		t.Fatal(err)
	}

	// Silent until the watch is abandoned: nothing passes, bookmarks neither (a
	// bookmark past the dropped ADDED would make it a lost event, not a silent watch).
	silent.Store(true)
	create(t, newConfigMap(ns, "missed", nil, nil))
	const stalledMsg = `"msg"="watch stalled: no event or bookmark; re-watching from the last resourceVersion"`
	stalledLines := func() int {
		n := 0
		for _, l := range lines() {
			if strings.Contains(l, stalledMsg) {
				n++
			}
		}
		return n
	}
	eventually(t, 10*time.Second, func() error {
		if stalledLines() == 0 {
			return fmt.Errorf("the silent watch was not abandoned (proxy dropped %d frames)", proxy.Dropped())
		}
		return nil
	})
	if proxy.Dropped() == 0 {
		t.Error("the proxy dropped nothing: the ADDED of the new ConfigMap passed")
	}
	silent.Store(false)
	var cm corev1.ConfigMap
	eventually(t, 10*time.Second, func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "missed"}, &cm)
	})
}
