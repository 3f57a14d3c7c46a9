# Image URL to use all building/pushing image targets
IMG ?= controller:latest
# YEAR defines the year value used for substituting the YEAR placeholder in the boilerplate header.
YEAR ?= $(shell date +%Y)

# Get the currently used golang install path (in GOPATH/bin, unless GOBIN is set)
ifeq (,$(shell go env GOBIN))
GOBIN=$(shell go env GOPATH)/bin
else
GOBIN=$(shell go env GOBIN)
endif

# CONTAINER_TOOL defines the container tool to be used for building images.
# Be aware that the target commands are only tested with Docker which is
# scaffolded by default. However, you might want to replace it to use other
# tools. (i.e. podman)
CONTAINER_TOOL ?= docker

# Setting SHELL to bash allows bash commands to be executed by recipes.
# Options are set to exit when a recipe line exits non-zero or a piped command fails.
SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec

.PHONY: all
all: build

##@ General

# The help target prints out all targets with their descriptions organized
# beneath their categories. The categories are represented by '##@' and the
# target descriptions by '##'. The awk command is responsible for reading the
# entire set of makefiles included in this invocation, looking for lines of the
# file as xyz: ## something, and then pretty-format the target and help. Then,
# if there's a line with ##@ something, that gets pretty-printed as a category.
# More info on the usage of ANSI control characters for terminal formatting:
# https://en.wikipedia.org/wiki/ANSI_escape_code#SGR_parameters
# More info on the awk command:
# http://linuxcommand.org/lc3_adv_awk.php

.PHONY: help
help: ## Display this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-15s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: controller-gen ## Generate WebhookConfiguration, ClusterRole and CustomResourceDefinition objects.
	"$(CONTROLLER_GEN)" rbac:roleName=manager-role crd webhook paths="./..." output:crd:artifacts:config=config/crd/bases

.PHONY: generate
generate: controller-gen ## Generate code containing DeepCopy, DeepCopyInto, and DeepCopyObject method implementations.
	"$(CONTROLLER_GEN)" object:headerFile="hack/boilerplate.go.txt",year=$(YEAR) paths="./..."

# The benchmark harness (gonum plot) and the manifests test (kustomize) are modules of their own,
# so that the library's go.mod, the one users require, lists only what pkg/... and the demo
# operator import. Each requires the root module through `replace ... => ../..`; the targets
# below run in every module. (`go work init . $(NESTED_MODULES)` gives an editor one workspace.)
NESTED_MODULES = test/bench test/manifests cmd/kubebuilder-deltacache

.PHONY: fmt
fmt: ## Run go fmt against code.
	go fmt ./...
	@for m in $(NESTED_MODULES); do (cd "$$m" && go fmt ./...); done

.PHONY: vet
vet: ## Run go vet against code.
	go vet ./...
	@for m in $(NESTED_MODULES); do (cd "$$m" && go vet ./...); done

.PHONY: tidy
tidy: ## Run go mod tidy in the root module and in each nested module.
	go mod tidy
	@for m in $(NESTED_MODULES); do (cd "$$m" && go mod tidy); done

.PHONY: test
test: manifests generate fmt vet envtest ## Run unit and envtest suites (race detector on) against the control plane `make envtest` builds.
	@assets="$$(bash hack/envtest-binaries.sh "$(LOCALBIN)")"; \
	echo "KUBEBUILDER_ASSETS=$$assets"; \
	KUBEBUILDER_ASSETS="$$assets" go test -race $$(go list ./... | grep -v /e2e) -coverprofile cover.out; \
	for m in $(NESTED_MODULES); do \
		(cd "$$m" && KUBEBUILDER_ASSETS="$$assets" go test -race ./...); \
	done; \
	echo "Again with compact storage off (DELTACACHE_STORAGE=Decoded): the cache and the demo operator"; \
	echo "(not the combination suite: its cells set their storage themselves, so it would run the same)"; \
	KUBEBUILDER_ASSETS="$$assets" DELTACACHE_STORAGE=Decoded go test -race -count=1 -skip '^TestCombination$$' \
		./pkg/cache/... ./internal/controller/...

