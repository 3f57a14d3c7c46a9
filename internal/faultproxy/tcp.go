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

package faultproxy

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// TCPProxy forwards TCP connections from 127.0.0.1 to a target (a kube-apiserver's
// TLS port: the client's TLS session goes through untouched) and injects faults on
// demand: Cut resets every connection (RST), Blackhole freezes them (bytes are held,
// no RST, new connections hang too), SetDelay slows the link.
type TCPProxy struct {
	target   string
	listener net.Listener

	mu    sync.Mutex
	conns map[net.Conn]struct{}

	frozen atomic.Bool
	delay  atomic.Int64 // per chunk, in nanoseconds
	closed atomic.Bool
	wg     sync.WaitGroup
}

// NewTCPProxy listens on 127.0.0.1 and forwards to target ("host:port").
func NewTCPProxy(target string) (*TCPProxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &TCPProxy{target: target, listener: l, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr is the proxy's "127.0.0.1:port".
func (p *TCPProxy) Addr() string { return p.listener.Addr().String() }

// Cut resets every open connection and returns how many there were.
func (p *TCPProxy) Cut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // close with RST
		}
		_ = c.Close()
		delete(p.conns, c)
		n++
	}
	return n / 2
}

// Blackhole freezes (true) or thaws (false) every connection, present and future.
func (p *TCPProxy) Blackhole(on bool) { p.frozen.Store(on) }

// SetDelay delays every forwarded chunk by d (0: none).
func (p *TCPProxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// Close stops accepting and closes every connection.
func (p *TCPProxy) Close() error {
	p.closed.Store(true)
	p.frozen.Store(false)
	err := p.listener.Close()
	p.Cut()
	p.wg.Wait()
	return err
}

func (p *TCPProxy) accept() {
	for {
		in, err := p.listener.Accept()
		if err != nil {
			return
		}
		p.wg.Go(func() { p.serve(in) })
	}
}

func (p *TCPProxy) track(c net.Conn, on bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on {
		if p.closed.Load() {
			return false
		}
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
	return true
}

func (p *TCPProxy) serve(in net.Conn) {
	for p.frozen.Load() && !p.closed.Load() { // a new connection hangs in a blackhole
		time.Sleep(10 * time.Millisecond)
	}
	out, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = in.Close()
		return
	}
	if !p.track(in, true) || !p.track(out, true) {
		_ = in.Close()
		_ = out.Close()
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { p.pipe(out, in) })
	wg.Go(func() { p.pipe(in, out) })
	wg.Wait()
	p.track(in, false)
	p.track(out, false)
}

// pipe copies src to dst chunk by chunk, holding chunks while frozen.
func (p *TCPProxy) pipe(dst, src net.Conn) {
	defer func() { _ = dst.Close(); _ = src.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			for p.frozen.Load() && !p.closed.Load() {
				time.Sleep(10 * time.Millisecond)
			}
			if d := time.Duration(p.delay.Load()); d > 0 {
				time.Sleep(d)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil { // EOF or a reset: either way the other side goes too
			return
		}
	}
}
