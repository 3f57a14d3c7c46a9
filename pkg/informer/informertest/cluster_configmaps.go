package informertest

import (
	"encoding/base64"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ConfigMaps returns the cluster's first n ConfigMaps as the API server returns
// them, of varied kinds and sizes (from a hundred bytes to some 100 KB as JSON):
//
//   - 45% a chart's configuration installed in a namespace (config.yaml,
//     application.properties, nginx.conf, Grafana dashboards, alert rules):
//     installs of one chart differ in a few values;
//   - 20% the CA bundles every namespace gets (kube-root-ca.crt,
//     istio-ca-root-cert), the same in every namespace;
//   - 15% environment variables, a few to forty keys;
//   - 10% random data that does not compress (binaryData, or PEM blocks of
//     random bytes);
//   - 10% a leader-election record, a small annotation.
//
// Every ConfigMap has a name of its own within its namespace. ConfigMaps(n)[i]
// is the same object for every n > i.
func (c *Cluster) ConfigMaps(n int) []*corev1.ConfigMap {
	cms := make([]*corev1.ConfigMap, n)
	for i := range cms {
		cms[i] = c.configMap(i)
	}
	return cms
}

// configChart is a chart's ConfigMap: the files it holds, with {release},
// {namespace} and {value} for what an install sets.
type configChart struct {
	name  string
	files map[string]string
}

var chartNames = []string{"grafana-dashboards", "prometheus-rules", "nginx", "app-config", "spring-app",
	"fluent-bit", "otel-collector", "envoy", "keycloak-realm", "kafka-connect", "airflow", "superset",
	"loki", "tempo", "argo-workflows", "vector", "redis-config", "postgres-init", "jaeger", "logback"}

func newConfigChart(r *rand.Rand, ch int) configChart {
	chart := configChart{name: chartNames[ch], files: map[string]string{}}
	makers := []struct {
		file string
		make func(*rand.Rand) string
	}{
		{"config.yaml", configYAML}, {"application.properties", properties}, {"nginx.conf", nginxConf},
		{"dashboard.json", dashboard}, {"alerts.yaml", alertRules}, {"logback.xml", logbackXML},
	}
	first := ch % len(makers)
	chart.files[makers[first].file] = makers[first].make(r)
	for range r.IntN(3) {
		m := makers[r.IntN(len(makers))]
		chart.files[m.file] = m.make(r)
	}
	return chart
}

// configMap returns ConfigMap i.
func (c *Cluster) configMap(i int) *corev1.ConfigMap {
	r := c.rng(streamConfigMap, uint64(i))
	created := clusterEpoch.Add(time.Duration(r.IntN(96*3600)) * time.Second)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		UID:               types.UID(randomUUID(r)),
		ResourceVersion:   strconv.Itoa(47_000_000 + 41*i + r.IntN(41)),
		CreationTimestamp: metav1.NewTime(created),
	}}
	suffix := "-" + strconv.FormatInt(int64(i), 36)
	manager := "helm"
	switch weighted(r, 45, 12, 8, 15, 10, 10) {
	case 0:
		chart := c.charts[r.IntN(len(c.charts))]
		t := c.templates[r.IntN(len(c.templates))]
		release := t.name
		cm.Namespace = pick(r, t.namespaces)
		cm.Name = release + "-" + chart.name + suffix
		cm.Labels = map[string]string{"app.kubernetes.io/name": chart.name, "app.kubernetes.io/instance": release,
			"app.kubernetes.io/managed-by": "Helm", "helm.sh/chart": chart.name + "-" + strconv.Itoa(1+r.IntN(3)) + ".4.0"}
		cm.Annotations = map[string]string{"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": cm.Namespace}
		cm.Data = map[string]string{}
		for _, file := range slices.Sorted(maps.Keys(chart.files)) { // in order: the values are drawn in turn
			content := chart.files[file]
			content = strings.ReplaceAll(content, "{release}", release)
			content = strings.ReplaceAll(content, "{namespace}", cm.Namespace)
			for strings.Contains(content, "{value}") {
				content = strings.Replace(content, "{value}", strconv.Itoa(r.IntN(1000)), 1)
			}
			cm.Data[file] = content
		}
	case 1:
		cm.Namespace, cm.Name, manager = "tenant-"+strconv.FormatInt(int64(i), 36), "kube-root-ca.crt", "kube-controller-manager"
		cm.Annotations = map[string]string{"kubernetes.io/description": "Contains a CA bundle that can be used to verify the " +
			"kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. " +
			"No other usage is guaranteed across distributions of Kubernetes clusters."}
		cm.Data = map[string]string{"ca.crt": c.pem(streamConfigMap<<32, 1)}
	case 2:
		cm.Namespace, cm.Name, manager = "tenant-"+strconv.FormatInt(int64(i), 36), "istio-ca-root-cert", "pilot-discovery"
		cm.Labels = map[string]string{"istio.io/config": "true"}
		cm.Data = map[string]string{"root-cert.pem": c.pem(streamConfigMap<<32|1, 1)}
	case 3:
		t := c.templates[r.IntN(len(c.templates))]
		cm.Namespace, cm.Name = pick(r, t.namespaces), t.name+"-env"+suffix
		cm.Labels = map[string]string{"app.kubernetes.io/name": t.name, "app.kubernetes.io/managed-by": "Helm"}
		cm.Data = map[string]string{}
		for range 3 + r.IntN(38) {
			cm.Data[strings.ToUpper(pick(r, envWords)+"_"+pick(r, envWords)+"_"+pick(r, envWords))] = envValue(r)
		}
	case 4:
		t := c.templates[r.IntN(len(c.templates))]
		cm.Namespace, cm.Name, manager = pick(r, t.namespaces), t.name+"-blobs"+suffix, "kubectl-create"
		blob := make([]byte, 256+r.IntN(24<<10))
		for j := range blob {
			blob[j] = byte(r.Uint32())
		}
		if r.IntN(2) == 0 {
			cm.BinaryData = map[string][]byte{"seed.bin": blob}
		} else {
			cm.Data = map[string]string{"bundle.pem": pemBlocks(blob)}
		}
	default:
		t := c.templates[r.IntN(len(c.templates))]
		cm.Namespace, cm.Name, manager = pick(r, t.namespaces), t.name+"-leader"+suffix, t.name
		renew := created.Add(time.Duration(r.IntN(3600)) * time.Second).Format(time.RFC3339Nano)
		cm.Annotations = map[string]string{"control-plane.alpha.kubernetes.io/leader": fmt.Sprintf(
			`{"holderIdentity":"%s-%s_%s","leaseDurationSeconds":15,"acquireTime":"%s","renewTime":"%s","leaderTransitions":%d}`,
			t.name, randomString(r, hashAlphabet, 10), randomUUID(r), created.Format(time.RFC3339), renew, r.IntN(40))}
	}
	at := metav1.NewTime(created)
	fields := map[string]any{}
	if cm.Data != nil {
		fields["data"] = cm.Data
	}
	if cm.BinaryData != nil {
		fields["binaryData"] = cm.BinaryData
	}
	if cm.Labels != nil || cm.Annotations != nil {
		fields["metadata"] = map[string]any{"labels": cm.Labels, "annotations": cm.Annotations}
	}
	cm.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate,
		APIVersion: "v1", Time: &at, FieldsType: "FieldsV1", FieldsV1: fieldsV1(fields)}}
	return cm
}