# The e2e suite runs the manager binary as a separate process against a real kube-apiserver
# and etcd (the binaries `make envtest` builds): no Kind and no container engine needed.
.PHONY: test-e2e
test-e2e: manifests generate fmt vet envtest build ## Run the end-to-end suite: the built manager against a local control plane.
	@assets="$$(bash hack/envtest-binaries.sh "$(LOCALBIN)")"; \
	KUBEBUILDER_ASSETS="$$assets" MANAGER_BINARY="$(LOCALBIN)/manager" go test -tags=e2e ./test/e2e/ -v -ginkgo.v -timeout 15m; \
	echo "Again with compact storage off (DELTACACHE_STORAGE=Decoded)"; \
	KUBEBUILDER_ASSETS="$$assets" MANAGER_BINARY="$(LOCALBIN)/manager" DELTACACHE_STORAGE=Decoded go test -count=1 -tags=e2e ./test/e2e/ -timeout 15m
	@MANAGER_BINARY="$(LOCALBIN)/manager" $(MAKE) --no-print-directory test-sharding
	@$(MAKE) --no-print-directory test-e2e-plugin

# The sharding suite (test/sharding, build tag `sharding`) runs three demo managers as processes
# with distinct --shard-identity values on one control plane, once with kube-apiserver's
# ShardedListAndWatch feature gate and once without: 30k pods and 300 Apps split by namespace,
# 20k ConfigMaps split by uid among three caches, a replica SIGKILLed and restarted, the reconcile
# logs checked for overlaps, and the bytes read from the API server compared with one unsharded
# manager's (about 6 minutes on 2 cores). It builds the manager unless MANAGER_BINARY is set;
# SHARDING_SEED replays the randomized App changes. docs/sharding.md has the figures.
.PHONY: test-sharding
test-sharding: envtest ## Run the multi-process sharding suite (three managers, both gate settings).
	@assets="$$(bash hack/envtest-binaries.sh "$(LOCALBIN)")"; \
	KUBEBUILDER_ASSETS="$$assets" go test -tags=sharding ./test/sharding/ -count=1 -v -timeout 30m

# The kubebuilder plugin's e2e suite installs kubebuilder v4.16.0 (pinned in the suite) with `go install`
# (cached in ~/.cache/deltacache/kubebuilder/) and the plugin as the README says, scaffolds
# projects with it (init, edit, create api) and runs their own `make test`, which takes the
# control plane from the envtest cache `make envtest` fills.
.PHONY: test-e2e-plugin
test-e2e-plugin: envtest ## Run the kubebuilder plugin's end-to-end suite: scaffold projects and run their make test.
	go test -tags=e2e ./test/e2e/kubebuilder/ -v -count=1 -timeout 40m

# `make soak` runs three sharded replicas of the cache (one Lease ring; Pods and Apps by namespace,
# ConfigMaps by uid; the consistency check on), as a user that is not an admin, on the local
# control plane behind a fault-injecting TCP proxy (connection cuts, blackholes, a slow link,
# kube-apiserver restarts on the same etcd, etcd compactions, RBAC revoked and restored for one
# kind, the App CRD deleted and re-created, a replica stopped (SIGTERM or SIGKILL) and started
# again on its snapshots) while writers churn Pods, ConfigMaps and Apps, then checks that the
# ring settled, that together the stores hold every object once, each replica exactly its share,
# that every handler converged to the server, that the consistency check found no drift, and that
# no key was held by two replicas at a sampled moment nor reconciled by two at once; it writes
# docs/reliability.md (one row per seed kept, the row replaced under a lock: two seeds may run
# side by side). SOAK_DURATION (default 10m), SOAK_SEED (replays a run), SOAK_OBJECTS (per kind,
# default 5000), SOAK_RATE (writes/s, default 200), SOAK_WRITERS (parallel writers, default 10),
# SOAK_REPLICAS (default 3), SOAK_TIMEOUT (go test's -timeout; default SOAK_DURATION + 30m).
# `make test` runs it for 90 seconds at a lower rate.
SOAK_DURATION ?= 10m
SOAK_OBJECTS ?= 5000
SOAK_RATE ?= 200
SOAK_TIMEOUT ?= $(shell echo "$(SOAK_DURATION)" | awk '{ s = 0; while (match($$0, /^[0-9.]+(h|ms|m|s)/)) { \
	u = substr($$0, 1, RLENGTH); n = u + 0; if (u ~ /h$$/) s += n * 3600; else if (u ~ /ms$$/) s += n / 1000; \
	else if (u ~ /m$$/) s += n * 60; else s += n; $$0 = substr($$0, RLENGTH + 1) } printf "%ds", s + 1800 }')
