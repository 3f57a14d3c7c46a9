//go:build e2e

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

package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	demov1alpha1 "github.com/deltacache/deltacache/api/v1alpha1"
)

var _ = Describe("The manager binary on deltacache", Ordered, func() {
	ctx := context.Background()
	const ns = "e2e"

	It("syncs its informers and logs each initial sync", func() {
		Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		// One "informer synced" line per informer, naming it (pkg/cache logs the kind as
		// Kind.version.group) with its object count.
		syncedKinds := func() []string {
			var kinds []string
			for line := range strings.Lines(logs.String()) {
				if !strings.Contains(line, "informer synced") || !strings.Contains(line, "objects") {
					continue
				}
				for _, kind := range []string{"App.v1alpha1.demo.deltacache.io", "Pod.v1"} {
					if strings.Contains(line, kind) {
						kinds = append(kinds, kind)
					}
				}
			}
			return kinds
		}
		Eventually(syncedKinds, 60*time.Second, 250*time.Millisecond).
			Should(ContainElements("App.v1alpha1.demo.deltacache.io", "Pod.v1"),
				"expected an 'informer synced' line, with its object count, for the App and the Pod informers")
		Expect(strings.Count(logs.String(), "informer synced")).To(BeNumerically(">=", 2))
	})

	It("converges an App's status as its pods are scheduled and become ready", func() {
		app := &demov1alpha1.App{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"},
			Spec:       demov1alpha1.AppSpec{Selector: "shop-pods", MinReady: 2},
		}
		Expect(k8sClient.Create(ctx, app)).To(Succeed())
		for i, node := range []string{"node-a", "node-b", "node-b"} {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("shop-%d", i), Labels: map[string]string{"app": "shop-pods"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}}},
			}
			Expect(k8sClient.Create(ctx, pod)).To(Succeed())
			Expect(k8sClient.SubResource("binding").Create(ctx, pod, &corev1.Binding{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod.Name},
				Target:     corev1.ObjectReference{Kind: "Node", Name: node},
			})).To(Succeed())
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
			ready := corev1.ConditionFalse
			if i < 2 {
				ready = corev1.ConditionTrue
			}
			pod.Status.Phase = corev1.PodRunning
			pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready, LastTransitionTime: metav1.Now()}}
			Expect(k8sClient.Status().Update(ctx, pod)).To(Succeed())
		}

		Eventually(func(g Gomega) {
			var got demov1alpha1.App
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(app), &got)).To(Succeed())
			g.Expect(got.Status.Pods).To(Equal(int32(3)))
			g.Expect(got.Status.Ready).To(Equal(int32(2)))
			g.Expect(got.Status.Nodes).To(Equal(int32(2)))
			g.Expect(got.Status.Phases).To(Equal(map[string]int32{"Running": 3}))
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, "Available")).To(BeTrue())
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, "Progressing")).To(BeTrue())
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())
	})

	It("logs no RBAC denial: the generated role covers everything the manager reads and writes", func() {
		Consistently(func() string { return logs.String() }, 2*time.Second, 500*time.Millisecond).
			ShouldNot(ContainSubstring("forbidden"))
	})
})
