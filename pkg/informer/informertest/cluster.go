package informertest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Cluster is a seeded population of Pods and ConfigMaps shaped like a
// production cluster's, for measuring what storage costs on objects that are
// not all alike (the bench's pods come from one small template). It holds
// ClusterTemplates pod templates (charts: one to three application containers,
// sidecars, init containers, probes, volumes, env from ConfigMaps and Secrets,
// resource limits, affinity, tolerations), each installed as Deployments in one
// or more namespaces; a Deployment runs a few to a few dozen replicas, owned by
// its ReplicaSet. Pods are 5–10 KB as JSON, as the API server returns them:
// managedFields of the controller manager and the kubelet, a running status
// with several container statuses and conditions, and per pod a name with the
// ReplicaSet's hash and a random suffix, a uid, IPs, a node, timestamps,
// container ids and restart counts. See ConfigMaps for the ConfigMaps.
//
// Everything is a function of the seed: Pods(n)[i] is the same object for every
// n > i and every call, and so is ConfigMaps(n)[i].
type Cluster struct {
	seed      uint64
	templates []*podTemplate
	nodes     []clusterNode
	charts    []configChart
}

// ClusterTemplates is the number of distinct pod templates of a Cluster.
const ClusterTemplates = 60

// The random streams of a Cluster, one per purpose, so that adding a draw to
// one changes no other.
const (
	streamTemplate uint64 = iota + 1
	streamWorkload
	streamPod
	streamNode
	streamChart
	streamConfigMap
)

// clusterEpoch is when the cluster's objects were created (plus a few hours).
var clusterEpoch = time.Date(2026, 6, 30, 8, 0, 0, 0, time.UTC)

// NewCluster returns the cluster of seed: ClusterTemplates pod templates, 40
// nodes and the charts of its ConfigMaps.
func NewCluster(seed uint64) *Cluster {
	c := &Cluster{seed: seed}
	for t := range ClusterTemplates {
		c.templates = append(c.templates, newPodTemplate(c.rng(streamTemplate, uint64(t)), t))
	}
	for n := range 40 {
		c.nodes = append(c.nodes, newClusterNode(c.rng(streamNode, uint64(n)), n))
	}
	for ch := range len(chartNames) {
		c.charts = append(c.charts, newConfigChart(c.rng(streamChart, uint64(ch)), ch))
	}
	return c
}

// rng returns the random stream of purpose stream and index i.
func (c *Cluster) rng(stream, i uint64) *rand.Rand {
	return rand.New(rand.NewPCG(c.seed, stream<<48|i))
}

// workload is a Deployment: one template installed in one namespace.
type workload struct {
	template  *podTemplate
	namespace string
	name      string // the Deployment's name
	hash      string // its ReplicaSet's pod-template-hash
	rsUID     string // its ReplicaSet's uid
	replicas  int
	created   time.Time
	// version is the image tag of the application containers: installs of
	// one chart run different releases.
	version string
}

// workload returns Deployment w of the cluster. The first ClusterTemplates
// Deployments install every template once, in its home namespace; later ones
// install a random template in one of the namespaces of its team.
func (c *Cluster) workload(w int) workload {
	r := c.rng(streamWorkload, uint64(w))
	t := c.templates[w%len(c.templates)]
	ns := t.namespaces[0]
	if w >= len(c.templates) {
		t = c.templates[r.IntN(len(c.templates))]
		ns = t.namespaces[r.IntN(len(t.namespaces))]
	}
	name := t.name
	if w >= len(c.templates) && r.IntN(3) == 0 {
		name += "-" + pick(r, []string{"canary", "v2", "blue", "green", "eu", "us", "batch", "internal"})
	}
	// Log-uniform on [1, 40): most Deployments run a few replicas, some many.
	replicas := int(math.Exp(r.Float64() * math.Log(40)))
	return workload{
		template:  t,
		namespace: ns,
		name:      name,
		hash:      randomString(r, hashAlphabet, 10),
		rsUID:     randomUUID(r),
		replicas:  replicas,
		created:   clusterEpoch.Add(time.Duration(r.IntN(72*3600)) * time.Second),
		version:   fmt.Sprintf("%d.%d.%d", 1+r.IntN(4), r.IntN(30), r.IntN(12)),
	}
}

// clusterNode is a node of the cluster: its name, address and pod CIDR.
type clusterNode struct {
	name   string
	ip     string
	podNet int // the third octet of its pods' 10.x.y.z addresses
	zone   string
}

func newClusterNode(r *rand.Rand, n int) clusterNode {
	ip := fmt.Sprintf("10.0.%d.%d", 16+r.IntN(48), 2+r.IntN(250))
	return clusterNode{
		name:   "ip-" + replaceDots(ip) + ".eu-west-1.compute.internal",
		ip:     ip,
		podNet: n,
		zone:   "eu-west-1" + string(rune('a'+n%3)),
	}
}

func replaceDots(s string) string {
	b := []byte(s)
	for i := range b {
		if b[i] == '.' {
			b[i] = '-'
		}
	}
	return string(b)
}

// hashAlphabet is the alphabet of Kubernetes' generated names and hashes
// (k8s.io/apimachinery/pkg/util/rand: no vowels, no confusable digits).
const hashAlphabet = "bcdfghjklmnpqrstvwxz2456789"

func randomString(r *rand.Rand, alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

func randomHex(r *rand.Rand, n int) string {
	return randomString(r, "0123456789abcdef", n)
}

func randomUUID(r *rand.Rand) string {
	h := randomHex(r, 32)
	return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-" + h[16:20] + "-" + h[20:]
}

func pick[T any](r *rand.Rand, from []T) T { return from[r.IntN(len(from))] }