.PHONY: soak
soak: envtest ## Fault-injection soak (SOAK_DURATION, SOAK_SEED); writes docs/reliability.md.
	@assets="$$(bash hack/envtest-binaries.sh "$(LOCALBIN)")"; \
	KUBEBUILDER_ASSETS="$$assets" SOAK_DURATION="$(SOAK_DURATION)" SOAK_SEED="$(SOAK_SEED)" \
	SOAK_OBJECTS="$(SOAK_OBJECTS)" SOAK_RATE="$(SOAK_RATE)" SOAK_REPORT="$(CURDIR)/docs/reliability.md" \
	go test ./test/soak/ -run TestSoak -count=1 -v -timeout $(SOAK_TIMEOUT)

# `make bench` measures deltacache against controller-runtime's cache and client-go's informer and
# writes docs/benchmarks.md and docs/benchmarks.png: 20k pods on an envtest API server, the same
# pods on a second one with ShardedListAndWatch for 1–4 sharded replicas (section E), the demo
# operator's manager on each cache under pod churn on a third (section O), then in-process
# workloads (about 30 minutes on 2 cores). BENCH_QUICK=1 runs small sizes once and writes to
# bin/bench-quick/ instead. BENCH_ARGS adds flags of test/bench/cmd (e.g. -runs 10).
.PHONY: bench
bench: envtest $(LOCALBIN) ## Benchmark deltacache against its peers; writes docs/benchmarks.md (BENCH_QUICK=1: quick run).
	cd test/bench && go build -o "$(LOCALBIN)/bench" ./cmd
	@assets="$$(bash hack/envtest-binaries.sh "$(LOCALBIN)")"; \
	KUBEBUILDER_ASSETS="$$assets" "$(LOCALBIN)/bench" $(if $(BENCH_QUICK),-quick) \
		-command "make bench$(if $(BENCH_QUICK), BENCH_QUICK=1)$(if $(BENCH_ARGS), BENCH_ARGS='$(BENCH_ARGS)')" $(BENCH_ARGS)

.PHONY: lint
lint: golangci-lint ## Run golangci-lint linter
	"$(GOLANGCI_LINT)" run
	@for m in $(NESTED_MODULES); do (cd "$$m" && "$(GOLANGCI_LINT)" run); done

.PHONY: lint-fix
lint-fix: golangci-lint ## Run golangci-lint linter and perform fixes
	"$(GOLANGCI_LINT)" run --fix
	@for m in $(NESTED_MODULES); do (cd "$$m" && "$(GOLANGCI_LINT)" run --fix); done

.PHONY: lint-config
lint-config: golangci-lint ## Verify golangci-lint linter configuration
	"$(GOLANGCI_LINT)" config verify

##@ Build

.PHONY: build
build: manifests generate fmt vet ## Build manager binary.
	go build -o bin/manager ./cmd

# With a kubeconfig (KUBECONFIG, ~/.kube/config or in-cluster) the manager runs against that
# cluster. Without one it starts a local control plane, installs the CRDs, seeds the samples and
# plays the kubelet for the seeded pods; Ctrl-C stops everything. RUN_ARGS adds flags.
.PHONY: run
run: build envtest ## Run the manager from your host (local control plane when no kubeconfig).
	@assets="$$(bash hack/envtest-binaries.sh "$(LOCALBIN)")"; \
	KUBEBUILDER_ASSETS="$$assets" exec "$(LOCALBIN)/manager" $(RUN_ARGS)

