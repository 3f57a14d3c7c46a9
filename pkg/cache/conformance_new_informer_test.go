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
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"
)

// The two Go tests of controller-runtime v0.25.3's cache suite (pkg/cache/cache_test.go)
// that need Options.NewInformer, run against each implementation of the conformance
// suite: TestReaderWaitsForCacheSync and TestIndexFieldDoesNotBlock. Both hand every
// kind a controllertest.FakeInformer, with a RESTMapper that maps any kind.

// anyKindMapper maps every kind to a namespaced resource, as controller-runtime's
// fakeRESTMapper does.
type anyKindMapper struct{ meta.RESTMapper }

func (anyKindMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	return &meta.RESTMapping{Scope: meta.RESTScopeNamespace}, nil
}

func fakeInformerOptions(fake *controllertest.FakeInformer, failOnMissing bool) crcache.Options {
	return crcache.Options{
		ReaderFailOnMissingInformer: failOnMissing,
		Mapper:                      anyKindMapper{},
		NewInformer: func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer {
			return fake
		},
	}
}

func TestConformanceReaderWaitsForTheSyncOfTheInformerNewInformerBuilt(t *testing.T) {
	for _, impl := range conformanceImpls {
		for _, failOnMissing := range []bool{true, false} {
			name := impl.name + "/ReaderFailOnMissingInformer=false"
			if failOnMissing {
				name = impl.name + "/ReaderFailOnMissingInformer=true"
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					fake := controllertest.NewFakeInformer()
					c, err := impl.new(&rest.Config{}, fakeInformerOptions(fake, failOnMissing))
					if err != nil {
						t.Fatal(err)
					}
					ctx, cancel := context.WithCancel(t.Context())
					defer cancel()
					done := make(chan struct{})
					go func() {
						defer close(done)
						if err := c.Start(ctx); err != nil {
							t.Errorf("Start: %v", err)
						}
					}()
					synctest.Wait()
					if _, err := c.GetInformer(ctx, &corev1.Service{}, crcache.BlockUntilSynced(false)); err != nil {
						t.Fatal(err)
					}

					listCtx, listCancel := context.WithTimeout(ctx, time.Second)
					defer listCancel()
					services := &corev1.ServiceList{}
					if err := c.List(listCtx, services); !apierrors.IsTimeout(err) {
						t.Errorf("List before the sync: %v, want a Timeout error", err)
					}
					getCtx, getCancel := context.WithTimeout(ctx, time.Second)
					defer getCancel()
					key := client.ObjectKey{Name: "default", Namespace: "kubernetes"}
					if err := c.Get(getCtx, key, &corev1.Service{}); !apierrors.IsTimeout(err) {
						t.Errorf("Get before the sync: %v, want a Timeout error", err)
					}

					fake.Synced()
					if err := c.List(ctx, services); err != nil {
						t.Errorf("List after the sync: %v", err)
					}
					if err := c.Get(ctx, key, &corev1.Service{}); !apierrors.IsNotFound(err) {
						t.Errorf("Get after the sync: %v, want NotFound", err)
					}
					cancel()
					<-done
				})
			})
		}
	}
}

func TestConformanceIndexFieldDoesNotWaitForTheInformerNewInformerBuilt(t *testing.T) {
	for _, impl := range conformanceImpls {
		t.Run(impl.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, err := impl.new(&rest.Config{}, fakeInformerOptions(controllertest.NewFakeInformer(), false))
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				done := make(chan struct{})
				go func() {
					defer close(done)
					if err := c.Start(ctx); err != nil {
						t.Errorf("Start: %v", err)
					}
				}()
				synctest.Wait()
				indexCtx, indexCancel := context.WithTimeout(ctx, 100*time.Millisecond)
				defer indexCancel()
				err = c.IndexField(indexCtx, &corev1.Pod{}, "testField", func(client.Object) []string {
					return []string{"test-value"}
				})
				if err != nil {
					t.Errorf("IndexField before the sync: %v", err)
				}
				cancel()
				<-done
			})
		})
	}
}
