package informer

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/deltacache/deltacache/pkg/informer/informertest"
)

func TestMetricsCountListsErrorsPanicsAndSync(t *testing.T) {
	name := fmt.Sprintf("metrics-test-%d", time.Now().UnixNano()) // counters are process-global
	f := informertest.New(&corev1.Pod{})
	f.Create(pod("a", "p1", ""))
	f.ScriptList(informertest.ListResponse{Err: informertest.ErrForbidden()})
	s := newPodInformer(f, Options{Name: name})
	reg := addHandler(t, s, toolscache.ResourceEventHandlerFuncs{AddFunc: func(any) { panic("boom") }})
	startInformer(t, s)
	waitSynced(t, reg.HasSyncedChecker())
	eventually(t, 5*time.Second, "synced gauge", func() bool {
		return value(syncedGauge.WithLabelValues(name)) == 1
	})
	if got := value(listWatchErrorsTotal.WithLabelValues(name, "list", ReasonForbidden)); got != 1 {
		t.Errorf("forbidden list errors = %v, want 1", got)
	}
	if got := value(listsTotal.WithLabelValues(name)); got != 1 {
		t.Errorf("lists = %v, want 1", got)
	}
	if got := value(handlerPanicsTotal.WithLabelValues(name)); got != 1 {
		t.Errorf("panics = %v, want 1", got)
	}
	r := prometheus.NewRegistry()
	must(t, RegisterMetrics(r))
	must(t, RegisterMetrics(r))
}

// value reads a counter or gauge.
func value(m prometheus.Metric) float64 {
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		panic(err)
	}
	if out.Counter != nil {
		return out.Counter.GetValue()
	}
	return out.Gauge.GetValue()
}
