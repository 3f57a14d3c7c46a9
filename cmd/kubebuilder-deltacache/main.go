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

// Command kubebuilder-deltacache is the kubebuilder external plugin deltacache.io/v1-alpha:
// it scaffolds deltacache's informer cache into a go/v4 operator. kubebuilder runs it with
// no arguments, writes one PluginRequest (JSON) to its stdin and reads one PluginResponse
// from its stdout; install it as <plugins root>/deltacache.io/v1-alpha/deltacache.io (see
// the README).
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"sigs.k8s.io/kubebuilder/v4/pkg/plugin/external"
)

func main() {
	if err := run(os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", pluginKey, err)
		os.Exit(1)
	}
}

// run reads a request from in and writes the response to out; nothing else goes to out.
// After a successful init or edit it writes one line saying what changed to stderr, which
// kubebuilder shows.
func run(in io.Reader, out, stderr io.Writer) error {
	var req external.PluginRequest
	if err := json.NewDecoder(in).Decode(&req); err != nil {
		return fmt.Errorf("reading the plugin request: %w", err)
	}
	dir, err := os.Getwd()
	if err != nil {
		return err
	}
	res := handle(req, dir)
	if err := json.NewEncoder(out).Encode(res); err != nil {
		return err
	}
	if (req.Command == "init" || req.Command == "edit") && !res.Error {
		opts, _ := parseOptions(req.Args)
		_, _ = fmt.Fprintln(stderr, summary(req.Command, opts, res.Universe))
	}
	return nil
}
