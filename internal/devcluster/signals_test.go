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

package devcluster

import (
	"os/signal"
	"syscall"
	"testing"
	"time"
)

func TestSecondSignalStopsTheControlPlaneBeforeExiting(t *testing.T) {
	defer signal.Reset(syscall.SIGINT, syscall.SIGTERM)
	var order []string
	exited := make(chan int, 1)
	ctx := ShutdownSignals(func() { order = append(order, "stop control plane") },
		func(code int) { order = append(order, "exit"); exited <- code })

	if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the first SIGINT did not cancel the context")
	}
	select {
	case code := <-exited:
		t.Fatalf("exited with %d after one signal", code)
	case <-time.After(100 * time.Millisecond):
	}

	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exited:
		if code != 1 {
			t.Errorf("exit code %d, want 1", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second signal did not exit")
	}
	if len(order) != 2 || order[0] != "stop control plane" || order[1] != "exit" {
		t.Errorf("calls %v, want the control plane stopped, then exit", order)
	}
}