# If you wish to build the manager image targeting other platforms you can use the --platform flag.
# (i.e. docker build --platform linux/arm64). However, you must enable docker buildKit for it.
# More info: https://docs.docker.com/develop/develop-images/build_enhancements/
# Override BASE_IMAGE to build from another registry, e.g.
# make docker-build IMG=<img> BASE_IMAGE=docker.io/library/golang:1.26
.PHONY: docker-build
docker-build: ## Build docker image with the manager.
	$(CONTAINER_TOOL) build $(if $(BASE_IMAGE),--build-arg BASE_IMAGE=$(BASE_IMAGE)) -t ${IMG} .

.PHONY: docker-push
docker-push: ## Push docker image with the manager.
	$(CONTAINER_TOOL) push ${IMG}

# PLATFORMS defines the target platforms for the manager image be built to provide support to multiple
# architectures. (i.e. make docker-buildx IMG=myregistry/mypoperator:0.0.1). To use this option you need to:
# - be able to use docker buildx. More info: https://docs.docker.com/build/buildx/
# - have enabled BuildKit. More info: https://docs.docker.com/develop/develop-images/build_enhancements/
# - be able to push the image to your registry (i.e. if you do not set a valid value via IMG=<myregistry/image:<tag>> then the export will fail)
# To adequately provide solutions that are compatible with multiple platforms, you should consider using this option.
PLATFORMS ?= linux/arm64,linux/amd64,linux/s390x,linux/ppc64le
.PHONY: docker-buildx
docker-buildx: ## Build and push docker image for the manager for cross-platform support
	# copy existing Dockerfile and insert --platform=${BUILDPLATFORM} into Dockerfile.cross, and preserve the original Dockerfile
	sed -e '1 s/\(^FROM\)/FROM --platform=\$$\{BUILDPLATFORM\}/; t' -e ' 1,// s//FROM --platform=\$$\{BUILDPLATFORM\}/' Dockerfile > Dockerfile.cross
	- $(CONTAINER_TOOL) buildx create --name deltacache-builder
	$(CONTAINER_TOOL) buildx use deltacache-builder
	- $(CONTAINER_TOOL) buildx build --push --platform=$(PLATFORMS) $(if $(BASE_IMAGE),--build-arg BASE_IMAGE=$(BASE_IMAGE)) --tag ${IMG} -f Dockerfile.cross .
	- $(CONTAINER_TOOL) buildx rm deltacache-builder
	rm Dockerfile.cross

.PHONY: build-installer
build-installer: manifests generate kustomize ## Generate a consolidated YAML with CRDs and deployment.
	mkdir -p dist
	cd config/manager && "$(KUSTOMIZE)" edit set image controller=${IMG}
	"$(KUSTOMIZE)" build config/default > dist/install.yaml

##@ Deployment

ifndef ignore-not-found
  ignore-not-found = false
endif

.PHONY: install
install: manifests kustomize ## Install CRDs into the K8s cluster specified in ~/.kube/config.
	@out="$$( "$(KUSTOMIZE)" build config/crd 2>/dev/null || true )"; \
	if [ -n "$$out" ]; then echo "$$out" | "$(KUBECTL)" apply -f -; else echo "No CRDs to install; skipping."; fi

.PHONY: uninstall
uninstall: manifests kustomize ## Uninstall CRDs from the K8s cluster specified in ~/.kube/config. Call with ignore-not-found=true to ignore resource not found errors during deletion.
	@out="$$( "$(KUSTOMIZE)" build config/crd 2>/dev/null || true )"; \
	if [ -n "$$out" ]; then echo "$$out" | "$(KUBECTL)" delete --ignore-not-found=$(ignore-not-found) -f -; else echo "No CRDs to delete; skipping."; fi

