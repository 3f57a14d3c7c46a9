package shard

import (
	"errors"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics is a prometheus.Collector of the running Rings of a process (Run adds a
// Ring while it runs). Series carry the labels ring and identity:
//
//   - deltacache_shard_members: members of the ring, as this replica sees them;
//   - deltacache_shard_slots{state}: slots this replica serves, claims, and should
//     serve (target), of NumSlots;
//   - deltacache_shard_ranges: hash ranges (runs of slots) this replica serves: the
//     shardRange terms of its informers' selectors;
//   - deltacache_shard_handoffs_total{direction}: slots this replica started serving
//     (acquired) or gave up (released) since it started.
type Metrics struct {
	members, slots, ranges, handoffs *prometheus.Desc

	mu    sync.Mutex
	rings map[*Ring]bool
}

// DefaultMetrics receives every Ring; pkg/cache registers it with
// controller-runtime's metrics registry.
var DefaultMetrics = NewMetrics()

// NewMetrics returns an empty collector.
func NewMetrics() *Metrics {
	labels := []string{"ring", "identity"}
	return &Metrics{
		members: prometheus.NewDesc("deltacache_shard_members",
			"Members of the ring (unexpired Leases), as this replica sees them.", labels, nil),
		slots: prometheus.NewDesc("deltacache_shard_slots",
			"Hash slots (of 1024) this replica serves, claims in its Lease, and should serve (target).",
			append(labels, "state"), nil),
		ranges: prometheus.NewDesc("deltacache_shard_ranges",
			"Hash ranges (runs of consecutive slots) this replica serves.", labels, nil),
		handoffs: prometheus.NewDesc("deltacache_shard_handoffs_total",
			"Slots this replica started serving (acquired) or gave up (released) since it started.",
			append(labels, "direction"), nil),
		rings: map[*Ring]bool{},
	}
}

// Register registers DefaultMetrics with r; a second registration is not an error.
func Register(r prometheus.Registerer) error {
	if err := r.Register(DefaultMetrics); err != nil {
		if _, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); !ok {
			return err
		}
	}
	return nil
}

func (m *Metrics) add(r *Ring) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rings[r] = true
}

func (m *Metrics) remove(r *Ring) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.rings, r)
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.members, m.slots, m.ranges, m.handoffs} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	rings := make([]*Ring, 0, len(m.rings))
	for r := range m.rings {
		rings = append(rings, r)
	}
	m.mu.Unlock()
	for _, r := range rings {
		st := r.Status()
		lv := []string{r.opts.Name, r.opts.Identity}
		gauge := func(d *prometheus.Desc, v int, extra ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), append(lv, extra...)...)
		}
		gauge(m.members, len(st.Members))
		gauge(m.slots, st.Serving.Len(), "serving")
		gauge(m.slots, st.Claimed.Len(), "claimed")
		gauge(m.slots, st.Target.Len(), "target")
		gauge(m.ranges, len(st.Serving.HashRanges()))
		ch <- prometheus.MustNewConstMetric(m.handoffs, prometheus.CounterValue, float64(st.Acquired), append(lv, "acquired")...)
		ch <- prometheus.MustNewConstMetric(m.handoffs, prometheus.CounterValue, float64(st.Released), append(lv, "released")...)
	}
}