// pem returns a certificate-sized PEM block of the random stream (s, i): the
// same for every call.
func (c *Cluster) pem(s, i uint64) string {
	r := c.rng(s, i)
	der := make([]byte, 880)
	for j := range der {
		der[j] = byte(r.Uint32())
	}
	return strings.ReplaceAll(pemBlocks(der), "BLOCK", "CERTIFICATE")
}

// pemBlocks returns data as one PEM block, base64 in lines of 64.
func pemBlocks(data []byte) string {
	b64 := base64.StdEncoding.EncodeToString(data)
	var sb strings.Builder
	sb.WriteString("-----BEGIN BLOCK-----\n")
	for len(b64) > 64 {
		sb.WriteString(b64[:64] + "\n")
		b64 = b64[64:]
	}
	sb.WriteString(b64 + "\n-----END BLOCK-----\n")
	return sb.String()
}

var envWords = []string{"max", "min", "timeout", "retry", "pool", "size", "cache", "db", "http", "grpc", "queue",
	"batch", "worker", "threads", "region", "bucket", "endpoint", "feature", "enable", "log", "level", "ttl", "limit"}

func envValue(r *rand.Rand) string {
	switch r.IntN(5) {
	case 0:
		return strconv.Itoa(r.IntN(10000))
	case 1:
		return pick(r, []string{"true", "false"})
	case 2:
		return "https://" + pick(r, envWords) + "." + pick(r, envWords) + ".svc.cluster.local:" + strconv.Itoa(1024+r.IntN(9000)) + "/" + pick(r, envWords)
	case 3:
		return pick(r, []string{"eu-west-1", "us-east-1", "ap-southeast-2"})
	default:
		return strconv.Itoa(r.IntN(60)) + pick(r, []string{"s", "m", "ms"})
	}
}

