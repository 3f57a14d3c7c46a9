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
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/kubebuilder/v4/pkg/plugin/external"
)

const (
	flagLabelIndexes = "label-indexes"
	flagReplace      = "deltacache-replace"

	// defaultLabelIndexes is the value of --label-indexes when it is not given.
	defaultLabelIndexes = "app"
)

// options are the plugin's settings, from the flags of `init` and `edit`.
type options struct {
	// LabelKeys are the label keys deltacache indexes for every kind: the default of the
	// scaffolded manager's --label-indexes flag. At least one.
	LabelKeys []string
	// Replace, when not empty, is the path of a deltacache checkout that go.mod's replace
	// directive points to, relative to the project root or absolute.
	Replace string
}

// pluginFlags are the flags `init` and `edit` accept; kubebuilder binds them and shows them
// in --help.
func pluginFlags() []external.Flag {
	return []external.Flag{
		{
			Name: flagLabelIndexes, Type: "string", Default: defaultLabelIndexes,
			Usage: "comma-separated label keys deltacache indexes for every cached kind " +
				"(the default of the manager's --label-indexes flag)",
		},
		{
			Name: flagReplace, Type: "string",
			Usage: "path of a deltacache checkout for a replace directive in go.mod " +
				"(for an unpublished or modified deltacache)",
		},
	}
}

// parseOptions reads the plugin's flags from args, the raw flags kubebuilder forwards
// ("--name value" or "--name=value"; flags of other plugins are skipped).
func parseOptions(args []string) (options, error) {
	values := map[string]string{flagLabelIndexes: defaultLabelIndexes}
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(strings.TrimPrefix(args[i], "--"), "=")
		if _, ours := values[name]; !ours && name != flagReplace {
			continue
		}
		if !hasValue {
			if i+1 >= len(args) || strings.HasPrefix(args[i+1], "--") {
				return options{}, fmt.Errorf("flag --%s needs a value", name)
			}
			i++
			value = args[i]
		}
		values[name] = value
	}
	opts := options{Replace: values[flagReplace]}
	for key := range strings.SplitSeq(values[flagLabelIndexes], ",") {
		key = strings.TrimSpace(key)
		if key == "" {
			continue
		}
		if problems := validation.IsQualifiedName(key); len(problems) > 0 {
			return options{}, fmt.Errorf("--%s: %q is not a valid label key: %s",
				flagLabelIndexes, key, strings.Join(problems, "; "))
		}
		opts.LabelKeys = append(opts.LabelKeys, key)
	}
	if len(opts.LabelKeys) == 0 {
		return options{}, fmt.Errorf("--%s: give at least one label key (e.g. %q)", flagLabelIndexes, "app,tier")
	}
	return opts, nil
}
