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

package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ReconcileLog appends one JSON line per reconcile to a file, for tests that check
// which replica reconciled which key when (no key reconciled by two replicas at once):
//
//	{"replica":"<identity>","key":"<ns>/<name>","start":"<RFC3339Nano>","end":"<RFC3339Nano>"}
//
// Each line is written with one write call to a file opened for appending, so it is on
// disk (in the page cache) when Reconcile returns; lines of concurrent reconciles do not
// interleave.
type ReconcileLog struct {
	replica string
	mu      sync.Mutex
	f       *os.File
}

// OpenReconcileLog opens (creating it if need be) the file at path for appending lines
// of replica. Errors: the file's.
func OpenReconcileLog(path, replica string) (*ReconcileLog, error) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the reconcile log: %w", err)
	}
	return &ReconcileLog{replica: replica, f: f}, nil
}

// reconcileLine is one line of a ReconcileLog.
type reconcileLine struct {
	Replica string `json:"replica"`
	Key     string `json:"key"`
	Start   string `json:"start"`
	End     string `json:"end"`
}

// Wrap returns r, logging each of its reconciles once it returned.
func (l *ReconcileLog) Wrap(r reconcile.Reconciler) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		start := time.Now()
		res, err := r.Reconcile(ctx, req)
		l.write(reconcileLine{Replica: l.replica, Key: req.String(), Start: start.UTC().Format(time.RFC3339Nano),
			End: time.Now().UTC().Format(time.RFC3339Nano)})
		return res, err
	})
}

func (l *ReconcileLog) write(line reconcileLine) {
	b, _ := json.Marshal(line) // strings only: cannot fail
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.f.Write(b)
}

// Close closes the file.
func (l *ReconcileLog) Close() error { return l.f.Close() }
