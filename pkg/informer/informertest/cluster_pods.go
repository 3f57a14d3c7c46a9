package informertest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Pods returns the cluster's first n pods as the API server returns them,
// Deployment after Deployment (each pod of a Deployment of r replicas is one
// of its r pods; the last Deployment may be cut short). Pods(n)[i] is the same
// pod for every n > i.
func (c *Cluster) Pods(n int) []*corev1.Pod {
	pods := make([]*corev1.Pod, 0, n)
	for w := 0; len(pods) < n; w++ {
		wl := c.workload(w)
		var specFields string // the controller manager's fields, the same for all pods of wl
		for range wl.replicas {
			if len(pods) == n {
				break
			}
			pods = append(pods, c.pod(len(pods), wl, &specFields))
		}
	}
	return pods
}

// pod returns pod i, a replica of wl. specFields is the FieldsV1 of the
// controller manager's managedFields entry of wl's pods, with accessVolume for
// the name of a pod's token volume; "" before the first pod of wl computes it.
func (c *Cluster) pod(i int, wl workload, specFields *string) *corev1.Pod {
	r := c.rng(streamPod, uint64(i))
	t := wl.template
	node := c.nodes[r.IntN(len(c.nodes))]
	created := wl.created.Add(time.Duration(r.IntN(48*3600)) * time.Second)
	rs := wl.name + "-" + wl.hash

	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name:              rs + "-" + randomString(r, hashAlphabet, 5),
		GenerateName:      rs + "-",
		Namespace:         wl.namespace,
		UID:               types.UID(randomUUID(r)),
		ResourceVersion:   strconv.Itoa(48_000_000 + 37*i + r.IntN(37)),
		CreationTimestamp: metav1.NewTime(created),
		Labels:            map[string]string{"pod-template-hash": wl.hash},
		Annotations:       map[string]string{},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs,
			UID: types.UID(wl.rsUID), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
	}}
	for k, v := range t.labels {
		p.Labels[k] = v
	}
	p.Labels["app.kubernetes.io/version"] = wl.version
	p.Labels["app.kubernetes.io/instance"] = wl.name
	for k, v := range t.annotations {
		p.Annotations[k] = v
	}

	p.Spec = *t.spec.DeepCopy()
	s := &p.Spec
	s.NodeName = node.name
	// The service account admission's projected token volume, in every container.
	access := "kube-api-access-" + randomString(r, hashAlphabet, 5)
	s.Volumes = append(s.Volumes, corev1.Volume{Name: access, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To[int64](3607), Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
		DefaultMode: ptr.To[int32](420),
	}}})
	mount := corev1.VolumeMount{Name: access, ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for j := range cs {
			cs[j].Image = strings.ReplaceAll(cs[j].Image, "{version}", wl.version)
			cs[j].VolumeMounts = append(cs[j].VolumeMounts, mount)
		}
	}

	p.Status = podStatus(r, s, node, created)
	if *specFields == "" {
		*specFields = string(controllerFields(p, access).Raw)
	}
	p.ManagedFields = managedFields(p, strings.ReplaceAll(*specFields, accessVolume, access), created)
	return p
}

// podStatus returns the status the kubelet reports for a running pod of
// spec on node, started at created.
func podStatus(r *rand.Rand, s *corev1.PodSpec, node clusterNode, created time.Time) corev1.PodStatus {
	scheduled := created.Add(time.Duration(1+r.IntN(3)) * time.Second)
	started := scheduled.Add(time.Duration(2+r.IntN(20)) * time.Second)
	ready := started.Add(time.Duration(5+r.IntN(60)) * time.Second)
	podIP := fmt.Sprintf("10.%d.%d.%d", 100+node.podNet/8, r.IntN(256), 2+r.IntN(250))
	condition := func(t corev1.PodConditionType, at time.Time) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)}
	}
	st := corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			condition(corev1.PodReadyToStartContainers, started), condition(corev1.PodInitialized, started),
			condition(corev1.PodReady, ready), condition(corev1.ContainersReady, ready), condition(corev1.PodScheduled, scheduled),
		},
		HostIP:    node.ip,
		HostIPs:   []corev1.HostIP{{IP: node.ip}},
		PodIP:     podIP,
		PodIPs:    []corev1.PodIP{{IP: podIP}},
		StartTime: ptr.To(metav1.NewTime(scheduled)),
		QOSClass:  corev1.PodQOSBurstable,
	}
	status := func(c *corev1.Container) corev1.ContainerStatus {
		cs := corev1.ContainerStatus{
			Name:        c.Name,
			Ready:       true,
			Image:       c.Image,
			ImageID:     imageID(c.Image),
			ContainerID: "containerd://" + randomHex(r, 64),
			Started:     ptr.To(true),
		}
		return cs
	}
	for j := range s.InitContainers {
		cs := status(&s.InitContainers[j])
		cs.Started = ptr.To(false)
		cs.State.Terminated = &corev1.ContainerStateTerminated{Reason: "Completed", ContainerID: cs.ContainerID,
			StartedAt: metav1.NewTime(started.Add(-2 * time.Second)), FinishedAt: metav1.NewTime(started.Add(-time.Second))}
		st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
	}
	for j := range s.Containers {
		cs := status(&s.Containers[j])
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}
		if r.IntN(5) == 0 { // a container that restarted: its last termination
			cs.RestartCount = int32(1 + r.IntN(20))
			reason, code := "Error", int32(1)
			if r.IntN(2) == 0 {
				reason, code = "OOMKilled", 137
			}
			restarted := started.Add(time.Duration(r.IntN(40*3600)) * time.Second)
			cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason,
				StartedAt: metav1.NewTime(started), FinishedAt: metav1.NewTime(restarted), ContainerID: "containerd://" + randomHex(r, 64)}
			cs.State.Running.StartedAt = metav1.NewTime(restarted.Add(10 * time.Second))
		}
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	return st
}