.PHONY: deploy
deploy: manifests kustomize ## Deploy controller to the K8s cluster specified in ~/.kube/config.
	cd config/manager && "$(KUSTOMIZE)" edit set image controller=${IMG}
	"$(KUSTOMIZE)" build config/default | "$(KUBECTL)" apply -f -

.PHONY: undeploy
undeploy: kustomize ## Undeploy controller from the K8s cluster specified in ~/.kube/config. Call with ignore-not-found=true to ignore resource not found errors during deletion.
	"$(KUSTOMIZE)" build config/default | "$(KUBECTL)" delete --ignore-not-found=$(ignore-not-found) -f -

##@ Dependencies

## Location to install dependencies to
LOCALBIN ?= $(shell pwd)/bin
$(LOCALBIN):
	mkdir -p "$(LOCALBIN)"

## Tool Binaries
KUBECTL ?= kubectl
KIND ?= kind
KUSTOMIZE ?= $(LOCALBIN)/kustomize
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen
GOLANGCI_LINT = $(LOCALBIN)/golangci-lint

## Tool Versions
KUSTOMIZE_VERSION ?= v5.8.1
CONTROLLER_TOOLS_VERSION ?= v0.22.0

#ENVTEST_K8S_VERSION is the Kubernetes version of the kube-apiserver (and the etcd it pins) that
# `make envtest` builds from the Go module proxy; setup-envtest cannot download on our machines.
ENVTEST_K8S_VERSION ?= 1.37.2
export ENVTEST_K8S_VERSION

GOLANGCI_LINT_VERSION ?= v2.13.1
.PHONY: kustomize
kustomize: $(KUSTOMIZE) ## Download kustomize locally if necessary.
$(KUSTOMIZE): $(LOCALBIN)
	$(call go-install-tool,$(KUSTOMIZE),sigs.k8s.io/kustomize/kustomize/v5,$(KUSTOMIZE_VERSION))

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN) ## Download controller-gen locally if necessary.
$(CONTROLLER_GEN): $(LOCALBIN)
	$(call go-install-tool,$(CONTROLLER_GEN),sigs.k8s.io/controller-tools/cmd/controller-gen,$(CONTROLLER_TOOLS_VERSION))

.PHONY: envtest
envtest: ## Build kube-apiserver and etcd for envtest into ~/.cache/deltacache/envtest/ (10–15 minutes cold, once per machine).
	@ENVTEST_K8S_VERSION="$(ENVTEST_K8S_VERSION)" bash hack/envtest-binaries.sh "$(LOCALBIN)" >/dev/null

.PHONY: golangci-lint
golangci-lint: $(GOLANGCI_LINT) ## Download golangci-lint locally if necessary.
$(GOLANGCI_LINT): $(LOCALBIN)
	$(call go-install-tool,$(GOLANGCI_LINT),github.com/golangci/golangci-lint/v2/cmd/golangci-lint,$(GOLANGCI_LINT_VERSION))
	@test -f .custom-gcl.yml && { \
		echo "Building custom golangci-lint with plugins..." && \
		$(GOLANGCI_LINT) custom --destination $(LOCALBIN) --name golangci-lint-custom && \
		mv -f $(LOCALBIN)/golangci-lint-custom $(GOLANGCI_LINT); \
	} || true

# go-install-tool will 'go install' any package with custom target and name of binary, if it doesn't exist
# $1 - target path with name of binary
# $2 - package url which can be installed
# $3 - specific version of package
define go-install-tool
@[ -f "$(1)-$(3)" ] && [ "$$(readlink -- "$(1)" 2>/dev/null)" = "$(1)-$(3)" ] || { \
set -e; \
package=$(2)@$(3) ;\
echo "Downloading $${package}" ;\
rm -f "$(1)" ;\
GOBIN="$(LOCALBIN)" go install $${package} ;\
mv "$(LOCALBIN)/$$(basename "$(1)")" "$(1)-$(3)" ;\
} ;\
ln -sf "$$(realpath "$(1)-$(3)")" "$(1)"
endef

define gomodver
$(shell go list -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' $(1) 2>/dev/null)
endef
