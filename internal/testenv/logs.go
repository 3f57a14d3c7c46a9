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

package testenv

import (
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// LogLines keeps the lines written to a logger from CaptureLogs. Safe for concurrent
// use.
type LogLines struct {
	mu    sync.Mutex
	lines []string
}

// CaptureLogs returns a funcr logger (default options: V(0) only) that keeps every
// line it writes, as "<name prefix> <key/value pairs>" without surrounding spaces,
// and the lines kept so far.
func CaptureLogs() (logr.Logger, *LogLines) {
	l := &LogLines{}
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, strings.TrimSpace(prefix+" "+args))
	}, funcr.Options{}), l
}

// All returns a copy of every line kept, in the order written.
func (l *LogLines) All() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// Matching returns the lines, in the order written, that contain every one of parts.
func (l *LogLines) Matching(parts ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		ok := true
		for _, part := range parts {
			ok = ok && strings.Contains(line, part)
		}
		if ok {
			out = append(out, line)
		}
	}
	return out
}
