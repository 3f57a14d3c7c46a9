module github.com/deltacache/deltacache/cmd/kubebuilder-deltacache

go 1.26.0

replace github.com/deltacache/deltacache => ../..

require (
	github.com/deltacache/deltacache v0.0.0-00010101000000-000000000000
	golang.org/x/mod v0.41.0
	k8s.io/apimachinery v0.37.2
	sigs.k8s.io/kubebuilder/v4 v4.16.0
	sigs.k8s.io/yaml v1.6.0
)

require (
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/gobuffalo/flect v1.0.3 // indirect
	github.com/spf13/afero v1.15.0 // indirect
	github.com/spf13/pflag v1.0.10 // indirect
	go.yaml.in/yaml/v2 v2.4.4 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/text v0.41.0 // indirect
	golang.org/x/tools v0.49.0 // indirect
	k8s.io/klog/v2 v2.140.0 // indirect
	k8s.io/utils v0.0.0-20260626114624-be93311217bd // indirect
)