func configYAML(r *rand.Rand) string {
	var b strings.Builder
	b.WriteString("server:\n  port: 8080\n  shutdownTimeout: 30s\n  readTimeout: {value}s\n  writeTimeout: 15s\n")
	b.WriteString("database:\n  host: {release}-db.{namespace}.svc.cluster.local\n  port: 5432\n  maxOpenConns: {value}\n  maxIdleConns: 10\n  sslMode: require\n")
	b.WriteString("features:\n")
	for range 5 + r.IntN(30) {
		fmt.Fprintf(&b, "  %s-%s: %v\n", pick(r, envWords), pick(r, envWords), r.IntN(2) == 0)
	}
	b.WriteString("upstreams:\n")
	for range 2 + r.IntN(12) {
		fmt.Fprintf(&b, "  - name: %s\n    url: http://%s.%s.svc.cluster.local:8080\n    timeout: {value}ms\n    retries: 3\n",
			pick(r, envWords), pick(r, teams)+"-"+pick(r, roles), pick(r, teams))
	}
	b.WriteString("logging:\n  level: info\n  format: json\n  sampling:\n    initial: 100\n    thereafter: 100\n")
	return b.String()
}

func properties(r *rand.Rand) string {
	var b strings.Builder
	b.WriteString("spring.application.name={release}\nserver.port=8080\nmanagement.endpoints.web.exposure.include=health,info,prometheus\n")
	b.WriteString("spring.datasource.url=jdbc:postgresql://{release}-db.{namespace}:5432/{release}\nspring.datasource.hikari.maximum-pool-size={value}\n")
	for range 20 + r.IntN(80) {
		fmt.Fprintf(&b, "%s.%s.%s=%s\n", pick(r, []string{"spring", "app", "kafka", "resilience4j", "logging"}),
			pick(r, envWords), pick(r, envWords), envValue(r))
	}
	return b.String()
}

func nginxConf(r *rand.Rand) string {
	var b strings.Builder
	b.WriteString("worker_processes auto;\nevents { worker_connections 4096; }\nhttp {\n  include mime.types;\n  sendfile on;\n" +
		"  keepalive_timeout 65;\n  log_format json escape=json '{\"time\":\"$time_iso8601\",\"status\":$status,\"uri\":\"$request_uri\"," +
		"\"duration\":$request_time,\"upstream\":\"$upstream_addr\"}';\n  access_log /dev/stdout json;\n")
	for range 1 + r.IntN(8) {
		name := pick(r, teams) + "-" + pick(r, roles)
		fmt.Fprintf(&b, "  upstream %s { server %s.{namespace}.svc.cluster.local:8080 max_fails=3 fail_timeout=10s; keepalive {value}; }\n", name, name)
		fmt.Fprintf(&b, "  server {\n    listen 8080;\n    server_name %s.example.com;\n    location / {\n      proxy_pass http://%s;\n"+
			"      proxy_set_header Host $host;\n      proxy_set_header X-Request-Id $request_id;\n      proxy_read_timeout {value}s;\n    }\n  }\n", name, name)
	}
	b.WriteString("}\n")
	return b.String()
}

