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

package bench

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Strings the harness shares between its pods, fake servers and report.
const (
	appLabel          = "app"          // label key of the pods' app label and the index on it
	trueValue         = "true"         // a query parameter or annotation set to true
	headerContentType = "Content-Type" // HTTP header of the fake API server's responses
	unitMiB           = "MiB"          // unit of the report's memory figures
)

// FieldManager is the field manager the seeder creates pods with, so that every pod
// carries one managedFields entry, as pods created by a controller do.
const FieldManager = "bench-seeder"

// Layout places Pods pods over Namespaces namespaces, Apps values of the label app and
// Nodes values of spec.nodeName. Pod i belongs to app i mod Apps, lives in the namespace
// app mod Namespaces (an app never spans namespaces, as a Deployment does not) and runs
// on node (i / Namespaces) mod Nodes (a node hosts pods of every namespace). With
// NewLayout, every app and every node has about 100 pods.
type Layout struct {
	Pods, Namespaces, Apps, Nodes int
}

// NewLayout returns the layout of pods pods: 20 namespaces (fewer for tiny sizes) and
// pods/100 values each of app and nodeName, so that a List by label or by node returns
// about 100 pods whatever the size.
func NewLayout(pods int) Layout {
	groups := max(1, pods/100)
	return Layout{Pods: pods, Namespaces: min(20, groups), Apps: groups, Nodes: groups}
}

// App returns the index of pod i's app.
func (l Layout) App(i int) int { return i % l.Apps }

// AppName returns the value of the label app of app a.
func (l Layout) AppName(a int) string { return fmt.Sprintf("app-%04d", a) }

// NamespaceName returns the name of namespace n.
func (l Layout) NamespaceName(n int) string { return fmt.Sprintf("bench-%02d", n) }

// AppNamespace returns the namespace of app a.
func (l Layout) AppNamespace(a int) string { return l.NamespaceName(a % l.Namespaces) }

// NodeName returns the name of node n.
func (l Layout) NodeName(n int) string { return fmt.Sprintf("node-%04d", n) }

// Key returns the namespace and name of pod i.
func (l Layout) Key(i int) (namespace, name string) {
	a := l.App(i)
	suffix := strconv.FormatInt(int64(1_000_000+i), 36)
	return l.AppNamespace(a), fmt.Sprintf("%s-%s-%s", l.AppName(a), templateHash(a), suffix)
}

// PodsPerNamespace returns how many pods namespace n holds.
func (l Layout) PodsPerNamespace(n int) int {
	count := 0
	for a := n; a < l.Apps; a += l.Namespaces {
		count += l.PodsOfApp(a)
	}
	return count
}

// PodsOfApp returns how many pods app a has.
func (l Layout) PodsOfApp(a int) int {
	count := l.Pods / l.Apps
	if a < l.Pods%l.Apps {
		count++
	}
	return count
}

// NewPod returns pod i as a client creates it: labels app, tier and pod-template-hash,
// two annotations, one container with args, env, a port and resource requests, and
// spec.nodeName. The API server adds defaults, metadata and managedFields (ServerPod
// has them too).
func (l Layout) NewPod(i int) *corev1.Pod {
	a := l.App(i)
	ns, name := l.Key(i)
	app := l.AppName(a)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns,
			Name:      name,
			Labels: map[string]string{
				appLabel:            app,
				"tier":              []string{"frontend", "backend", "cache"}[a%3],
				"pod-template-hash": templateHash(a),
			},
			Annotations: map[string]string{
				"prometheus.io/scrape": trueValue,
				"checksum/config":      configChecksum(a),
			},
		},
		Spec: corev1.PodSpec{
			NodeName: l.NodeName((i / l.Namespaces) % l.Nodes),
			Containers: []corev1.Container{{
				Name:  "app",
				Image: "registry.example.com/team/" + app + ":v1.27.3",
				Args:  []string{"--listen=:8080", "--log-level=info", "--config=/etc/" + app + "/config.yaml"},
				Env: []corev1.EnvVar{
					{Name: "APP_NAME", Value: app},
					{Name: "POD_NAMESPACE", Value: ns},
					{Name: "LOG_FORMAT", Value: "json"},
				},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("100m"),
					corev1.ResourceMemory: resource.MustParse("128Mi"),
				}},
			}},
		},
	}
}

