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

// Command devcluster runs a command against a local control plane, so that an operator runs
// with no cluster: it starts kube-apiserver and etcd from $KUBEBUILDER_ASSETS (the directory
// hack/envtest-binaries.sh prints), installs the CustomResourceDefinitions of --crds, writes
// an administrator's kubeconfig and runs the command given after "--" with KUBECONFIG set to
// it, which controller-runtime's ctrl.GetConfig reads. It prints one line to stderr saying
// where the API server listens, which CRDs it installed and where the kubeconfig is (for
// kubectl). Without a command it runs until interrupted.
//
// The operators deltacache's kubebuilder plugin scaffolds run it from `make run-local`, which
// builds it and the manager into a temporary directory and runs
//
//	devcluster --crds config/crd/bases -- <manager> $(RUN_ARGS)
//
// (a command run with `go run` exits 1 after a Ctrl-C even when its program stopped cleanly).
// The command runs in a process group of its own. The first SIGINT or SIGTERM is passed to
// that group as SIGINT (the manager shuts down as on Ctrl-C), and the control plane stops
// once the command has exited; a second signal kills the group. The exit status is the
// command's. The control plane's data and kubeconfig live in a temporary
// directory removed at the end; --kubeconfig also writes a copy to a path of your choice.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/deltacache/deltacache/internal/devcluster"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// run is the command with its arguments; it returns the exit status and writes its own
// messages to stderr.
func run(args []string, stderr io.Writer) int {
	flags := flag.NewFlagSet("devcluster", flag.ContinueOnError)
	flags.SetOutput(stderr)
	flags.Usage = func() {
		_, _ = fmt.Fprintln(stderr, "usage: devcluster [--crds DIR] [--kubeconfig PATH] [-- COMMAND [ARG...]]")
		flags.PrintDefaults()
	}
	crds := flags.String("crds", "config/crd/bases",
		"directory of CustomResourceDefinition manifests to install (a missing one installs none)")
	kubeconfigCopy := flags.String("kubeconfig", "", "also write the kubeconfig to this path (kept afterwards)")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	logf := func(format string, args ...any) { _, _ = fmt.Fprintf(stderr, "devcluster: "+format+"\n", args...) }

	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)

	crdDir := *crds
	if _, err := os.Stat(crdDir); errors.Is(err, fs.ErrNotExist) {
		logf("%s does not exist (make manifests writes it): no CRDs installed", crdDir)
		crdDir = ""
	}
	cp, err := devcluster.StartControlPlane("", crdDir)
	if err != nil {
		logf("%v", err)
		return 1
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			logf("stopping the control plane: %v", err)
		}
	}()
	kubeconfig := cp.KubeconfigPath
	if *kubeconfigCopy != "" {
		content, err := os.ReadFile(cp.KubeconfigPath)
		if err == nil {
			err = os.WriteFile(*kubeconfigCopy, content, 0o600)
		}
		if err != nil {
			logf("writing --kubeconfig: %v", err)
			return 1
		}
		kubeconfig = *kubeconfigCopy
	}
	crdList := "none"
	if len(cp.CRDs) > 0 {
		crdList = strings.Join(cp.CRDs, ", ")
	}
	logf("local control plane at %s, CRDs installed: %s; kubeconfig %s", cp.Config.Host, crdList, kubeconfig)

	if flags.NArg() == 0 {
		<-signals
		return 0
	}
	select {
	case <-signals:
		return 130
	default:
	}
	cmd := exec.Command(flags.Arg(0), flags.Args()[1:]...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cp.KubeconfigPath)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf("%v", err)
		return 1
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	interrupted := false
	for {
		select {
		case <-signals:
			sig := syscall.SIGINT
			if interrupted {
				sig = syscall.SIGKILL
			}
			interrupted = true
			_ = syscall.Kill(-cmd.Process.Pid, sig)
		case err := <-done:
			var exit *exec.ExitError
			switch {
			case err == nil:
				return 0
			case errors.As(err, &exit) && exit.ExitCode() >= 0:
				return exit.ExitCode()
			default:
				logf("%s: %v", flags.Arg(0), err)
				return 1
			}
		}
	}
}
