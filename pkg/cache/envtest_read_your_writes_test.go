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
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// slowIndexDelay is what the index function of the read-your-writes test takes per
// object: on decoded storage it runs on the pop loop, so objects created and deleted
// in quick succession reach the pop loop as one key with both events, in one batch.
const slowIndexDelay = 5 * time.Millisecond

// rywReadDeadline is the deadline of each read through the read-your-writes client:
// ample for an informer that delivers the deletes (a burst is indexed in about
// 100 ms), short enough that a read waiting for a Delete that never comes fails fast.
const rywReadDeadline = 3 * time.Second

// controller-runtime's read-your-writes client (client.CacheOptions.
// EnableReadYourWritesConsistency) makes each read wait until the informer has
// handed its own handler the Delete of every object (UID) the client deleted, and an
// event at least as new as its writes. Bursts of create+delete with a slow index
// function put an object's create and delete into one pop batch; the handler must
// still receive its Delete, or every later read of the kind waits out its deadline.
// Run with the default options (compact storage: the index function runs as events
// are received) and with UnsafeDisableDeepCopy (decoded storage: it runs on the pop
// loop, where the batching happens every time).
func TestReadYourWritesClientDoesNotHangAfterCreateAndDelete(t *testing.T) {
	for _, tc := range []struct {
		name   string
		unsafe bool
	}{{"default", false}, {"UnsafeDisableDeepCopy", true}} {
		t.Run(tc.name, func(t *testing.T) {
			requireEnv(t)
			ns := createNamespace(t, "ryw")
			opts := crcache.Options{DefaultNamespaces: map[string]crcache.Config{ns: {}}}
			if tc.unsafe {
				opts.DefaultUnsafeDisableDeepCopy = ptr.To(true)
			}
			c := newEnvCache(t, opts)
			ctx := envCtx(t)
			slowIndex := func(obj client.Object) []string {
				time.Sleep(slowIndexDelay)
				return []string{obj.GetName()}
			}
			if err := c.IndexField(ctx, &corev1.ConfigMap{}, "slow", slowIndex); err != nil {
				t.Fatal(err)
			}
			runCache(t, c)
			cl, err := client.New(cfg, client.Options{
				Scheme: scheme.Scheme, Mapper: mapper, HTTPClient: httpClient,
				Cache: &client.CacheOptions{Reader: c, EnableReadYourWritesConsistency: ptr.To(true)},
			})
			if err != nil {
				t.Fatal(err)
			}
			// The first read registers the client's handler on the ConfigMap informer.
			if err := cl.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}

			const bursts, workers, pairs = 4, 4, 5
			reads, hung := 0, 0
			var firstHang error
			read := func(what string, f func(ctx context.Context) error) {
				t.Helper()
				rctx, cancel := context.WithTimeout(ctx, rywReadDeadline)
				defer cancel()
				reads++
				err := f(rctx)
				if err != nil && rctx.Err() != nil {
					hung++
					if firstHang == nil {
						firstHang = fmt.Errorf("%s: %w", what, err)
					}
					return
				}
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
			}
			for b := range bursts {
				last := make([]string, workers)
				var wg sync.WaitGroup
				errs := make(chan error, workers)
				for w := range workers {
					wg.Go(func() {
						for i := range pairs {
							cm := newConfigMap(ns, fmt.Sprintf("b%d-w%d-%d", b, w, i), nil, map[string]string{"k": "v"})
							if err := cl.Create(ctx, cm); err != nil {
								errs <- err
								return
							}
							if err := cl.Delete(ctx, cm); err != nil {
								errs <- err
								return
							}
							last[w] = cm.Name
						}
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Fatal(err)
				}
				read(fmt.Sprintf("burst %d: List", b), func(ctx context.Context) error {
					var l corev1.ConfigMapList
					if err := cl.List(ctx, &l, client.InNamespace(ns)); err != nil {
						return err
					}
					if len(l.Items) != 0 {
						return fmt.Errorf("listed %d deleted ConfigMaps, first %s", len(l.Items), l.Items[0].Name)
					}
					return nil
				})
				for _, name := range last {
					read(fmt.Sprintf("burst %d: Get %s", b, name), func(ctx context.Context) error {
						err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{})
						if apierrors.IsNotFound(err) {
							return nil
						}
						if err == nil {
							return fmt.Errorf("got deleted ConfigMap %s", name)
						}
						return err
					})
				}
			}
			if hung > 0 {
				t.Fatalf("%d of %d reads through the read-your-writes client hung (deadline %v); first: %v",
					hung, reads, rywReadDeadline, firstHang)
			}
			t.Logf("%d reads, none hung", reads)
		})
	}
}
