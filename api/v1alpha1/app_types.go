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

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// AppSpec defines the desired state of App: which pods belong to it and how many of them
// must be ready for it to count as available.
type AppSpec struct {
	// selector is the value of the `app` label carried by the App's pods, in the App's
	// namespace. Empty means the App's own name.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	Selector string `json:"selector,omitempty"`

	// minReady is the number of ready pods at which the App is Available.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	MinReady int32 `json:"minReady,omitempty"`
}

// AppStatus is what the controller last observed of the App's pods.
type AppStatus struct {
	// observedGeneration is the .metadata.generation this status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// pods is the number of pods selected by the App.
	// +optional
	Pods int32 `json:"pods"`

	// ready is the number of selected pods whose Ready condition is True.
	// +optional
	Ready int32 `json:"ready"`

	// phases counts the selected pods per pod phase (Pending, Running, Succeeded, Failed, Unknown).
	// +optional
	Phases map[string]int32 `json:"phases,omitempty"`

	// nodes is the number of distinct nodes (spec.nodeName) the selected pods are assigned to.
	// +optional
	Nodes int32 `json:"nodes"`

	// conditions represent the current state of the App: Available (ready >= minReady) and
	// Progressing (pods exist that are not ready yet).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EffectiveSelector returns the value of the `app` label that selects the App's pods:
// spec.selector, or the App's name when spec.selector is empty.
func (a *App) EffectiveSelector() string {
	if a.Spec.Selector != "" {
		return a.Spec.Selector
	}
	return a.Name
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Selector",type=string,JSONPath=`.spec.selector`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.ready`
// +kubebuilder:printcolumn:name="Pods",type=integer,JSONPath=`.status.pods`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// App groups the pods of one application, found by their `app` label, and reports their
// readiness. It is the demo resource of deltacache.
type App struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is a standard object metadata
	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// spec defines the desired state of App
	// +optional
	Spec AppSpec `json:"spec,omitzero"`

	// status defines the observed state of App
	// +optional
	Status AppStatus `json:"status,omitzero"`
}

// +kubebuilder:object:root=true

// AppList contains a list of App
type AppList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []App `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(SchemeGroupVersion, &App{}, &AppList{})
		return nil
	})
}
