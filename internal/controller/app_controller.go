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

package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	demov1alpha1 "github.com/deltacache/deltacache/api/v1alpha1"
)

// Condition types and reasons written to App.status.conditions.
const (
	ConditionAvailable   = "Available"
	ConditionProgressing = "Progressing"

	ReasonMinimumPodsReady = "MinimumPodsReady"
	ReasonNotEnoughReady   = "NotEnoughPodsReady"
	ReasonPodsNotReady     = "PodsNotReady"
	ReasonPodsSettled      = "PodsSettled"
)

// AppReconciler reconciles an App: it counts the App's pods, read from the cache through the
// `app` label, and writes the counts and conditions to App.status when they changed.
type AppReconciler struct {
	client.Client
	Scheme *runtime.Scheme
	// ReconcileLog, when set, records every reconcile that runs (see ReconcileLog).
	ReconcileLog *ReconcileLog
	// Guard, when set, wraps the reconciler (after ReconcileLog), e.g. with
	// deltacache's cache.ShardedReconciler, so that requests of keys this replica
	// does not serve are skipped. Its error fails SetupWithManager.
	Guard func(reconcile.Reconciler) (reconcile.Reconciler, error)
}

// +kubebuilder:rbac:groups=demo.deltacache.io,resources=apps,verbs=get;list;watch
// +kubebuilder:rbac:groups=demo.deltacache.io,resources=apps/status,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// Sharding (--shard-identity): the replicas' Lease ring, and the Namespaces that
// namespace sharding assigns.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;create;update;delete
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=list;watch

// Reconcile computes the status of one App from the pods labelled app=<selector> in its
// namespace. It writes status only when something changed.
func (r *AppReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)

	var app demov1alpha1.App
	if err := r.Get(ctx, req.NamespacedName, &app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(app.Namespace),
		client.MatchingLabels{AppLabel: app.EffectiveSelector()}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing pods of App %s: %w", req.NamespacedName, err)
	}

	status := ComputeStatus(&app, pods.Items)
	if equality.Semantic.DeepEqual(app.Status, status) {
		return ctrl.Result{}, nil
	}
	app.Status = status
	if err := r.Status().Update(ctx, &app); err != nil {
		if apierrors.IsConflict(err) {
			// The App changed since we read it; its update event queues a fresh reconcile.
			log.V(1).Info("App changed while updating status; waiting for its event")
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("updating status of App %s: %w", req.NamespacedName, err)
	}
	log.Info("App status updated", "pods", status.Pods, "ready", status.Ready,
		"phases", status.Phases, "nodes", status.Nodes,
		"available", meta.IsStatusConditionTrue(status.Conditions, ConditionAvailable))
	return ctrl.Result{}, nil
}

// ComputeStatus returns the status app should have given its pods. It starts from a copy of
// app.Status so that conditions keep their lastTransitionTime when their status is unchanged.
func ComputeStatus(app *demov1alpha1.App, pods []corev1.Pod) demov1alpha1.AppStatus {
	status := *app.Status.DeepCopy()
	status.ObservedGeneration = app.Generation
	status.Pods = int32(len(pods))
	status.Ready = 0
	status.Phases = nil
	nodes := map[string]struct{}{}
	settling := 0
	for i := range pods {
		pod := &pods[i]
		phase := string(pod.Status.Phase)
		if phase == "" {
			phase = string(corev1.PodPending)
		}
		if status.Phases == nil {
			status.Phases = map[string]int32{}
		}
		status.Phases[phase]++
		if pod.Spec.NodeName != "" {
			nodes[pod.Spec.NodeName] = struct{}{}
		}
		switch {
		case podReady(pod):
			status.Ready++
		case pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed:
			settling++
		}
	}
	status.Nodes = int32(len(nodes))

	available := metav1.Condition{
		Type:               ConditionAvailable,
		Status:             metav1.ConditionTrue,
		Reason:             ReasonMinimumPodsReady,
		Message:            fmt.Sprintf("%d of %d pods ready, %d required", status.Ready, status.Pods, app.Spec.MinReady),
		ObservedGeneration: app.Generation,
	}
	if status.Ready < app.Spec.MinReady {
		available.Status = metav1.ConditionFalse
		available.Reason = ReasonNotEnoughReady
	}
	meta.SetStatusCondition(&status.Conditions, available)

	progressing := metav1.Condition{
		Type:               ConditionProgressing,
		Status:             metav1.ConditionFalse,
		Reason:             ReasonPodsSettled,
		Message:            "no pod is waiting to become ready",
		ObservedGeneration: app.Generation,
	}
	if settling > 0 {
		progressing.Status = metav1.ConditionTrue
		progressing.Reason = ReasonPodsNotReady
		progressing.Message = fmt.Sprintf("%d pods are not ready yet", settling)
	}
	meta.SetStatusCondition(&status.Conditions, progressing)
	return status
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// appsForPod maps a pod to the Apps of its namespace that select it, through the
// AppSelectorField index.
func (r *AppReconciler) appsForPod(ctx context.Context, obj client.Object) []reconcile.Request {
	value, ok := obj.GetLabels()[AppLabel]
	if !ok {
		return nil
	}
	var apps demov1alpha1.AppList
	if err := r.List(ctx, &apps, client.InNamespace(obj.GetNamespace()),
		client.MatchingFields{AppSelectorField: value}); err != nil {
		logf.FromContext(ctx).Error(err, "mapping pod to Apps", "pod", client.ObjectKeyFromObject(obj))
		return nil
	}
	requests := make([]reconcile.Request, 0, len(apps.Items))
	for i := range apps.Items {
		requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&apps.Items[i])})
	}
	return requests
}

// SetupWithManager registers the App controller: it reconciles Apps and, through
// AppSelectorField, the Apps of every pod that changes. Call SetupIndexes first.
// Errors: Guard's, or the controller's registration.
func (r *AppReconciler) SetupWithManager(mgr ctrl.Manager) error {
	var rec reconcile.Reconciler = r
	if r.ReconcileLog != nil {
		rec = r.ReconcileLog.Wrap(rec)
	}
	if r.Guard != nil {
		var err error
		if rec, err = r.Guard(rec); err != nil {
			return err
		}
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&demov1alpha1.App{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.appsForPod)).
		Named("app").
		Complete(rec)
}
