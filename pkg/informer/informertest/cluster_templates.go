package informertest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// podTemplate is a chart's pod template: everything its pods share, before the
// API server's defaults and the per-pod fields.
type podTemplate struct {
	index int
	// simple templates have one container and none of the optional parts.
	simple     bool
	name       string
	team       string
	namespaces []string // the first is its home namespace
	labels     map[string]string
	// annotations of the template (the pods add none of their own).
	annotations map[string]string
	spec        corev1.PodSpec
}

// thirdParty are the templates installed from public charts, the first ones.
var thirdParty = []string{"redis", "postgresql", "rabbitmq", "elasticsearch", "grafana",
	"prometheus-server", "keycloak", "ingress-nginx-controller", "cert-manager", "external-dns"}

var (
	teams = []string{"payments", "checkout", "search", "catalog", "identity", "notifications",
		"analytics", "fulfillment", "pricing", "messaging"}
	roles = []string{"api", "worker", "web", "consumer", "scheduler"}
)

func newPodTemplate(r *rand.Rand, t int) *podTemplate {
	pt := &podTemplate{index: t}
	if t < len(thirdParty) {
		pt.name = thirdParty[t]
		pt.team = "platform"
		pt.namespaces = []string{[]string{"redis", "databases", "messaging-infra", "logging", "monitoring",
			"monitoring", "identity-infra", "ingress-nginx", "cert-manager", "external-dns"}[t]}
		// Redis and PostgreSQL are also installed by teams for themselves.
		if t < 2 {
			pt.namespaces = append(pt.namespaces, teams[1], teams[3], teams[7])
		}
	} else {
		team, role := teams[(t-len(thirdParty))%len(teams)], roles[(t-len(thirdParty))/len(teams)]
		pt.name, pt.team = team+"-"+role, team
		pt.namespaces = []string{team}
		if r.IntN(2) == 0 {
			pt.namespaces = append(pt.namespaces, team+"-staging")
		}
		if r.IntN(4) == 0 {
			pt.namespaces = append(pt.namespaces, team+"-eu")
		}
	}
	pt.labels = map[string]string{
		"app.kubernetes.io/name":       pt.name,
		"app.kubernetes.io/instance":   pt.name,
		"app.kubernetes.io/component":  pick(r, []string{"server", "worker", "frontend", "backend", "controller", "primary"}),
		"app.kubernetes.io/part-of":    pt.team,
		"app.kubernetes.io/managed-by": "Helm",
		"helm.sh/chart":                fmt.Sprintf("%s-%d.%d.%d", pt.name, r.IntN(20), r.IntN(20), r.IntN(10)),
		"app":                          pt.name,
	}
	if r.IntN(3) == 0 {
		pt.labels["team"] = pt.team
		pt.labels["cost-center"] = "cc-" + strconv.Itoa(1000+r.IntN(9000))
	}
	sum := sha256.Sum256([]byte(pt.name + strconv.Itoa(r.Int())))
	pt.annotations = map[string]string{"checksum/config": hex.EncodeToString(sum[:])}
	if r.IntN(2) == 0 {
		pt.annotations["prometheus.io/scrape"] = "true"
		pt.annotations["prometheus.io/port"] = "9090"
		pt.annotations["prometheus.io/path"] = "/metrics"
	}
	if r.IntN(4) == 0 {
		pt.annotations["kubectl.kubernetes.io/restartedAt"] = clusterEpoch.Add(-72 * 3600e9).Format("2006-01-02T15:04:05Z")
	}
	if r.IntN(5) == 0 {
		pt.annotations["cluster-autoscaler.kubernetes.io/safe-to-evict"] = "true"
	}
	pt.simple = r.IntN(5) < 2
	pt.spec = pt.newSpec(r)
	return pt
}

