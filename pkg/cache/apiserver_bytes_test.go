package cache

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestCountingClientCountsTheResponseBodyBytesRead(t *testing.T) {
	body := strings.Repeat("x", 12345)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	var total atomic.Int64
	hc := countingClient(srv.Client(), &total)
	before := testutil.ToFloat64(receivedBytes)
	for range 3 {
		resp, err := hc.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	if got := total.Load(); got != 3*12345 {
		t.Errorf("counted %d bytes, want %d", got, 3*12345)
	}
	if got := testutil.ToFloat64(receivedBytes) - before; got != 3*12345 {
		t.Errorf("deltacache_apiserver_received_bytes_total grew by %v, want %d", got, 3*12345)
	}
	if srv.Client().Transport == hc.Transport {
		t.Error("the original client's transport was replaced")
	}
}
