package informer

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// The pipeline's Prometheus metrics, labelled by informer name. They are
// always updated; RegisterMetrics exposes them (pkg/cache registers them with
// controller-runtime's registry). client-go has no reflector metrics at all.
var (
	listsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "deltacache_informer_lists_total",
		Help: "Complete lists (paginated LIST or WatchList stream) installed into the store.",
	}, []string{"informer"})
	listWatchErrorsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "deltacache_informer_list_watch_errors_total",
		Help: "List and watch errors, by operation and ListWatchError reason.",
	}, []string{"informer", "op", "reason"})
	handlerPanicsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "deltacache_informer_handler_panics_total",
		Help: "Event handler calls that panicked and were recovered.",
	}, []string{"informer"})
	syncedGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "deltacache_informer_synced",
		Help: "1 once the informer's initial list is in its store, else 0.",
	}, []string{"informer"})
)

// Collectors returns the package's metric collectors.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{listsTotal, listWatchErrorsTotal, handlerPanicsTotal, syncedGauge}
}

// RegisterMetrics registers the package's metrics with r. Registering twice
// with the same registry is not an error.
func RegisterMetrics(r prometheus.Registerer) error {
	for _, c := range Collectors() {
		if err := r.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return err
			}
		}
	}
	return nil
}
