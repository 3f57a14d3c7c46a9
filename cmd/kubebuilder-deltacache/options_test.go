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
	"reflect"
	"strings"
	"testing"
)

func TestParseOptionsReadsItsFlagsAmongKubebuildersAndDefaultsTheLabelKeys(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		want options
	}{
		"none": {nil, options{LabelKeys: []string{"app"}}},
		"separated": {
			[]string{"--domain", "example.com", "--label-indexes", "app,tier", "--deltacache-replace", "../dc"},
			options{LabelKeys: []string{"app", "tier"}, Replace: "../dc"},
		},
		"with =": {
			[]string{"--label-indexes=app.kubernetes.io/name, tier", "--multigroup", "--repo", "x"},
			options{LabelKeys: []string{"app.kubernetes.io/name", "tier"}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := parseOptions(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseOptionsRefusesBadLabelKeysAndMissingValues(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"invalid key": {[]string{"--label-indexes", "app,-bad-"}, `--label-indexes: "-bad-" is not a valid label key`},
		"no key":      {[]string{"--label-indexes", ","}, "--label-indexes: give at least one label key"},
		"missing value": {
			[]string{"--deltacache-replace", "--label-indexes", "app"}, "flag --deltacache-replace needs a value",
		},
		"last, no value": {[]string{"--label-indexes"}, "flag --label-indexes needs a value"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parseOptions(tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
