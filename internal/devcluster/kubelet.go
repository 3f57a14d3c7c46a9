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

package devcluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kubelet plays the part of the scheduler and the kubelets for the seeded pods of a control
// plane that has neither: on every tick it moves each seeded pod one step along
// unscheduled → bound to a node → Running (not ready) → Ready, and now and then fails a
// running pod or deletes one, creating a replacement under a new name so the App keeps its
// pod count. It touches only pods carrying SeededLabel=true.
type Kubelet struct {
	// Client writes pods, their binding and their status (a direct client, not a cache).
	Client client.Client
	// Nodes are the node names pods are bound to, round-robin. Default: node-a, node-b, node-c.
	Nodes []string
	// Interval between ticks. Default: 2s.
	Interval time.Duration
	// ChaosPercent is the chance, per tick and per ready pod, that it fails or is deleted.
	// Default 0 means none; `make run` uses 3.
	ChaosPercent int
	// Rand drives node choice and chaos; seed it to replay a run. Default: a random seed.
	Rand *rand.Rand
	// Namespace limits the stand-in to the seeded pods of one namespace. Default: all.
	Namespace string

	nextNode int
}

// Run ticks until ctx ends. Errors of one tick are logged and the next tick retries.
func (k *Kubelet) Run(ctx context.Context, log logr.Logger) {
	if len(k.Nodes) == 0 {
		k.Nodes = []string{"node-a", "node-b", "node-c"}
	}
	if k.Interval <= 0 {
		k.Interval = 2 * time.Second
	}
	if k.Rand == nil {
		seed := rand.Uint64()
		log.Info("kubelet stand-in seeded", "seed", seed)
		k.Rand = rand.New(rand.NewPCG(seed, seed))
	}
	ticker := time.NewTicker(k.Interval)
	defer ticker.Stop()
	for {
		if err := k.Tick(ctx, log); err != nil && ctx.Err() == nil {
			log.Error(err, "kubelet stand-in tick failed")
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// Tick advances every seeded pod by one step.
func (k *Kubelet) Tick(ctx context.Context, log logr.Logger) error {
	pods, err := seededPods(ctx, k.Client, k.Namespace)
	if err != nil {
		return err
	}
	for i := range pods {
		pod := &pods[i]
		if pod.DeletionTimestamp != nil {
			continue
		}
		if err := k.step(ctx, log, pod); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	return nil
}

func (k *Kubelet) step(ctx context.Context, log logr.Logger, pod *corev1.Pod) error {
	switch {
	case pod.Spec.NodeName == "":
		node := k.Nodes[k.nextNode%len(k.Nodes)]
		k.nextNode++
		binding := &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name},
			Target:     corev1.ObjectReference{Kind: "Node", Name: node},
		}
		return k.Client.SubResource("binding").Create(ctx, pod, binding)
	case pod.Status.Phase == "" || pod.Status.Phase == corev1.PodPending:
		return k.setStatus(ctx, pod, corev1.PodRunning, corev1.ConditionFalse, "ContainersNotReady")
	case pod.Status.Phase == corev1.PodRunning && !podIsReady(pod):
		return k.setStatus(ctx, pod, corev1.PodRunning, corev1.ConditionTrue, "")
	case pod.Status.Phase == corev1.PodFailed:
		// A failed pod is replaced, as its controller would.
		return k.replace(ctx, log, pod, "failed")
	case pod.Status.Phase == corev1.PodRunning && k.ChaosPercent > 0 && k.Rand.IntN(100) < k.ChaosPercent:
		if k.Rand.IntN(2) == 0 {
			log.Info("kubelet stand-in: pod fails", "pod", client.ObjectKeyFromObject(pod))
			return k.setStatus(ctx, pod, corev1.PodFailed, corev1.ConditionFalse, "PodFailed")
		}
		return k.replace(ctx, log, pod, "deleted")
	}
	return nil
}

func (k *Kubelet) setStatus(ctx context.Context, pod *corev1.Pod, phase corev1.PodPhase, ready corev1.ConditionStatus, reason string) error {
	now := metav1.Now()
	pod.Status.Phase = phase
	if pod.Status.StartTime == nil {
		pod.Status.StartTime = &now
	}
	cond := corev1.PodCondition{Type: corev1.PodReady, Status: ready, Reason: reason, LastTransitionTime: now}
	replaced := false
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			pod.Status.Conditions[i] = cond
			replaced = true
		}
	}
	if !replaced {
		pod.Status.Conditions = append(pod.Status.Conditions, cond)
	}
	return k.Client.Status().Update(ctx, pod)
}

func (k *Kubelet) replace(ctx context.Context, log logr.Logger, pod *corev1.Pod, why string) error {
	// Grace period 0: there is no kubelet to confirm a graceful deletion of a bound pod.
	if err := k.Client.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	// The server picks the replacement's name, so it never collides with a pod left by
	// an earlier run or another kubelet stand-in.
	replacement := NewPod(pod.Namespace, "", pod.Labels["app"])
	replacement.GenerateName = pod.Labels["app"] + "-"
	if err := k.Client.Create(ctx, replacement); err != nil {
		return err
	}
	log.Info("kubelet stand-in: pod replaced", "pod", client.ObjectKeyFromObject(pod), "why", why,
		"replacement", replacement.Name)
	return nil
}

func podIsReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