// newSpec draws the template's pod spec: its containers, volumes and
// scheduling, with the API server's defaults.
func (pt *podTemplate) newSpec(r *rand.Rand) corev1.PodSpec {
	s := corev1.PodSpec{
		ServiceAccountName:            pt.name,
		DeprecatedServiceAccount:      pt.name,
		RestartPolicy:                 corev1.RestartPolicyAlways,
		TerminationGracePeriodSeconds: ptr.To(int64(pick(r, []int{30, 30, 60, 120}))),
		DNSPolicy:                     corev1.DNSClusterFirst,
		SchedulerName:                 corev1.DefaultSchedulerName,
		EnableServiceLinks:            ptr.To(r.IntN(2) == 0),
		PreemptionPolicy:              ptr.To(corev1.PreemptLowerPriority),
		Priority:                      ptr.To[int32](0),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			RunAsUser:      ptr.To(int64(1000 + r.IntN(2)*64535)),
			FSGroup:        ptr.To[int64](2000),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
	if r.IntN(3) == 0 {
		s.PriorityClassName = pick(r, []string{"business-critical", "high-priority", "batch-low"})
		s.Priority = ptr.To(int32(pick(r, []int{1000000, 100000, 100})))
	}
	if r.IntN(2) == 0 {
		s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry-credentials"}}
	}
	app := pt.name
	// Volumes of the template; kube-api-access-<suffix> is added per pod.
	s.Volumes = []corev1.Volume{
		{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: app + "-config"}, DefaultMode: ptr.To[int32](420)}}},
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	if !pt.simple && r.IntN(2) == 0 {
		s.Volumes = append(s.Volumes, corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: app + "-tls", DefaultMode: ptr.To[int32](420)}}})
	}
	if r.IntN(5) == 0 {
		s.Volumes = append(s.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: app + "-data"}}})
	}
	if r.IntN(4) == 0 {
		s.Volumes = append(s.Volumes, corev1.Volume{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("256Mi"))}}})
	}

	containers := 1 + weighted(r, 85, 15)
	if pt.simple {
		containers = 1
	}
	for c := range containers {
		name := app
		if c > 0 {
			name = pick(r, []string{"metrics-exporter", "migrator", "reloader", "cron", "grpc-gateway", "admin"})
		}
		s.Containers = append(s.Containers, pt.appContainer(r, name, c == 0, s.Volumes))
	}
	istio := !pt.simple && r.IntN(4) == 0
	if istio {
		s.InitContainers = append(s.InitContainers, istioInit())
		s.Containers = append(s.Containers, istioProxy(app))
		s.Volumes = append(s.Volumes, istioVolumes()...)
		pt.labels["security.istio.io/tlsMode"] = "istio"
		pt.labels["service.istio.io/canonical-name"] = app
		pt.labels["service.istio.io/canonical-revision"] = "latest"
		pt.annotations["sidecar.istio.io/status"] = `{"initContainers":["istio-init"],"containers":["istio-proxy"],` +
			`"volumes":["workload-socket","credential-socket","workload-certs","istio-envoy","istio-data","istio-podinfo",` +
			`"istio-token","istiod-ca-cert"],"imagePullSecrets":null,"revision":"default"}`
		pt.annotations["kubectl.kubernetes.io/default-container"] = app
	}
	for _, side := range sidecars {
		if !pt.simple && !istio && r.IntN(100) < 2*side.percent {
			s.Containers = append(s.Containers, side.container(r, app))
			s.Volumes = append(s.Volumes, side.volumes...)
		}
	}
	if !pt.simple && r.IntN(3) == 0 {
		s.InitContainers = append(s.InitContainers, waitFor(r, app))
	}

	selector := map[string]string{"app.kubernetes.io/name": app, "app.kubernetes.io/instance": app}
	s.Affinity = &corev1.Affinity{}
	if !pt.simple && r.IntN(3) < 2 {
		s.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100,
				PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: selector},
					TopologyKey: "kubernetes.io/hostname"}}}}
	}
	if !pt.simple && r.IntN(2) == 0 {
		s.Affinity.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "node.kubernetes.io/pool", Operator: corev1.NodeSelectorOpIn, Values: []string{pick(r, []string{"general", "memory-optimized", "compute"})}},
				{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64", "arm64"}},
			}}}}}
	}
	if *s.Affinity == (corev1.Affinity{}) {
		s.Affinity = nil
	}
	if !pt.simple && r.IntN(3) == 0 {
		s.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone",
			WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{MatchLabels: selector}}}
	}
	if r.IntN(3) == 0 {
		s.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
	}
	if r.IntN(3) == 0 {
		pool := pick(r, []string{"batch", "memory", "gpu", "spot"})
		s.Tolerations = append(s.Tolerations, corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual,
			Value: pool, Effect: corev1.TaintEffectNoSchedule})
	}
	s.Tolerations = append(s.Tolerations,
		corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
		corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)})
	return s
}

// weighted returns i with probability weights[i] / sum(weights).
func weighted(r *rand.Rand, weights ...int) int {
	total := 0
	for _, w := range weights {
		total += w
	}
	n := r.IntN(total)
	for i, w := range weights {
		if n < w {
			return i
		}
		n -= w
	}
	return len(weights) - 1
}

