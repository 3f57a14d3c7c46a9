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
	"context"
	"os"
	"os/signal"
	"syscall"
)

// ShutdownSignals returns a context that the first SIGINT or SIGTERM cancels, as
// controller-runtime's ctrl.SetupSignalHandler does. A second signal calls beforeExit
// and then exit(1) (os.Exit in the manager), where controller-runtime exits at once:
// beforeExit stops the local control plane, which would otherwise outlive the manager
// (kube-apiserver and etcd are child processes without a parent-death signal). Call it
// once per process.
func ShutdownSignals(beforeExit func(), exit func(code int)) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-signals
		cancel()
		<-signals
		beforeExit()
		exit(1)
	}()
	return ctx
}
