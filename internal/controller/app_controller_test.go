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
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	demov1alpha1 "github.com/deltacache/deltacache/api/v1alpha1"
)

// webApp is the app label value (and App name) most specs use.
const webApp = "web"

var namespaceCounter int

// running is the pod phase as App.status.phases counts it.
const running = string(corev1.PodRunning)

// newNamespace creates a namespace of its own for one spec.
func newNamespace() string {
	namespaceCounter++
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("apps-%d-%d", GinkgoParallelProcess(), namespaceCounter)}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

func newApp(ns, name, selector string, minReady int32) *demov1alpha1.App {
	app := &demov1alpha1.App{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       demov1alpha1.AppSpec{Selector: selector, MinReady: minReady},
	}
	Expect(k8sClient.Create(ctx, app)).To(Succeed())
	return app
}

func newPod(ns, name string, labels map[string]string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}}},
	}
	Expect(k8sClient.Create(ctx, pod)).To(Succeed())
	return pod
}

// bind assigns pod to node through the binding subresource, as the scheduler does.
func bind(pod *corev1.Pod, node string) {
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	Expect(k8sClient.SubResource("binding").Create(ctx, pod, binding)).To(Succeed())
}

// setPodStatus writes phase and the Ready condition, as the kubelet does.
func setPodStatus(pod *corev1.Pod, phase corev1.PodPhase, ready bool) {
	Eventually(func() error {
		var current corev1.Pod
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(pod), &current); err != nil {
			return err
		}
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		current.Status.Phase = phase
		current.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}
		return k8sClient.Status().Update(ctx, &current)
	}).Should(Succeed())
}

// observed is the part of an App's status the specs compare exactly.
type observed struct {
	Pods, Ready, Nodes      int32
	Phases                  map[string]int32
	Available, Progressing  metav1.ConditionStatus
	ObservedGenerationMatch bool
}

func observe(key types.NamespacedName) func(Gomega) observed {
	return func(g Gomega) observed {
		var app demov1alpha1.App
		g.Expect(k8sClient.Get(ctx, key, &app)).To(Succeed())
		o := observed{Pods: app.Status.Pods, Ready: app.Status.Ready, Nodes: app.Status.Nodes, Phases: app.Status.Phases,
			ObservedGenerationMatch: app.Status.ObservedGeneration == app.Generation}
		if c := meta.FindStatusCondition(app.Status.Conditions, ConditionAvailable); c != nil {
			o.Available = c.Status
		}
		if c := meta.FindStatusCondition(app.Status.Conditions, ConditionProgressing); c != nil {
			o.Progressing = c.Status
		}
		return o
	}
}