// appContainer draws one of the template's own containers: main is the
// application's, which serves and is probed.
func (pt *podTemplate) appContainer(r *rand.Rand, name string, main bool, volumes []corev1.Volume) corev1.Container {
	registry := pick(r, []string{"123456789012.dkr.ecr.eu-west-1.amazonaws.com", "ghcr.io/example-corp", "registry.example.com/" + pt.team})
	if pt.index < len(thirdParty) {
		registry = pick(r, []string{"docker.io/bitnami", "quay.io/" + pt.name, "registry.k8s.io"})
	}
	c := corev1.Container{
		Name:                     name,
		Image:                    fmt.Sprintf("%s/%s:%s", registry, name, "{version}"),
		ImagePullPolicy:          pick(r, []corev1.PullPolicy{corev1.PullIfNotPresent, corev1.PullIfNotPresent, corev1.PullAlways}),
		TerminationMessagePath:   corev1.TerminationMessagePathDefault,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
	}
	if r.IntN(2) == 0 {
		c.SecurityContext = &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			RunAsNonRoot:             ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}
	}
	switch r.IntN(3) {
	case 0:
		c.Command = []string{"/app/" + name}
		c.Args = []string{"--config=/etc/" + name + "/config.yaml", "--log-level=" + pick(r, []string{"info", "debug", "warn"}),
			"--listen-address=:8080", "--metrics-address=:9090"}
	case 1:
		c.Command = []string{"java"}
		c.Args = []string{"-XX:+UseContainerSupport", "-XX:MaxRAMPercentage=75.0", "-Djava.security.egd=file:/dev/./urandom",
			"-Dspring.profiles.active=production", "-jar", "/app/" + name + ".jar"}
	default:
		c.Args = []string{"serve", "--port", "8080"}
	}
	memory := pick(r, []string{"128Mi", "256Mi", "512Mi", "1Gi", "2Gi"})
	c.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(pick(r, []string{"50m", "100m", "250m", "500m", "1"})),
			corev1.ResourceMemory: resource.MustParse(memory)},
		Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memory)},
	}
	if r.IntN(2) == 0 {
		c.Resources.Limits[corev1.ResourceCPU] = resource.MustParse(pick(r, []string{"500m", "1", "2"}))
	}
	c.Env = []corev1.EnvVar{
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
		{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}},
	}
	if r.IntN(3) == 0 {
		c.Env = append(c.Env,
			corev1.EnvVar{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}},
			corev1.EnvVar{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.nodeName"}}})
	}
	literals := []corev1.EnvVar{
		{Name: "LOG_FORMAT", Value: "json"},
		{Name: "LOG_LEVEL", Value: pick(r, []string{"info", "debug", "warn"})},
		{Name: "SERVICE_NAME", Value: pt.name},
		{Name: "OTEL_EXPORTER_OTLP_ENDPOINT", Value: "http://otel-collector.observability.svc.cluster.local:4317"},
		{Name: "OTEL_RESOURCE_ATTRIBUTES", Value: "service.namespace=" + pt.team + ",deployment.environment=production"},
		{Name: "JAVA_TOOL_OPTIONS", Value: "-XX:+ExitOnOutOfMemoryError -XX:InitialRAMPercentage=50.0 -Dfile.encoding=UTF-8"},
		{Name: "GOMAXPROCS", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("1")}}},
		{Name: "HTTP_PORT", Value: "8080"},
		{Name: "FEATURE_FLAGS", Value: "new-checkout-flow,async-invoices,shadow-traffic=" + strconv.Itoa(r.IntN(100))},
		{Name: "CACHE_TTL_SECONDS", Value: strconv.Itoa(60 * (1 + r.IntN(30)))},
		{Name: "REDIS_URL", Value: "redis://redis-master." + pt.team + ".svc.cluster.local:6379/" + strconv.Itoa(r.IntN(16))},
		{Name: "KAFKA_BROKERS", Value: "kafka-0.kafka-headless.messaging-infra:9092,kafka-1.kafka-headless.messaging-infra:9092,kafka-2.kafka-headless.messaging-infra:9092"},
		{Name: "DB_HOST", Value: pt.team + "-db.databases.svc.cluster.local"},
		{Name: "DB_NAME", Value: pt.team},
		{Name: "SENTRY_DSN", Value: "https://" + randomHex(r, 32) + "@sentry.example.com/" + strconv.Itoa(r.IntN(400))},
	}
	r.Shuffle(len(literals), func(i, j int) { literals[i], literals[j] = literals[j], literals[i] })
	if pt.simple {
		c.Env = append(c.Env, literals[:1+r.IntN(2)]...)
	} else {
		c.Env = append(c.Env, literals[:2+r.IntN(6)]...)
	}
	for _, key := range []string{"DB_PASSWORD", "API_KEY", "JWT_SIGNING_KEY"}[:1+r.IntN(2)] {
		c.Env = append(c.Env, corev1.EnvVar{Name: key, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: pt.name + "-secrets"}, Key: key}}})
	}
	for _, key := range []string{"region", "upstream-url"}[:r.IntN(3)] {
		c.Env = append(c.Env, corev1.EnvVar{Name: "CONFIG_" + key, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: pt.name + "-env"}, Key: key, Optional: ptr.To(r.IntN(2) == 0)}}})
	}
	if !pt.simple && r.IntN(2) == 0 {
		c.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: pt.name + "-env"}}}}
		if r.IntN(2) == 0 {
			c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{Prefix: "APP_", SecretRef: &corev1.SecretEnvSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: pt.name + "-env-secrets"}}})
		}
	}
	c.VolumeMounts = []corev1.VolumeMount{{Name: "config", MountPath: "/etc/" + name, ReadOnly: true}, {Name: "tmp", MountPath: "/tmp"}}
	for _, v := range volumes[2:] {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: v.Name, MountPath: "/var/lib/" + name + "/" + v.Name})
	}
	if !main {
		return c
	}
	c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}
	if r.IntN(2) == 0 {
		c.Ports = append(c.Ports, corev1.ContainerPort{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP})
	}
	if r.IntN(3) == 0 {
		c.Ports = append(c.Ports, corev1.ContainerPort{Name: "grpc", ContainerPort: 9000, Protocol: corev1.ProtocolTCP})
	}
	probe := func(path string, delay, period int32) *corev1.Probe {
		p := &corev1.Probe{InitialDelaySeconds: delay, TimeoutSeconds: 1 + r.Int32N(5), PeriodSeconds: period,
			SuccessThreshold: 1, FailureThreshold: 3}
		switch r.IntN(4) {
		case 0:
			p.ProbeHandler = corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}
		case 1:
			p.ProbeHandler = corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "curl -fsS localhost:8080" + path}}}
		default:
			p.ProbeHandler = corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP}}
		}
		return p
	}
	c.ReadinessProbe = probe("/readyz", 5, 5)
	if pt.simple {
		return c
	}
	c.LivenessProbe = probe("/healthz", 10+r.Int32N(50), 10)
	if r.IntN(5) == 0 {
		c.StartupProbe = probe("/healthz", 0, 5)
		c.StartupProbe.FailureThreshold = 30
	}
	if r.IntN(3) == 0 {
		c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "sleep 15"}}}}
	}
	return c
}

