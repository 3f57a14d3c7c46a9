/*
Copyright 2026.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package cache

import (
	"io"
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// receivedBytes is deltacache_apiserver_received_bytes_total: the response-body bytes
// read by the HTTP clients of every Cache of the process (lists, watch streams, the
// Namespace informer of namespace sharding, the Leases of the ring); discovery by the
// RESTMapper is not counted.
var receivedBytes = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "deltacache_apiserver_received_bytes_total",
	Help: "Response-body bytes the caches' HTTP clients read from the API server (lists and watch streams).",
})

// ReceivedBytes returns the response-body bytes this cache's HTTP client has read
// from the API server since New: its share of deltacache_apiserver_received_bytes_total.
func (c *Cache) ReceivedBytes() int64 { return c.received.Load() }

// countingClient returns a copy of hc whose transport counts the bytes of the response
// bodies read into total and receivedBytes; hc itself is left as it is (the RESTMapper
// may share it).
func countingClient(hc *http.Client, total *atomic.Int64) *http.Client {
	out := *hc
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	out.Transport = &countingTransport{base: base, total: total}
	return &out
}

// countingTransport counts the response-body bytes read through it.
type countingTransport struct {
	base  http.RoundTripper
	total *atomic.Int64
}

// RoundTrip implements http.RoundTripper.
func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if resp != nil && resp.Body != nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, total: t.total}
	}
	return resp, err
}

// CloseIdleConnections closes the idle connections of the wrapped transport.
func (t *countingTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// WrappedRoundTripper returns the wrapped transport (client-go's
// utilnet.RoundTripperWrapper, through which it finds the transport's settings).
func (t *countingTransport) WrappedRoundTripper() http.RoundTripper { return t.base }

type countingBody struct {
	io.ReadCloser
	total *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.total.Add(int64(n))
		receivedBytes.Add(float64(n))
	}
	return n, err
}