var _ = Describe("App controller on deltacache's cache", func() {
	const timeout, interval = 20 * time.Second, 100 * time.Millisecond

	It("converges status as pods are created, scheduled, become ready, fail and are deleted", func() {
		ns := newNamespace()
		other := newNamespace()
		app := newApp(ns, webApp, "", 2) // no selector: the App's name selects app=web
		key := client.ObjectKeyFromObject(app)

		By("an App without pods is not available")
		Eventually(observe(key), timeout, interval).Should(Equal(observed{
			Available: metav1.ConditionFalse, Progressing: metav1.ConditionFalse, ObservedGenerationMatch: true,
		}))

		By("three pods with app=web appear; look-alikes elsewhere are ignored")
		pods := []*corev1.Pod{
			newPod(ns, "web-0", map[string]string{AppLabel: webApp, "tier": "front"}),
			newPod(ns, "web-1", map[string]string{AppLabel: webApp}),
			newPod(ns, "web-2", map[string]string{AppLabel: webApp}),
		}
		newPod(ns, "db-0", map[string]string{AppLabel: "db"})
		newPod(ns, "unlabelled", nil)
		newPod(other, "web-0", map[string]string{AppLabel: webApp})
		Eventually(observe(key), timeout, interval).Should(Equal(observed{
			Pods: 3, Phases: map[string]int32{"Pending": 3},
			Available: metav1.ConditionFalse, Progressing: metav1.ConditionTrue, ObservedGenerationMatch: true,
		}))

		By("the pods are scheduled on two nodes and two of them become ready")
		bind(pods[0], "node-a")
		bind(pods[1], "node-b")
		bind(pods[2], "node-b")
		setPodStatus(pods[0], corev1.PodRunning, true)
		setPodStatus(pods[1], corev1.PodRunning, true)
		setPodStatus(pods[2], corev1.PodRunning, false)
		Eventually(observe(key), timeout, interval).Should(Equal(observed{
			Pods: 3, Ready: 2, Nodes: 2, Phases: map[string]int32{running: 3},
			Available: metav1.ConditionTrue, Progressing: metav1.ConditionTrue, ObservedGenerationMatch: true,
		}))

		By("a ready pod fails")
		setPodStatus(pods[0], corev1.PodFailed, false)
		Eventually(observe(key), timeout, interval).Should(Equal(observed{
			Pods: 3, Ready: 1, Nodes: 2, Phases: map[string]int32{running: 2, "Failed": 1},
			Available: metav1.ConditionFalse, Progressing: metav1.ConditionTrue, ObservedGenerationMatch: true,
		}))

		By("the failed pod is deleted and the last one becomes ready")
		Expect(k8sClient.Delete(ctx, pods[0], client.GracePeriodSeconds(0))).To(Succeed())
		setPodStatus(pods[2], corev1.PodRunning, true)
		Eventually(observe(key), timeout, interval).Should(Equal(observed{
			Pods: 2, Ready: 2, Nodes: 1, Phases: map[string]int32{running: 2},
			Available: metav1.ConditionTrue, Progressing: metav1.ConditionFalse, ObservedGenerationMatch: true,
		}))

		By("raising minReady bumps the generation and turns Available false")
		Eventually(func() error {
			var current demov1alpha1.App
			if err := k8sClient.Get(ctx, key, &current); err != nil {
				return err
			}
			current.Spec.MinReady = 3
			return k8sClient.Update(ctx, &current)
		}, timeout, interval).Should(Succeed())
		Eventually(observe(key), timeout, interval).Should(Equal(observed{
			Pods: 2, Ready: 2, Nodes: 1, Phases: map[string]int32{running: 2},
			Available: metav1.ConditionFalse, Progressing: metav1.ConditionFalse, ObservedGenerationMatch: true,
		}))
	})

	It("finds pods through spec.selector and maps pod events back to the App", func() {
		ns := newNamespace()
		app := newApp(ns, "worker", "batch", 1)
		key := client.ObjectKeyFromObject(app)
		newPod(ns, "worker-0", map[string]string{AppLabel: "worker"}) // the App's name, not its selector
		pod := newPod(ns, "batch-0", map[string]string{AppLabel: "batch"})
		bind(pod, "node-c")
		setPodStatus(pod, corev1.PodRunning, true)
		Eventually(observe(key), timeout, interval).Should(Equal(observed{
			Pods: 1, Ready: 1, Nodes: 1, Phases: map[string]int32{running: 1},
			Available: metav1.ConditionTrue, Progressing: metav1.ConditionFalse, ObservedGenerationMatch: true,
		}))

		By("relabelling the pod away removes it from the App")
		Eventually(func() error {
			var current corev1.Pod
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(pod), &current); err != nil {
				return err
			}
			current.Labels[AppLabel] = "something-else"
			return k8sClient.Update(ctx, &current)
		}, timeout, interval).Should(Succeed())
		Eventually(observe(key), timeout, interval).Should(Equal(observed{
			Available: metav1.ConditionFalse, Progressing: metav1.ConditionFalse, ObservedGenerationMatch: true,
		}))
	})

	It("writes status only when it changed", func() {
		ns := newNamespace()
		app := newApp(ns, "quiet", "", 1)
		key := client.ObjectKeyFromObject(app)
		pod := newPod(ns, "quiet-0", map[string]string{AppLabel: "quiet"})
		setPodStatus(pod, corev1.PodRunning, true)
		Eventually(observe(key), timeout, interval).Should(HaveField("Ready", int32(1)))

		// Reconcile synchronously, through the manager's cached client, once the cache has
		// caught up with the server's copy of the App.
		reconciler := &AppReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme()}
		serverRV := func() string {
			var a demov1alpha1.App
			Expect(k8sClient.Get(ctx, key, &a)).To(Succeed())
			return a.ResourceVersion
		}
		cacheCaughtUp := func(rv string) {
			Eventually(func() string {
				var a demov1alpha1.App
				Expect(mgr.GetClient().Get(ctx, key, &a)).To(Succeed())
				return a.ResourceVersion
			}, timeout, interval).Should(Equal(rv))
		}
		rv := serverRV()
		cacheCaughtUp(rv)

		By("reconciling an App whose status is current writes nothing")
		for range 3 {
			_, err := reconciler.Reconcile(ctx, ctrl.Request{NamespacedName: key})
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(serverRV()).To(Equal(rv))

		By("after a pod changed, the controller writes the new status and a further reconcile writes nothing")
		setPodStatus(pod, corev1.PodRunning, false)
		Eventually(func(g Gomega) {
			var cached corev1.Pod
			g.Expect(mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(pod), &cached)).To(Succeed())
			g.Expect(podReady(&cached)).To(BeFalse())
		}, timeout, interval).Should(Succeed())
		Eventually(observe(key), timeout, interval).Should(HaveField("Ready", int32(0)))
		rv = serverRV()
		cacheCaughtUp(rv)
		_, err := reconciler.Reconcile(ctx, ctrl.Request{NamespacedName: key})
		Expect(err).NotTo(HaveOccurred())
		Expect(serverRV()).To(Equal(rv))
	})
})