// sidecar is a container many charts add to their pods, with its volumes.
type sidecar struct {
	percent   int // of the templates that have it
	container func(r *rand.Rand, app string) corev1.Container
	volumes   []corev1.Volume
}

var sidecars = []sidecar{
	{15, func(r *rand.Rand, app string) corev1.Container {
		return corev1.Container{Name: "fluent-bit", Image: "cr.fluentbit.io/fluent/fluent-bit:3.2.4",
			Args:                     []string{"--config=/fluent-bit/etc/fluent-bit.yaml"},
			Env:                      []corev1.EnvVar{{Name: "APP", Value: app}, {Name: "FLUENT_ELASTICSEARCH_HOST", Value: "elasticsearch-master.logging"}},
			Resources:                smallResources("20m", "64Mi"),
			VolumeMounts:             []corev1.VolumeMount{{Name: "fluent-bit-config", MountPath: "/fluent-bit/etc"}, {Name: "tmp", MountPath: "/var/log/app"}},
			TerminationMessagePath:   corev1.TerminationMessagePathDefault,
			TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent}
	}, []corev1.Volume{{Name: "fluent-bit-config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "fluent-bit-sidecar"}, DefaultMode: ptr.To[int32](420)}}}}},
	{10, func(r *rand.Rand, app string) corev1.Container {
		return corev1.Container{Name: "vault-agent", Image: "hashicorp/vault:1.18.3",
			Args:    []string{"echo ${VAULT_CONFIG?} | base64 -d > /home/vault/config.json && vault agent -config=/home/vault/config.json"},
			Command: []string{"/bin/sh", "-ec"},
			Env: []corev1.EnvVar{{Name: "VAULT_LOG_LEVEL", Value: "info"}, {Name: "VAULT_LOG_FORMAT", Value: "standard"},
				{Name: "VAULT_CONFIG", Value: randomString(r, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", 360) + "=="}},
			Resources:                smallResources("50m", "64Mi"),
			VolumeMounts:             []corev1.VolumeMount{{Name: "vault-secrets", MountPath: "/vault/secrets"}},
			TerminationMessagePath:   corev1.TerminationMessagePathDefault,
			TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent,
			SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To[int64](100), RunAsGroup: ptr.To[int64](1000),
				RunAsNonRoot: ptr.To(true), ReadOnlyRootFilesystem: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}
	}, []corev1.Volume{{Name: "vault-secrets", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}}},
	{10, func(r *rand.Rand, app string) corev1.Container {
		return corev1.Container{Name: "cloud-sql-proxy", Image: "gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.3",
			Args:            []string{"--structured-logs", "--port=5432", "--auto-iam-authn", "example-prod:europe-west1:" + app + "-db"},
			Resources:       smallResources("100m", "128Mi"),
			SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true)}, TerminationMessagePath: corev1.TerminationMessagePathDefault,
			TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent}
	}, nil},
	{10, func(r *rand.Rand, app string) corev1.Container {
		return corev1.Container{Name: "otel-agent", Image: "otel/opentelemetry-collector-contrib:0.116.1",
			Args: []string{"--config=/conf/otel-agent-config.yaml"},
			Env: []corev1.EnvVar{{Name: "GOMEMLIMIT", Value: "100MiB"},
				{Name: "K8S_NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.nodeName"}}}},
			Ports:                    []corev1.ContainerPort{{Name: "otlp", ContainerPort: 4317, Protocol: corev1.ProtocolTCP}},
			Resources:                smallResources("50m", "128Mi"),
			VolumeMounts:             []corev1.VolumeMount{{Name: "otel-agent-config", MountPath: "/conf"}},
			TerminationMessagePath:   corev1.TerminationMessagePathDefault,
			TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent}
	}, []corev1.Volume{{Name: "otel-agent-config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "otel-agent"}, DefaultMode: ptr.To[int32](420)}}}}},
}

func smallResources(cpu, memory string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memory)},
	}
}

func istioInit() corev1.Container {
	return corev1.Container{Name: "istio-init", Image: "docker.io/istio/proxyv2:1.24.2",
		Args: []string{"istio-iptables", "-p", "15001", "-z", "15006", "-u", "1337", "-m", "REDIRECT", "-i", "*", "-x", "",
			"-b", "*", "-d", "15090,15021,15020", "--log_output_level=default:info"},
		Resources: smallResources("100m", "128Mi"),
		SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), Privileged: ptr.To(false),
			ReadOnlyRootFilesystem: ptr.To(false), RunAsGroup: ptr.To[int64](0), RunAsNonRoot: ptr.To(false), RunAsUser: ptr.To[int64](0),
			Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN", "NET_RAW"}, Drop: []corev1.Capability{"ALL"}}},
		TerminationMessagePath: corev1.TerminationMessagePathDefault, TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		ImagePullPolicy: corev1.PullIfNotPresent}
}

func istioProxy(app string) corev1.Container {
	field := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}}
	}
	return corev1.Container{Name: "istio-proxy", Image: "docker.io/istio/proxyv2:1.24.2",
		Args: []string{"proxy", "sidecar", "--domain", "$(POD_NAMESPACE).svc.cluster.local", "--proxyLogLevel=warning",
			"--proxyComponentLogLevel=misc:error", "--log_output_level=default:info"},
		Env: []corev1.EnvVar{{Name: "PILOT_CERT_PROVIDER", Value: "istiod"}, {Name: "CA_ADDR", Value: "istiod.istio-system.svc:15012"},
			field("POD_NAME", "metadata.name"), field("POD_NAMESPACE", "metadata.namespace"), field("INSTANCE_IP", "status.podIP"),
			field("SERVICE_ACCOUNT", "spec.serviceAccountName"), field("HOST_IP", "status.hostIP"),
			{Name: "ISTIO_CPU_LIMIT", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("0")}}},
			{Name: "PROXY_CONFIG", Value: "{}\n"},
			{Name: "ISTIO_META_POD_PORTS", Value: "[\n    {\"name\":\"http\",\"containerPort\":8080,\"protocol\":\"TCP\"}\n]"},
			{Name: "ISTIO_META_APP_CONTAINERS", Value: app},
			{Name: "GOMEMLIMIT", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("0")}}},
			{Name: "GOMAXPROCS", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("0")}}},
			{Name: "ISTIO_META_CLUSTER_ID", Value: "Kubernetes"}, field("ISTIO_META_NODE_NAME", "spec.nodeName"),
			{Name: "ISTIO_META_INTERCEPTION_MODE", Value: "REDIRECT"}, {Name: "ISTIO_META_WORKLOAD_NAME", Value: app},
			{Name: "ISTIO_META_OWNER", Value: "kubernetes://apis/apps/v1/namespaces/$(POD_NAMESPACE)/deployments/" + app},
			{Name: "ISTIO_META_MESH_ID", Value: "cluster.local"}, {Name: "TRUST_DOMAIN", Value: "cluster.local"}},
		Ports: []corev1.ContainerPort{{Name: "http-envoy-prom", ContainerPort: 15090, Protocol: corev1.ProtocolTCP}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz/ready",
			Port: intstr.FromInt32(15021), Scheme: corev1.URISchemeHTTP}}, TimeoutSeconds: 3, PeriodSeconds: 15, SuccessThreshold: 1, FailureThreshold: 4},
		StartupProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz/ready",
			Port: intstr.FromInt32(15021), Scheme: corev1.URISchemeHTTP}}, InitialDelaySeconds: 1, TimeoutSeconds: 3, PeriodSeconds: 1,
			SuccessThreshold: 1, FailureThreshold: 600},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
		VolumeMounts: []corev1.VolumeMount{{Name: "workload-socket", MountPath: "/var/run/secrets/workload-spiffe-uds"},
			{Name: "credential-socket", MountPath: "/var/run/secrets/credential-uds"},
			{Name: "workload-certs", MountPath: "/var/run/secrets/workload-spiffe-credentials"},
			{Name: "istiod-ca-cert", MountPath: "/var/run/secrets/istio"}, {Name: "istio-data", MountPath: "/var/lib/istio/data"},
			{Name: "istio-envoy", MountPath: "/etc/istio/proxy"}, {Name: "istio-token", MountPath: "/var/run/secrets/tokens"},
			{Name: "istio-podinfo", MountPath: "/etc/istio/pod"}},
		SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), Privileged: ptr.To(false),
			ReadOnlyRootFilesystem: ptr.To(true), RunAsGroup: ptr.To[int64](1337), RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1337),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
		TerminationMessagePath: corev1.TerminationMessagePathDefault, TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		ImagePullPolicy: corev1.PullIfNotPresent}
}

