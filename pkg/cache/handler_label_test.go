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

package cache

import (
	"context"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/deltacache/deltacache/pkg/informer"
	"github.com/deltacache/deltacache/pkg/informer/informertest"
)

// labelRecorder is an informer that records the labels its registrations get.
type labelRecorder struct {
	*informer.SharedIndexInformer
	labels []string
}

func (l *labelRecorder) AddEventHandlerWithOptions(
	h toolscache.ResourceEventHandler, o toolscache.HandlerOptions,
) (toolscache.ResourceEventHandlerRegistration, error) {
	reg, err := l.SharedIndexInformer.AddEventHandlerWithOptions(h, o)
	if err == nil {
		l.labels = append(l.labels, reg.(*informer.HandlerRegistration).MetricLabel())
	}
	return reg, err
}

func createNothing(context.Context, event.CreateEvent, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
}

func mapToNothing(context.Context, client.Object) []reconcile.Request { return nil }

// Controller-runtime registers every controller's handler as one Go type and names no
// controller; the cache labels each registration after what it enqueues, and two that
// still look alike are "#2".
func TestHandlerLabelsNameWhatEachControllerRuntimeHandlerEnqueues(t *testing.T) {
	inf := &labelRecorder{SharedIndexInformer: informer.NewSharedIndexInformer(
		informertest.New(&corev1.Pod{}), &corev1.Pod{}, informer.Options{HandlerLabel: handlerLabel})}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(appsv1.SchemeGroupVersion.WithKind("Deployment"), meta.RESTScopeNamespace)
	ctx := t.Context()
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer queue.ShutDown()
	for _, h := range []handler.EventHandler{
		&handler.EnqueueRequestForObject{},
		&handler.EnqueueRequestForObject{},
		handler.EnqueueRequestForOwner(scheme.Scheme, mapper, &appsv1.Deployment{}),
		handler.EnqueueRequestsFromMapFunc(mapToNothing),
		handler.Funcs{CreateFunc: createNothing},
	} {
		src := &source.Informer{Informer: inf, Handler: h}
		if err := src.Start(ctx, queue); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"source.Kind handler.TypedEnqueueRequestForObject",
		"source.Kind handler.TypedEnqueueRequestForObject#2",
		"source.Kind handler.TypedFuncs",
		"source.Kind handler.enqueueRequestsFromMapFunc(cache.mapToNothing)",
		"source.Kind handler.TypedFuncs(cache.createNothing)",
	}
	if !slices.Equal(inf.labels, want) {
		t.Fatalf("labels:\n got %q\nwant %q", inf.labels, want)
	}
	if got := handlerLabel(toolscache.ResourceEventHandlerFuncs{}); got != "" {
		t.Errorf("label of a plain handler = %q, want \"\" (the informer's default)", got)
	}
}
