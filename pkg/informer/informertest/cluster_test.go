package informertest

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// jsonSize returns the size of obj's JSON encoding.
func jsonSize(t *testing.T, obj any) int {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return len(data)
}

// A Cluster is a function of its seed: the same seed gives equal objects, a
// longer list starts with the shorter one, another seed gives other objects.
func TestClusterIsDeterministicForASeed(t *testing.T) {
	a, b := NewCluster(7), NewCluster(7)
	pods := a.Pods(400)
	if !reflect.DeepEqual(pods, b.Pods(400)) {
		t.Fatal("two clusters of seed 7 gave different pods")
	}
	if !reflect.DeepEqual(pods[:150], b.Pods(150)) {
		t.Fatal("Pods(150) is not the start of Pods(400)")
	}
	cms := a.ConfigMaps(300)
	if !reflect.DeepEqual(cms, b.ConfigMaps(300)) || !reflect.DeepEqual(cms[:20], a.ConfigMaps(20)) {
		t.Fatal("ConfigMaps differ between calls for seed 7")
	}
	if other := NewCluster(8).Pods(1)[0]; other.Name == pods[0].Name || other.UID == pods[0].UID {
		t.Fatalf("seeds 7 and 8 gave the same first pod %s/%s", other.Name, other.UID)
	}
}

// The pods come from at least 50 distinct templates: their specs differ in
// more than the names (compared with the template's name, the node, the
// token volume and the image tags taken out).
func TestClusterPodsComeFromAtLeast50Templates(t *testing.T) {
	pods := NewCluster(1).Pods(2000)
	shapes := map[string]bool{}
	for _, p := range pods {
		spec := p.Spec.DeepCopy()
		spec.NodeName = ""
		spec.Volumes = slices.DeleteFunc(spec.Volumes, func(v corev1.Volume) bool { return strings.HasPrefix(v.Name, "kube-api-access-") })
		for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
			for i := range cs {
				cs[i].VolumeMounts = cs[i].VolumeMounts[:len(cs[i].VolumeMounts)-1]
				cs[i].Image, _, _ = strings.Cut(cs[i].Image, ":")
			}
		}
		data, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		shapes[strings.ReplaceAll(string(data), p.Labels["app.kubernetes.io/name"], "APP")] = true
	}
	if len(shapes) < 50 || len(shapes) > ClusterTemplates {
		t.Fatalf("%d distinct pod templates in 2000 pods, want 50 to %d", len(shapes), ClusterTemplates)
	}
}

// Pods are 5–10 KB as JSON without managedFields (the median; the tenth
// percentile at least 4 KB), with the server's managedFields, a running
// status of several containers and conditions, a ReplicaSet owner, and
// per-pod fields of their own.
func TestClusterPodsAreServerShapedAndSized(t *testing.T) {
	pods := NewCluster(1).Pods(2000)
	var sizes []int
	names, uids, ips := map[string]bool{}, map[string]bool{}, map[string]bool{}
	statuses := 0
	for _, p := range pods {
		stripped := p.DeepCopy()
		stripped.ManagedFields = nil
		sizes = append(sizes, jsonSize(t, stripped))
		if len(p.ManagedFields) != 2 || p.ManagedFields[1].Subresource != "status" {
			t.Fatalf("%s: managedFields %v", p.Name, p.ManagedFields)
		}
		if o := p.OwnerReferences; len(o) != 1 || o[0].Kind != "ReplicaSet" || o[0].Name+"-" != p.GenerateName {
			t.Fatalf("%s: owner %v", p.Name, o)
		}
		if p.Status.Phase != corev1.PodRunning || len(p.Status.Conditions) != 5 || p.Status.PodIP == "" ||
			len(p.Status.ContainerStatuses) != len(p.Spec.Containers) || p.Spec.NodeName == "" {
			t.Fatalf("%s: status %v", p.Name, p.Status)
		}
		statuses += len(p.Status.ContainerStatuses) + len(p.Status.InitContainerStatuses)
		names[p.Namespace+"/"+p.Name], uids[string(p.UID)], ips[p.Status.PodIP] = true, true, true
	}
	slices.Sort(sizes)
	if p10, p50 := sizes[len(sizes)/10], sizes[len(sizes)/2]; p10 < 4<<10 || p50 < 5<<10 || p50 > 10<<10 {
		t.Fatalf("JSON without managedFields: tenth percentile %d B, median %d B; want ≥ 4 KiB and 5–10 KiB", p10, p50)
	}
	if len(names) != len(pods) || len(uids) != len(pods) || len(ips) < len(pods)*99/100 {
		t.Fatalf("%d pods: %d names, %d uids, %d pod IPs", len(pods), len(names), len(uids), len(ips))
	}
	if statuses < 3*len(pods)/2 {
		t.Fatalf("%d container statuses in %d pods", statuses, len(pods))
	}
}

// ConfigMaps range from a few hundred bytes to tens of KB; some hold random
// data, and the CA bundles are the same in every namespace.
func TestClusterConfigMapsVaryInSizeAndCompressibility(t *testing.T) {
	cms := NewCluster(1).ConfigMaps(1000)
	var sizes []int
	keys := map[string]bool{}
	random, bundles := 0, map[string]bool{}
	for _, cm := range cms {
		sizes = append(sizes, jsonSize(t, cm))
		keys[cm.Namespace+"/"+cm.Name] = true
		if cm.BinaryData != nil || cm.Data["bundle.pem"] != "" {
			random++
		}
		if cm.Name == "kube-root-ca.crt" {
			bundles[cm.Data["ca.crt"]] = true
		}
	}
	slices.Sort(sizes)
	if sizes[0] > 1<<10 || sizes[len(sizes)-1] < 20<<10 {
		t.Fatalf("ConfigMaps from %d B to %d B as JSON, want under 1 KiB to over 20 KiB", sizes[0], sizes[len(sizes)-1])
	}
	if len(keys) != len(cms) {
		t.Fatalf("%d ConfigMaps, %d distinct keys", len(cms), len(keys))
	}
	if random < 50 || random > 150 {
		t.Fatalf("%d of %d ConfigMaps hold random data, want about 10%%", random, len(cms))
	}
	if len(bundles) != 1 {
		t.Fatalf("%d distinct kube-root-ca.crt bundles, want 1", len(bundles))
	}
}
