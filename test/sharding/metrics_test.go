package sharding

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// metricFamilies is one scrape of a /metrics endpoint (text exposition format).
type metricFamilies map[string]*dto.MetricFamily

// parseMetrics parses the text exposition format.
func parseMetrics(r io.Reader) (metricFamilies, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(r)
}

// scrapeMetrics reads url (a plain-HTTP /metrics).
func scrapeMetrics(ctx context.Context, url string) (metricFamilies, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return parseMetrics(resp.Body)
}

// sum adds the values of the series of family name carrying all of labels; found is
// false when no series matches (a metric the process does not export, or not yet).
func (m metricFamilies) sum(name string, labels map[string]string) (total float64, found bool) {
	f, ok := m[name]
	if !ok {
		return 0, false
	}
series:
	for _, s := range f.Metric {
		have := map[string]string{}
		for _, l := range s.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue series
			}
		}
		found = true
		switch {
		case s.Counter != nil:
			total += s.Counter.GetValue()
		case s.Gauge != nil:
			total += s.Gauge.GetValue()
		case s.Untyped != nil:
			total += s.Untyped.GetValue()
		}
	}
	return total, found
}