// ServerPod returns pod i as the API server returns it after NewPod was created by
// FieldManager: with uid, resourceVersion rv, creationTimestamp, the managedFields entry,
// the defaults of the pod API (restart and DNS policy, scheduler, tolerations, container
// termination message and pull policy, ...) and a Pending status. The in-process
// workloads use it so that their objects weigh what the API server's do.
func (l Layout) ServerPod(i int, rv string) *corev1.Pod {
	p := l.NewPod(i)
	created := metav1.NewTime(time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Millisecond))
	p.UID = types.UID(fmt.Sprintf("7b1f3c2e-%04x-4d5e-9a6b-%012x", i%0x10000, i))
	p.ResourceVersion = rv
	p.CreationTimestamp = created
	p.ManagedFields = []metav1.ManagedFieldsEntry{{
		Manager:    FieldManager,
		Operation:  metav1.ManagedFieldsOperationUpdate,
		APIVersion: "v1",
		Time:       &created,
		FieldsType: "FieldsV1",
		FieldsV1:   metav1.NewFieldsV1(podFieldsV1),
	}}
	s := &p.Spec
	s.RestartPolicy = corev1.RestartPolicyAlways
	s.TerminationGracePeriodSeconds = ptr.To[int64](30)
	s.DNSPolicy = corev1.DNSClusterFirst
	s.SecurityContext = &corev1.PodSecurityContext{}
	s.SchedulerName = corev1.DefaultSchedulerName
	s.Priority = ptr.To[int32](0)
	s.EnableServiceLinks = new(true)
	s.PreemptionPolicy = ptr.To(corev1.PreemptLowerPriority)
	s.Tolerations = []corev1.Toleration{
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
	}
	c := &s.Containers[0]
	c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	c.ImagePullPolicy = corev1.PullIfNotPresent
	p.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBurstable}
	return p
}

// podFieldsV1 is the managedFields set of a NewPod created with FieldManager, as the
// API server records it.
const podFieldsV1 = `{"f:metadata":{"f:annotations":{".":{},"f:checksum/config":{},"f:prometheus.io/scrape":{}},` +
	`"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{},"f:tier":{}}},` +
	`"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:args":{},` +
	`"f:env":{".":{},"k:{\"name\":\"APP_NAME\"}":{".":{},"f:name":{},"f:value":{}},` +
	`"k:{\"name\":\"LOG_FORMAT\"}":{".":{},"f:name":{},"f:value":{}},` +
	`"k:{\"name\":\"POD_NAMESPACE\"}":{".":{},"f:name":{},"f:value":{}}},` +
	`"f:image":{},"f:imagePullPolicy":{},"f:name":{},` +
	`"f:ports":{".":{},"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},` +
	`"f:name":{},"f:protocol":{}}},"f:resources":{".":{},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}},` +
	`"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},` +
	`"f:enableServiceLinks":{},"f:nodeName":{},"f:restartPolicy":{},"f:schedulerName":{},` +
	`"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}`

// templateHash is the pod-template-hash of app a: ten lowercase alphanumerics, like a
// ReplicaSet's.
func templateHash(a int) string {
	h := fnv.New64a()
	_, _ = fmt.Fprintf(h, "app-%d", a)
	s := strconv.FormatUint(h.Sum64(), 36)
	for len(s) < 10 {
		s = "x" + s
	}
	return s[:10]
}

// configChecksum is a sha256 in hex, as Helm's checksum/config annotations are.
func configChecksum(a int) string {
	sum := sha256.Sum256([]byte(strconv.Itoa(a)))
	return hex.EncodeToString(sum[:])
}
