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

package bench

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// Machine describes where a run happened.
type Machine struct {
	CPU      string
	Cores    int
	MemoryGi float64
	OS       string
	Go       string
	// Modules maps module path → version for the modules under test.
	Modules map[string]string
	// Commit is deltacache's git commit ("+dirty" if the tree has changes), or "".
	Commit string
}

// ModulesOfInterest are the modules whose versions the report names.
var ModulesOfInterest = []string{
	"k8s.io/client-go", "sigs.k8s.io/controller-runtime", "k8s.io/api", "k8s.io/apimachinery",
}

// DescribeMachine reads /proc/cpuinfo and /proc/meminfo (Linux), the build info of the
// running binary and, if git is available, the commit of the working directory.
func DescribeMachine() Machine {
	m := Machine{
		CPU:     procValue("/proc/cpuinfo", "model name"),
		Cores:   runtime.NumCPU(),
		OS:      runtime.GOOS + "/" + runtime.GOARCH,
		Go:      runtime.Version(),
		Modules: map[string]string{},
	}
	if kb, err := strconv.ParseFloat(strings.TrimSuffix(procValue("/proc/meminfo", "MemTotal"), " kB"), 64); err == nil {
		m.MemoryGi = kb / (1 << 20)
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range bi.Deps {
			for _, want := range ModulesOfInterest {
				if dep.Path == want {
					version := dep.Version
					if dep.Replace != nil {
						version = dep.Replace.Version
					}
					m.Modules[want] = version
				}
			}
		}
	}
	if out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
		if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil &&
			len(strings.TrimSpace(string(st))) > 0 {
			m.Commit += "+dirty"
		}
	}
	return m
}

func (m Machine) String() string {
	return fmt.Sprintf("%s, %d cores, %.1f GiB, %s", m.CPU, m.Cores, m.MemoryGi, m.OS)
}

// procValue returns the value of the first "key: value" line of a /proc file, or
// "unknown".
func procValue(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return "unknown"
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
