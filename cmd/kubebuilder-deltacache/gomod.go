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

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
)

const (
	goModPath        = "go.mod"
	goSumPath        = "go.sum"
	deltacacheModule = "github.com/deltacache/deltacache"
	// replacedVersion is the version a requirement satisfied by a replace directive carries.
	replacedVersion = "v0.0.0-00010101000000-000000000000"
)

// editGoMod returns go.mod requiring deltacache at version, and, when replace is not
// empty, replacing it with that directory.
func editGoMod(src, version, replace string) (string, error) {
	f, err := modfile.Parse(goModPath, []byte(src), nil)
	if err != nil {
		return "", fileErrorf(goModPath, "does not parse: %v", err)
	}
	for _, req := range f.Require {
		if req.Mod.Path == deltacacheModule {
			return "", fileErrorf(goModPath, "already requires %s: deltacache is set up in this project", deltacacheModule)
		}
	}
	// Among the direct requirements, as `go get` puts a new one, not appended to the last
	// require block (kubebuilder's indirect ones).
	reqs := append(slices.Clone(f.Require), &modfile.Require{Mod: module.Version{Path: deltacacheModule, Version: version}})
	f.SetRequireSeparateIndirect(reqs)
	if replace != "" {
		if err := f.AddReplace(deltacacheModule, "", replace, ""); err != nil {
			return "", fileErrorf(goModPath, "cannot replace %s with %s: %v", deltacacheModule, replace, err)
		}
	}
	f.Cleanup()
	out, err := f.Format()
	if err != nil {
		return "", fileErrorf(goModPath, "does not format: %v", err)
	}
	return string(out), nil
}

// deltacacheVersion is the version go.mod requires: the placeholder a replace directive
// satisfies, else the latest release the module proxy knows.
func deltacacheVersion(replace string) (string, error) {
	if replace != "" {
		return replacedVersion, nil
	}
	cmd := exec.Command("go", "list", "-m", "-json", deltacacheModule+"@latest")
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GO111MODULE=on")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("finding the latest version of %s (pass --%s with a checkout if it is not published): %v%s",
			deltacacheModule, flagReplace, err, stderrOf(err))
	}
	var mod struct{ Version string }
	if err := json.Unmarshal(out, &mod); err != nil {
		return "", fmt.Errorf("reading `go list -m %s@latest`: %v", deltacacheModule, err)
	}
	return mod.Version, nil
}

// tidy runs `go mod tidy` on a copy of the project with files in a temporary directory
// (bin/ and .git/ left out) and returns the go.mod and go.sum it leaves, so that the
// project builds as soon as kubebuilder writes them. A relative replace is resolved from
// projectDir for the run and written back as it was.
func tidy(files map[string]string, projectDir, replace string) (goMod, goSum string, err error) {
	dir, err := os.MkdirTemp("", "kubebuilder-deltacache-")
	if err != nil {
		return "", "", err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	for name, content := range files {
		if skipInCopy(name) {
			continue
		}
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return "", "", err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return "", "", err
		}
	}
	if replace != "" && !filepath.IsAbs(replace) {
		abs := filepath.Join(projectDir, replace)
		if err := setReplace(filepath.Join(dir, goModPath), abs); err != nil {
			return "", "", err
		}
	}
	cmd := exec.Command("go", "mod", "tidy")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", "", fmt.Errorf("go mod tidy with deltacache added: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	if replace != "" && !filepath.IsAbs(replace) {
		if err := setReplace(filepath.Join(dir, goModPath), replace); err != nil {
			return "", "", err
		}
	}
	mod, err := os.ReadFile(filepath.Join(dir, goModPath))
	if err != nil {
		return "", "", err
	}
	sum, err := os.ReadFile(filepath.Join(dir, goSumPath))
	if err != nil && !os.IsNotExist(err) {
		return "", "", err
	}
	return string(mod), string(sum), nil
}

// setReplace points the replace of deltacache in the go.mod at path to dir.
func setReplace(path, dir string) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	f, err := modfile.Parse(goModPath, src, nil)
	if err != nil {
		return err
	}
	if err := f.AddReplace(deltacacheModule, "", dir, ""); err != nil {
		return err
	}
	out, err := f.Format()
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}

// skipInCopy reports whether a file of the universe stays out of the copy tidy works on:
// tool binaries and git's objects, which kubebuilder sends too.
func skipInCopy(name string) bool {
	return strings.HasPrefix(name, "bin/") || strings.HasPrefix(name, ".git/")
}

func stderrOf(err error) string {
	if exit, ok := err.(*exec.ExitError); ok && len(exit.Stderr) > 0 {
		return ": " + strings.TrimSpace(string(exit.Stderr))
	}
	return ""
}
