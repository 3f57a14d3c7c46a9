package sharding

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const exposition = `# HELP deltacache_informer_objects Objects held.
# TYPE deltacache_informer_objects gauge
deltacache_informer_objects{group="",kind="Pod",shape="typed",version="v1"} 9871
deltacache_informer_objects{group="",kind="Pod",shape="metadata",version="v1"} 3
deltacache_informer_objects{group="demo.deltacache.io",kind="App",shape="typed",version="v1alpha1"} 97
# HELP deltacache_shard_slots Slots.
# TYPE deltacache_shard_slots gauge
deltacache_shard_slots{identity="replica-a",ring="deltacache-demo",state="serving"} 334
deltacache_shard_slots{identity="replica-a",ring="deltacache-demo",state="claimed"} 340
# HELP deltacache_apiserver_received_bytes_total Bytes.
# TYPE deltacache_apiserver_received_bytes_total counter
deltacache_apiserver_received_bytes_total{kind="Pod"} 1.5e+07
deltacache_apiserver_received_bytes_total{kind="App"} 250000
`

func TestMetricFamiliesSumMatchesLabels(t *testing.T) {
	m, err := parseMetrics(strings.NewReader(exposition))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
		found  bool
	}{
		{"deltacache_informer_objects", map[string]string{"kind": "Pod"}, 9874, true},
		{"deltacache_informer_objects", map[string]string{"kind": "Pod", "shape": "typed"}, 9871, true},
		{"deltacache_informer_objects", map[string]string{"kind": "ConfigMap"}, 0, false},
		{"deltacache_shard_slots", map[string]string{"state": "serving"}, 334, true},
		{"deltacache_apiserver_received_bytes_total", nil, 15_250_000, true},
		{"deltacache_shard_members", nil, 0, false},
	} {
		got, found := m.sum(c.name, c.labels)
		if got != c.want || found != c.found {
			t.Errorf("sum(%s, %v) = %v, %v; want %v, %v", c.name, c.labels, got, found, c.want, c.found)
		}
	}
}

func TestScrapeMetricsReadsAnEndpointAndReportsAFailingOne(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.Error(w, "no", http.StatusNotFound)
			return
		}
		_, _ = fmt.Fprint(w, exposition)
	}))
	defer srv.Close()
	m, err := scrapeMetrics(context.Background(), srv.URL+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := m.sum("deltacache_shard_slots", map[string]string{"state": "claimed"}); v != 340 {
		t.Fatalf("claimed slots = %v, want 340", v)
	}
	if _, err := scrapeMetrics(context.Background(), srv.URL+"/other"); err == nil {
		t.Fatal("a 404 scraped without error")
	}
}