// imageID is the digest a container runtime reports for image.
func imageID(image string) string {
	sum := sha256.Sum256([]byte(image))
	repo := image
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		repo = image[:i]
	}
	return repo + "@sha256:" + hex.EncodeToString(sum[:])
}

// accessVolume stands for the name of a pod's token volume in the fields
// its workload's pods share.
const accessVolume = "kube-api-access-@@@@@"

// controllerFields returns the fields the ReplicaSet controller set on p (its
// metadata and spec but the node), with accessVolume for the name access.
func controllerFields(p *corev1.Pod, access string) *metav1.FieldsV1 {
	spec := p.Spec.DeepCopy()
	spec.NodeName = ""
	for j := range spec.Volumes {
		if spec.Volumes[j].Name == access {
			spec.Volumes[j].Name = accessVolume
		}
	}
	meta := map[string]any{"generateName": p.GenerateName, "labels": p.Labels, "annotations": p.Annotations,
		"ownerReferences": p.OwnerReferences}
	return fieldsV1(map[string]any{"metadata": meta, "spec": spec})
}

// managedFields returns the entries the API server records for a pod that the
// ReplicaSet controller created (specFields) and the kubelet reported on: the
// fields each set, in the FieldsV1 format.
func managedFields(p *corev1.Pod, specFields string, created time.Time) []metav1.ManagedFieldsEntry {
	at := metav1.NewTime(created)
	statusAt := metav1.NewTime(p.Status.Conditions[2].LastTransitionTime.Time)
	return []metav1.ManagedFieldsEntry{
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
			Time: &at, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(specFields)}},
		{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &statusAt,
			FieldsType: "FieldsV1", FieldsV1: fieldsV1(map[string]any{"status": p.Status}), Subresource: "status"},
	}
}

// fieldsV1 returns the field set of v (its JSON form) in the API server's
// FieldsV1 format: "f:<field>" for fields, "k:<key>" for the elements of
// lists merged by key, "." for a map or keyed element itself.
func fieldsV1(v any) *metav1.FieldsV1 {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		panic(err)
	}
	set, err := json.Marshal(fieldSet(doc, 0))
	if err != nil {
		panic(err)
	}
	return &metav1.FieldsV1{Raw: set}
}

// listKeys are the keys of the lists that the API merges by key.
var listKeys = map[string][]string{
	"containers": {"name"}, "initContainers": {"name"}, "env": {"name"}, "volumes": {"name"},
	"volumeMounts": {"mountPath"}, "ports": {"containerPort", "protocol"}, "conditions": {"type"},
	"podIPs": {"ip"}, "hostIPs": {"ip"}, "ownerReferences": {"uid"},
}

// fieldSet returns the field set of m at depth (0: the object, 1: its
// metadata, spec or status).
func fieldSet(m map[string]any, depth int) map[string]any {
	out := map[string]any{}
	if depth > 1 {
		out["."] = map[string]any{}
	}
	for k, v := range m {
		switch v := v.(type) {
		case map[string]any:
			out["f:"+k] = fieldSet(v, depth+1)
		case []any:
			keys, merged := listKeys[k]
			if !merged {
				out["f:"+k] = map[string]any{}
				continue
			}
			list := map[string]any{}
			for _, e := range v {
				em, _ := e.(map[string]any)
				key := map[string]any{}
				for _, kk := range keys {
					key[kk] = em[kk]
				}
				kj, _ := json.Marshal(key)
				list["k:"+string(kj)] = fieldSet(em, 2)
			}
			out["f:"+k] = list
		default:
			out["f:"+k] = map[string]any{}
		}
	}
	return out
}