func dashboard(r *rand.Rand) string {
	var b strings.Builder
	b.WriteString(`{"annotations":{"list":[{"builtIn":1,"datasource":{"type":"grafana","uid":"-- Grafana --"},"enable":true,"hide":true,"name":"Annotations & Alerts"}]},` +
		`"editable":true,"graphTooltip":1,"panels":[`)
	for p := range 8 + r.IntN(70) {
		if p > 0 {
			b.WriteString(",")
		}
		metric := pick(r, envWords) + "_" + pick(r, envWords) + "_total"
		fmt.Fprintf(&b, `{"datasource":{"type":"prometheus","uid":"prometheus"},"fieldConfig":{"defaults":{"color":{"mode":"palette-classic"},`+
			`"custom":{"drawStyle":"line","fillOpacity":10,"lineWidth":1,"showPoints":"never"},"unit":"%s"},"overrides":[]},`+
			`"gridPos":{"h":8,"w":12,"x":%d,"y":%d},"id":%d,"options":{"legend":{"displayMode":"list","placement":"bottom"},"tooltip":{"mode":"multi"}},`+
			`"targets":[{"expr":"sum(rate(%s{namespace=\"{namespace}\",app=\"{release}\"}[5m])) by (%s)","legendFormat":"{{%s}}","refId":"A"}],`+
			`"title":"%s %s","type":"timeseries"}`,
			pick(r, []string{"reqps", "s", "bytes", "percent", "short"}), 12*(p%2), 8*(p/2), p+1, metric,
			pick(r, []string{"pod", "route", "code", "method"}), pick(r, []string{"pod", "route", "code"}), pick(r, envWords), pick(r, envWords))
	}
	fmt.Fprintf(&b, `],"refresh":"30s","schemaVersion":39,"tags":["{release}","generated"],"time":{"from":"now-6h","to":"now"},"title":"{release} %s","uid":"%s","version":{value}}`,
		pick(r, envWords), randomString(r, hashAlphabet, 9))
	return b.String()
}

func alertRules(r *rand.Rand) string {
	var b strings.Builder
	b.WriteString("groups:\n- name: {release}.rules\n  rules:\n")
	for range 3 + r.IntN(25) {
		metric := pick(r, envWords) + "_" + pick(r, envWords)
		fmt.Fprintf(&b, "  - alert: %s%sHigh\n    expr: sum(rate(%s_total{namespace=\"{namespace}\"}[5m])) > {value}\n    for: %dm\n"+
			"    labels:\n      severity: %s\n      team: %s\n    annotations:\n      summary: %s is high on {{ $labels.pod }}\n"+
			"      runbook_url: https://runbooks.example.com/%s\n",
			strings.ToUpper(metric[:1]), metric[1:], metric, 1+r.IntN(30), pick(r, []string{"warning", "critical", "info"}),
			pick(r, teams), metric, metric)
	}
	return b.String()
}

func logbackXML(r *rand.Rand) string {
	var b strings.Builder
	b.WriteString("<configuration>\n  <appender name=\"JSON\" class=\"ch.qos.logback.core.ConsoleAppender\">\n" +
		"    <encoder class=\"net.logstash.logback.encoder.LogstashEncoder\"/>\n  </appender>\n")
	for range 3 + r.IntN(20) {
		fmt.Fprintf(&b, "  <logger name=\"com.example.%s.%s\" level=\"%s\"/>\n", pick(r, envWords), pick(r, envWords),
			pick(r, []string{"INFO", "DEBUG", "WARN"}))
	}
	b.WriteString("  <root level=\"INFO\"><appender-ref ref=\"JSON\"/></root>\n</configuration>\n")
	return b.String()
}