func istioVolumes() []corev1.Volume {
	empty := func(name string, medium corev1.StorageMedium) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: medium}}}
	}
	return []corev1.Volume{empty("workload-socket", ""), empty("credential-socket", ""), empty("workload-certs", ""),
		empty("istio-envoy", corev1.StorageMediumMemory), empty("istio-data", ""),
		{Name: "istio-podinfo", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
			Items: []corev1.DownwardAPIVolumeFile{
				{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels"}},
				{Path: "annotations", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.annotations"}}},
			DefaultMode: ptr.To[int32](420)}}},
		{Name: "istio-token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
				Audience: "istio-ca", ExpirationSeconds: ptr.To[int64](43200), Path: "istio-token"}}},
			DefaultMode: ptr.To[int32](420)}}},
		{Name: "istiod-ca-cert", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "istio-ca-root-cert"}, DefaultMode: ptr.To[int32](420)}}},
	}
}

func waitFor(r *rand.Rand, app string) corev1.Container {
	dep := pick(r, []string{"postgresql.databases", "redis-master.redis", "rabbitmq.messaging-infra", "keycloak.identity-infra"})
	return corev1.Container{Name: "wait-for-deps", Image: "docker.io/library/busybox:1.37",
		Command:                []string{"sh", "-c", "until nc -z " + dep + " 5432; do echo waiting for " + dep + "; sleep 2; done"},
		Resources:              smallResources("10m", "16Mi"),
		TerminationMessagePath: corev1.TerminationMessagePathDefault, TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		ImagePullPolicy: corev1.PullIfNotPresent}
}
