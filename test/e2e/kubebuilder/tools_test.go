//go:build e2e

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

// Package kubebuilder is the end-to-end test of the kubebuilder plugin deltacache.io/v1-alpha:
// it runs a pinned kubebuilder with the plugin installed as the README says, and then the
// scaffolded projects' own `make test` against the control plane hack/envtest-binaries.sh builds.
package kubebuilder

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// kubebuilderVersion is the kubebuilder the plugin is tested with.
const kubebuilderVersion = "v4.16.0"

var (
	repoRoot = mustAbs(filepath.Join("..", "..", ".."))
	// kubebuilderBin and configHome are set by TestMain: the cached kubebuilder, and the
	// XDG_CONFIG_HOME under which the plugin is installed.
	kubebuilderBin string
	configHome     string
)

func TestMain(m *testing.M) {
	// envtest logs through controller-runtime's logger; the test reports what matters itself.
	ctrllog.SetLogger(logr.Discard())
	tmp, err := os.MkdirTemp("", "deltacache-kubebuilder-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	configHome = filepath.Join(tmp, "config")
	if kubebuilderBin, err = installKubebuilder(); err == nil {
		err = installPlugin(configHome)
	}
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	_ = os.RemoveAll(tmp)
	os.Exit(code)
}

// installKubebuilder returns kubebuilder at kubebuilderVersion, installed once per machine
// with `go install` into ${XDG_CACHE_HOME:-~/.cache}/deltacache/kubebuilder/<version>/.
func installKubebuilder() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "deltacache", "kubebuilder", kubebuilderVersion)
	bin := filepath.Join(dir, "kubebuilder")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	tmp := dir + fmt.Sprintf(".tmp-%d", os.Getpid())
	start := time.Now()
	cmd := exec.Command("go", "install", "sigs.k8s.io/kubebuilder/v4@"+kubebuilderVersion)
	cmd.Dir = os.TempDir()
	cmd.Env = append(goEnv(), "GOBIN="+tmp)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install kubebuilder %s: %v\n%s", kubebuilderVersion, err, out)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(filepath.Join(tmp, "kubebuilder"), bin); err != nil {
		return "", err
	}
	_ = os.RemoveAll(tmp)
	fmt.Printf("installed kubebuilder %s in %s (%s)\n", kubebuilderVersion, bin, time.Since(start).Round(time.Second))
	return bin, nil
}

// installPlugin installs the plugin with the README's commands, under configHome.
func installPlugin(configHome string) error {
	dir := filepath.Join(configHome, "kubebuilder", "plugins", "deltacache.io", "v1-alpha")
	script := `dir="${XDG_CONFIG_HOME:-$HOME/.config}/kubebuilder/plugins/deltacache.io/v1-alpha"
cd cmd/kubebuilder-deltacache && GOBIN="$dir" go install . && mv "$dir/kubebuilder-deltacache" "$dir/deltacache.io"`
	cmd := exec.Command("bash", "-ec", script)
	cmd.Dir = repoRoot
	cmd.Env = append(goEnv(), "XDG_CONFIG_HOME="+configHome)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("installing the plugin as the README says: %v\n%s", err, out)
	}
	if info, err := os.Stat(filepath.Join(dir, "deltacache.io")); err != nil || info.Mode()&0o111 == 0 {
		return fmt.Errorf("the plugin is not an executable %s/deltacache.io: %v", dir, err)
	}
	return nil
}

// goEnv is the environment of every command: this one without KUBEBUILDER_ASSETS (a
// scaffolded project must find its control plane itself), without KUBECONFIG (make run-local
// needs no cluster) and without a go.work.
func goEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBEBUILDER_ASSETS=") && !strings.HasPrefix(kv, "GOWORK=") &&
			!strings.HasPrefix(kv, "KUBECONFIG=") {
			env = append(env, kv)
		}
	}
	return append(env, "GOWORK=off", "GOTOOLCHAIN=local")
}

// result is what a command did.
type result struct {
	Output string
	Err    error
}

// run runs name with args in dir with the plugin installed, logging the command, its time
// and, when it fails, its output.
func run(t *testing.T, dir, name string, args ...string) result {
	t.Helper()
	return runWithEnv(t, dir, nil, name, args...)
}

// runWithEnv is run with extra environment variables.
func runWithEnv(t *testing.T, dir string, extraEnv []string, name string, args ...string) result {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(append(goEnv(), "XDG_CONFIG_HOME="+configHome), extraEnv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s %s (in %s): %s, %v", filepath.Base(name), strings.Join(args, " "), filepath.Base(dir),
		time.Since(start).Round(100*time.Millisecond), err)
	return result{Output: out.String(), Err: err}
}

// mustRun runs the command and fails the test if it fails.
func mustRun(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	res := run(t, dir, name, args...)
	if res.Err != nil {
		t.Fatalf("%s %s failed: %v\n%s", name, strings.Join(args, " "), res.Err, res.Output)
	}
	return res.Output
}

// kubebuilder runs kubebuilder in dir and fails the test if it fails.
func kubebuilder(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return mustRun(t, dir, kubebuilderBin, args...)
}

func mustAbs(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		panic(err)
	}
	return abs
}
