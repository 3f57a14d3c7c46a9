package codec

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/deltacache/deltacache/pkg/informer/informertest"
)

// The two populations the compressed codec is measured and tested on, as
// deltacache stores them (managedFields stripped, its default) and in the
// order an initial list delivers them (by namespace and name).

// benchPods returns the first n pods of test/bench's layout for n pods, as
// its in-process workloads hold them (Layout.ServerPod; a copy of the lines of
// test/bench/pods.go that build them, since this module cannot import the
// bench's), managedFields stripped, in key order.
func benchPods(n int) []*corev1.Pod {
	groups := max(1, n/100)
	namespaces, apps, nodes := min(20, groups), groups, groups
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		a := i % apps
		app := fmt.Sprintf("app-%04d", a)
		ns := fmt.Sprintf("bench-%02d", a%namespaces)
		hash := benchTemplateHash(a)
		sum := sha256.Sum256([]byte(strconv.Itoa(a)))
		created := metav1.NewTime(time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Millisecond))
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Namespace:         ns,
				Name:              fmt.Sprintf("%s-%s-%s", app, hash, strconv.FormatInt(int64(1_000_000+i), 36)),
				UID:               types.UID(fmt.Sprintf("7b1f3c2e-%04x-4d5e-9a6b-%012x", i%0x10000, i)),
				ResourceVersion:   strconv.Itoa(1000 + i),
				CreationTimestamp: created,
				Labels: map[string]string{"app": app, "tier": []string{"frontend", "backend", "cache"}[a%3],
					"pod-template-hash": hash},
				Annotations: map[string]string{"prometheus.io/scrape": "true", "checksum/config": hex.EncodeToString(sum[:])},
			},
			Spec: corev1.PodSpec{
				NodeName: fmt.Sprintf("node-%04d", (i/namespaces)%nodes),
				Containers: []corev1.Container{{
					Name:  "app",
					Image: "registry.example.com/team/" + app + ":v1.27.3",
					Args:  []string{"--listen=:8080", "--log-level=info", "--config=/etc/" + app + "/config.yaml"},
					Env: []corev1.EnvVar{{Name: "APP_NAME", Value: app}, {Name: "POD_NAMESPACE", Value: ns},
						{Name: "LOG_FORMAT", Value: "json"}},
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}},
					TerminationMessagePath:   corev1.TerminationMessagePathDefault,
					TerminationMessagePolicy: corev1.TerminationMessageReadFile,
					ImagePullPolicy:          corev1.PullIfNotPresent,
				}},
				RestartPolicy:                 corev1.RestartPolicyAlways,
				TerminationGracePeriodSeconds: ptr.To[int64](30),
				DNSPolicy:                     corev1.DNSClusterFirst,
				SecurityContext:               &corev1.PodSecurityContext{},
				SchedulerName:                 corev1.DefaultSchedulerName,
				Priority:                      ptr.To[int32](0),
				EnableServiceLinks:            ptr.To(true),
				PreemptionPolicy:              ptr.To(corev1.PreemptLowerPriority),
				Tolerations: []corev1.Toleration{
					{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists,
						Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
					{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
						Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
				},
			},
			Status: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBurstable},
		}
		pods[i] = p
	}
	sortByKey(pods)
	return pods
}

// benchTemplateHash is test/bench's templateHash.
func benchTemplateHash(a int) string {
	h := fnv.New64a()
	_, _ = fmt.Fprintf(h, "app-%d", a)
	s := strconv.FormatUint(h.Sum64(), 36)
	for len(s) < 10 {
		s = "x" + s
	}
	return s[:10]
}

// realisticPods returns informertest.Cluster's first n pods of seed 1,
// managedFields stripped, in key order.
func realisticPods(n int) []*corev1.Pod {
	pods := informertest.NewCluster(1).Pods(n)
	for _, p := range pods {
		p.ManagedFields = nil
	}
	sortByKey(pods)
	return pods
}

// realisticConfigMaps returns informertest.Cluster's first n ConfigMaps of
// seed 1, managedFields stripped, in key order.
func realisticConfigMaps(n int) []*corev1.ConfigMap {
	cms := informertest.NewCluster(1).ConfigMaps(n)
	for _, cm := range cms {
		cm.ManagedFields = nil
	}
	sortByKey(cms)
	return cms
}

func sortByKey[T metav1.Object](objs []T) {
	slices.SortFunc(objs, func(a, b T) int {
		return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
}
