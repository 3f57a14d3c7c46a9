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

// Package faultproxy puts faults between a client and a kube-apiserver on 127.0.0.1:
// an HTTP reverse proxy that silently drops watch events (WatchDropper), as
// aggregated API servers that break watch semantics do, and a TCP proxy that cuts,
// freezes and slows connections (TCPProxy). Tests and the soak use them.
package faultproxy

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/client-go/rest"
)

// WatchDropper is an HTTP reverse proxy in front of a kube-apiserver that forwards
// everything, authenticating as the rest.Config it was built from, and drops watch
// events for which Drop returns true (each watch response is split into its frames:
// length-prefixed protobuf or JSON objects). Clients reach it with Config().
type WatchDropper struct {
	// Drop is asked about every watch frame (the raw bytes of one event); nil drops
	// nothing. It may be called from several goroutines.
	Drop func(frame []byte) bool

	dropped  atomic.Int64
	listener net.Listener
	server   *http.Server
}

// NewWatchDropper starts a WatchDropper on 127.0.0.1 in front of cfg's server.
func NewWatchDropper(cfg *rest.Config, drop func(frame []byte) bool) (*WatchDropper, error) {
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	if target.Scheme == "" {
		target.Scheme = "https"
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	d := &WatchDropper{Drop: drop, listener: l}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
			// The proxy must read the frames: let its transport negotiate (and undo)
			// compression instead of the client.
			r.Out.Header.Del("Accept-Encoding")
		},
		Transport:     transport,
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			if isWatch(resp.Request) && resp.StatusCode == http.StatusOK {
				resp.Body = d.filter(resp.Body, resp.Header.Get("Content-Type"))
				resp.Header.Del("Content-Length")
			}
			return nil
		},
	}
	d.server = &http.Server{Handler: proxy} //nolint:gosec // test proxy on 127.0.0.1
	go func() { _ = d.server.Serve(l) }()
	return d, nil
}

// Config returns a rest.Config that reaches the API server through the proxy.
func (d *WatchDropper) Config() *rest.Config {
	return &rest.Config{Host: "http://" + d.listener.Addr().String(), QPS: 1000, Burst: 2000}
}

// Dropped is the number of watch events dropped so far.
func (d *WatchDropper) Dropped() int64 { return d.dropped.Load() }

// Close stops the proxy and its connections.
func (d *WatchDropper) Close() error { return d.server.Close() }

func isWatch(r *http.Request) bool {
	if r == nil {
		return false
	}
	w := r.URL.Query().Get("watch")
	return w == "true" || w == "1"
}

// filter returns body with the frames Drop refuses removed.
func (d *WatchDropper) filter(body io.ReadCloser, contentType string) io.ReadCloser {
	pr, pw := io.Pipe()
	protobuf := strings.Contains(contentType, "protobuf")
	go func() {
		defer func() { _ = body.Close() }()
		var err error
		if protobuf {
			err = d.copyProtobufFrames(pw, body)
		} else {
			err = d.copyJSONFrames(pw, body)
		}
		_ = pw.CloseWithError(err)
	}()
	return &pipeBody{PipeReader: pr, upstream: body}
}

// pipeBody closes the upstream body too, so that a client's Stop ends the watch.
type pipeBody struct {
	*io.PipeReader
	upstream io.Closer
	once     sync.Once
}

func (p *pipeBody) Close() error {
	p.once.Do(func() { _ = p.upstream.Close() })
	return p.PipeReader.Close()
}

func (d *WatchDropper) keep(frame []byte) bool {
	if d.Drop != nil && d.Drop(frame) {
		d.dropped.Add(1)
		return false
	}
	return true
}

// copyProtobufFrames copies 4-byte big-endian length-prefixed frames.
func (d *WatchDropper) copyProtobufFrames(w io.Writer, r io.Reader) error {
	br := bufio.NewReader(r)
	var size [4]byte
	for {
		if _, err := io.ReadFull(br, size[:]); err != nil {
			return eofIsNil(err)
		}
		frame := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(br, frame); err != nil {
			return eofIsNil(err)
		}
		if !d.keep(frame) {
			continue
		}
		if _, err := w.Write(append(size[:], frame...)); err != nil {
			return err
		}
	}
}

// copyJSONFrames copies a stream of JSON objects, one per line.
func (d *WatchDropper) copyJSONFrames(w io.Writer, r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var frame json.RawMessage
		if err := dec.Decode(&frame); err != nil {
			return eofIsNil(err)
		}
		if !d.keep(frame) {
			continue
		}
		if _, err := w.Write(append(bytes.Clone(frame), '\n')); err != nil {
			return err
		}
	}
}

func eofIsNil(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil
	}
	return err
}

// DropOnce returns a Drop function that drops the first frame containing needle.
func DropOnce(needle string) func([]byte) bool {
	var done atomic.Bool
	return func(frame []byte) bool {
		return bytes.Contains(frame, []byte(needle)) && done.CompareAndSwap(false, true)
	}
}
