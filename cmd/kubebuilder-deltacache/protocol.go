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
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/kubebuilder/v4/pkg/plugin"
	"sigs.k8s.io/kubebuilder/v4/pkg/plugin/external"
)

const description = `Scaffolds deltacache's informer cache into a go/v4 operator:
cmd/main.go sets NewCache to deltacache's cache with label indexes (--label-indexes) and adds the
informer healthz and readyz checks; go.mod requires deltacache (--deltacache-replace for a checkout);
internal/deltacache holds an envtest suite that starts a manager on it; the Makefile's envtest
target builds kube-apiserver and etcd from Go modules once per machine (hack/envtest-binaries.sh),
so that make test runs where setup-envtest cannot download, its tools install outside the project,
and make run-local runs the manager on a local control plane (no cluster needed); with the grafana
plugin, the deltacache dashboard lands in grafana/.`

// handle answers one request of kubebuilder's external-plugin protocol. Only init and
// edit change files; create api and create webhook, sent because the plugin is in the
// layout of a project initialised with it, change nothing.
func handle(req external.PluginRequest, dir string) external.PluginResponse {
	res := external.PluginResponse{APIVersion: req.APIVersion, Command: req.Command, Universe: map[string]string{}}
	setupCommand := slices.Contains(req.Args, "--init") || slices.Contains(req.Args, "--edit")
	switch req.Command {
	case "flags":
		if setupCommand {
			res.Flags = pluginFlags()
		}
	case "metadata":
		res.Metadata = metadata(req.Args)
	case "init", "edit":
		opts, err := parseOptions(req.Args)
		if err == nil {
			res.Universe, err = scaffold(project{
				Command: req.Command, Universe: req.Universe, Chain: req.PluginChain, Config: req.Config, Dir: dir,
			}, opts)
		}
		if err != nil && req.Command == "init" && slices.Contains(req.PluginChain, goV4Key) {
			err = fmt.Errorf("%w\n%s", err, initRetryHint(dir))
		}
		if err != nil {
			return failed(res, err)
		}
	case "create api", "create webhook":
	default:
		return failed(res, fmt.Errorf("%s does not know the command %q", pluginKey, req.Command))
	}
	return res
}

func metadata(args []string) plugin.SubcommandMetadata {
	meta := plugin.SubcommandMetadata{Description: description}
	switch {
	case slices.Contains(args, "--init"):
		meta.Examples = `  kubebuilder init --plugins go/v4,` + pluginKey + ` --domain example.com --repo example.com/shop \
    --label-indexes app,tier`
	case slices.Contains(args, "--edit"):
		meta.Examples = `  kubebuilder edit --plugins ` + pluginKey + ` --label-indexes app,tier`
	default:
		meta.Description = pluginKey + " scaffolds nothing for this command; cmd/main.go already uses deltacache."
	}
	return meta
}

func failed(res external.PluginResponse, err error) external.PluginResponse {
	res.Universe = nil
	res.Error = true
	res.ErrorMsgs = []string{err.Error()}
	return res
}

// initRetryHint tells what to do after a failed init: go/v4 ran first and has written its
// files into dir, where kubebuilder refuses another init.
func initRetryHint(dir string) string {
	name := filepath.Base(dir)
	return fmt.Sprintf("kubebuilder's go/v4 has already written its files here, and a second init fails with "+
		"\"target directory is already initialized\": after fixing the above, start again in an empty directory "+
		"(cd .. && rm -rf %s && mkdir %s && cd %s)", name, name, name)
}

// summary is the line a successful init or edit prints: the files it wrote (a directory for
// the suite's) and what to run next.
func summary(command string, opts options, files map[string]string) string {
	var names []string
	suite := false
	for name := range files {
		if strings.HasPrefix(name, testDir) {
			suite = true
			continue
		}
		names = append(names, name)
	}
	slices.Sort(names)
	if suite {
		names = append(names, testDir)
	}
	return fmt.Sprintf("%s: %s set deltacache up (--label-indexes=%s) in %s; make test runs its suite, "+
		"make run-local runs the manager on a local control plane",
		pluginKey, command, strings.Join(opts.LabelKeys, ","), strings.Join(names, ", "))
}
