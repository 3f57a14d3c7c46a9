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
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	demov1alpha1 "github.com/deltacache/deltacache/api/v1alpha1"
)

// SeededLabel marks the pods devcluster creates; the stand-in kubelet only touches those.
const SeededLabel = "deltacache.io/seeded"

// LoadSamples decodes every App in the YAML files of dir (kustomization.yaml excepted), in
// file-name order. A document that is not an App is an error: the samples directory is ours.
func LoadSamples(dir string) ([]*demov1alpha1.App, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	scheme := newScheme()
	decoder := serializer.NewCodecFactory(scheme).UniversalDeserializer()
	var apps []*demov1alpha1.App
	for _, e := range entries {
		name := e.Name()
		isYAML := strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")
		if e.IsDir() || name == "kustomization.yaml" || !isYAML {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		reader := utilyaml.NewYAMLReader(bufioReader(data))
		for {
			doc, err := reader.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			obj, _, err := decoder.Decode(doc, nil, nil)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			app, ok := obj.(*demov1alpha1.App)
			if !ok {
				return nil, fmt.Errorf("%s: expected an App, found %T", name, obj)
			}
			apps = append(apps, app)
		}
	}
	return apps, nil
}

// SeedApps creates the Apps in namespace (their own namespace wins when set) and, for each,
// podsPerApp pods labelled app=<selector> and SeededLabel=true. Objects that already exist are
// left as they are, so seeding twice is harmless. It returns the Apps as created.
func SeedApps(ctx context.Context, c client.Client, namespace string, apps []*demov1alpha1.App, podsPerApp int) ([]*demov1alpha1.App, error) {
	created := make([]*demov1alpha1.App, 0, len(apps))
	for _, sample := range apps {
		app := sample.DeepCopy()
		if app.Namespace == "" {
			app.Namespace = namespace
		}
		if err := c.Create(ctx, app); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating App %s/%s: %w", app.Namespace, app.Name, err)
		}
		for i := range podsPerApp {
			pod := NewPod(app.Namespace, fmt.Sprintf("%s-%d", app.EffectiveSelector(), i), app.EffectiveSelector())
			if err := c.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
				return nil, fmt.Errorf("creating pod %s/%s: %w", pod.Namespace, pod.Name, err)
			}
		}
		created = append(created, app)
	}
	return created, nil
}

// NewPod returns an unscheduled pod labelled app=<appLabel> and SeededLabel=true.
func NewPod(namespace, name, appLabel string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace,
			Name:      name,
			Labels:    map[string]string{"app": appLabel, SeededLabel: "true"},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:  "main",
				Image: "registry.k8s.io/pause:3.10",
			}},
		},
	}
}

// seededPods returns the pods devcluster created in namespace ("" for all), sorted by
// namespace and name.
func seededPods(ctx context.Context, c client.Client, namespace string) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{SeededLabel: "true"}); err != nil {
		return nil, err
	}
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return pods.Items, nil
}