var _ = Describe("Indexes served by deltacache", func() {
	It("answers the reconciler's pod List from the label:app index, not by a scan", func() {
		ns := newNamespace()
		app := newApp(ns, "indexed", "", 1)
		newPod(ns, "indexed-0", map[string]string{AppLabel: "indexed"})
		podGVK := corev1.SchemeGroupVersion.WithKind("Pod")
		Eventually(observe(client.ObjectKeyFromObject(app)), 20*time.Second).Should(HaveField("Pods", int32(1)))

		before := managerCache.ListStats(podGVK)
		var pods corev1.PodList
		Expect(mgr.GetClient().List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{AppLabel: "indexed"})).To(Succeed())
		after := managerCache.ListStats(podGVK)
		Expect(pods.Items).To(HaveLen(1))
		Expect(pods.Items[0].Name).To(Equal("indexed-0"))
		// The reconciler may List concurrently (a requeue after a status conflict): at
		// least ours went through the index, and no List scanned.
		Expect(after.LabelIndex - before.LabelIndex).To(BeNumerically(">=", 1))
		Expect(after.Scan).To(Equal(before.Scan))
		Expect(after.NamespaceIndex).To(Equal(before.NamespaceIndex))
		// Every pod List the controller made so far went through the index.
		Expect(after.Scan).To(BeZero())
		Expect(after.LabelIndex).To(BeNumerically(">=", 2))
	})

	It("returns exactly the Apps selected by spec.selector, per namespace and across namespaces", func() {
		nsA, nsB := newNamespace(), newNamespace()
		newApp(nsA, "shop", "", 1)            // selector "shop" (its name)
		newApp(nsA, "shop-canary", "shop", 1) // selector "shop"
		newApp(nsA, "cart", "", 1)
		newApp(nsB, "shop", "", 1)
		newApp(nsB, "other", "cart", 1)

		names := func(opts ...client.ListOption) []string {
			var apps demov1alpha1.AppList
			Expect(mgr.GetClient().List(ctx, &apps, opts...)).To(Succeed())
			out := make([]string, 0, len(apps.Items))
			for _, a := range apps.Items {
				out = append(out, a.Namespace+"/"+a.Name)
			}
			return out
		}
		// Wait until the cache has seen all five Apps, then query.
		Eventually(func() int {
			return len(names(client.InNamespace(nsA))) + len(names(client.InNamespace(nsB)))
		}, 10*time.Second).Should(Equal(5))
		appGVK := demov1alpha1.GroupVersion.WithKind("App")
		before := managerCache.ListStats(appGVK)
		Expect(names(client.MatchingFields{AppSelectorField: "shop"})).
			To(ConsistOf(nsA+"/shop", nsA+"/shop-canary", nsB+"/shop"))
		Expect(names(client.InNamespace(nsA), client.MatchingFields{AppSelectorField: "shop"})).
			To(ConsistOf(nsA+"/shop", nsA+"/shop-canary"))
		Expect(names(client.InNamespace(nsB), client.MatchingFields{AppSelectorField: "cart"})).
			To(ConsistOf(nsB + "/other"))
		Expect(names(client.MatchingFields{AppSelectorField: "cart"})).To(ConsistOf(nsA+"/cart", nsB+"/other"))
		Expect(names(client.MatchingFields{AppSelectorField: "nothing"})).To(BeEmpty())

		// The five Lists above were answered from the field:spec.selector index (the
		// controller's own App Lists, which may run meanwhile, use it too), none by a scan.
		after := managerCache.ListStats(appGVK)
		Expect(after.FieldIndex - before.FieldIndex).To(BeNumerically(">=", 5))
		Expect(after.Scan).To(Equal(before.Scan))
		Expect(after.LabelIndex).To(Equal(before.LabelIndex))
		Expect(after.NamespaceIndex).To(Equal(before.NamespaceIndex))
	})
})
