#!/usr/bin/env bash
# Builds kube-apiserver and etcd for envtest from the Go module proxy, because
# setup-envtest cannot download binaries on machines without internet access.
#
# Usage: hack/envtest-binaries.sh
#   Prints on stdout the directory holding kube-apiserver and etcd (the value for
#   KUBEBUILDER_ASSETS): the per-machine cache, <cache>/<version>-<os>-<arch>/, the layout
#   setup-envtest uses. Nothing is copied into the project: kubebuilder sends every file of
#   the project to its plugins, and 140 MB of control plane in bin/ made each of its commands
#   slow. Everything else goes to stderr; on a failure it says which step failed and why.
#   An argument (the BIN_DIR older versions copied into) is accepted and ignored.
#
# Environment:
#   ENVTEST_K8S_VERSION  Kubernetes version to build (default 1.37.2).
#   ETCD_VERSION         etcd server version (default: the one k8s.io/kubernetes pins).
#   DELTACACHE_CACHE_DIR where finished builds are kept for every clone and project on this
#                        machine (default ${XDG_CACHE_HOME:-$HOME/.cache}/deltacache/envtest).
#
# The build happens in a throwaway wrapper module outside the project's go.mod: the
# kubernetes and etcd modules carry replace directives that `go install pkg@version`
# refuses, and a wrapper module ignores a dependency's replaces. A cold build takes
# 10–15 minutes on 2 cores; a warm call is a no-op.
set -euo pipefail

K8S_VERSION="${ENVTEST_K8S_VERSION:-1.37.2}"
K8S_VERSION="${K8S_VERSION#v}"
GOOS="$(go env GOOS)"
GOARCH="$(go env GOARCH)"
PLATFORM="${K8S_VERSION}-${GOOS}-${GOARCH}"
CACHE_ROOT="${DELTACACHE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/deltacache/envtest}"
[[ "$CACHE_ROOT" == /* ]] || CACHE_ROOT="$PWD/$CACHE_ROOT"
CACHED="${CACHE_ROOT}/${PLATFORM}"

log() { echo "envtest-binaries: $*" >&2; }

# Any other failing step (go mod tidy, go build: their own errors are above) is named.
trap 'log "failed (exit $?) at line ${LINENO}: ${BASH_COMMAND}"' ERR

complete() { [[ -x "$1/kube-apiserver" && -x "$1/etcd" ]]; }

if [[ -n "${1:-}" ]] && complete "$1/k8s/${PLATFORM}"; then
  log "$1/k8s/ holds a copy of the control plane that older versions of this script made;" \
    "it is not used any more and slows kubebuilder down (rm -rf $1/k8s)"
fi

if complete "$CACHED"; then
  echo "$CACHED"
  exit 0
fi

mkdir -p "$CACHE_ROOT"
exec 9>"${CACHE_ROOT}/.lock"
if ! flock -w 1800 9; then
  log "timed out waiting for another build holding ${CACHE_ROOT}/.lock"
  exit 1
fi

if ! complete "$CACHED"; then
  export GOWORK=off GOFLAGS=-mod=mod GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
  work="$(mktemp -d "${TMPDIR:-/tmp}/deltacache-envtest.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  log "building kube-apiserver v${K8S_VERSION} and etcd from the Go module proxy in ${work} (10–15 minutes cold on 2 cores)"

  # `go mod download -json` reports a failure in the JSON's Error field (stdout) and exits 1;
  # read both before deciding, so that the go command's reason reaches the user.
  download="$(cd "$work" && go mod download -json "k8s.io/kubernetes@v${K8S_VERSION}" 2>"$work/download.err")" || true
  gomod="$(sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p' <<<"$download")"
  if [[ -z "$gomod" || ! -f "$gomod" ]]; then
    reason="$(sed -n 's/^[[:space:]]*"Error": "\(.*\)",*$/\1/p' <<<"$download")"
    reason="${reason:-$(cat "$work/download.err")}"
    log "could not download k8s.io/kubernetes@v${K8S_VERSION} from the Go module proxy: ${reason:-no reason given}"
    log "what to do: check that this machine reaches the module proxy (go env GOPROXY: $(go env GOPROXY))" \
      "and that ${K8S_VERSION} is a Kubernetes release it serves (ENVTEST_K8S_VERSION=<release> picks" \
      "another), or put kube-apiserver and etcd built elsewhere into ${CACHED}/"
    exit 1
  fi
  if [[ -z "${ETCD_VERSION:-}" ]]; then
    ETCD_VERSION="$(awk '$1 == "go.etcd.io/etcd/server/v3" { print $2; exit }' "$gomod")"
  fi
  staging_version="v0.${K8S_VERSION#1.}"
  log "etcd ${ETCD_VERSION}, staging modules ${staging_version}"

  {
    echo "module deltacache.io/envtest-binaries"
    echo
    echo "go $(go env GOVERSION | sed 's/^go//; s/\([0-9]*\.[0-9]*\).*/\1/').0"
    echo
    echo "require ("
    echo "	k8s.io/kubernetes v${K8S_VERSION}"
    echo "	go.etcd.io/etcd/server/v3 ${ETCD_VERSION}"
    echo ")"
    echo
    # Every staging module k8s.io/kubernetes replaces with ./staging/... is published
    # on its own as v0.<minor>.<patch>.
    awk '$2 == "=>" && $3 ~ /^\.\/staging\// { printf "replace %s => %s '"${staging_version}"'\n", $1, $1 }' "$gomod"
  } >"$work/go.mod"
  cat >"$work/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
GO
  (cd "$work" && go mod tidy >&2)

  out="$work/out"
  mkdir -p "$out"
  minor="${K8S_VERSION#1.}"; minor="${minor%%.*}"
  ldflags="-s -w"
  ldflags+=" -X k8s.io/component-base/version.gitVersion=v${K8S_VERSION}"
  ldflags+=" -X k8s.io/component-base/version.gitMajor=1"
  ldflags+=" -X k8s.io/component-base/version.gitMinor=${minor}"
  ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"
  start=$SECONDS
  (cd "$work" && go build -ldflags "$ldflags" -o "$out/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver)
  log "kube-apiserver built in $((SECONDS - start))s"
  (cd "$work" && go build -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3)
  log "etcd built in $((SECONDS - start))s total"

  rm -rf "${CACHED}.tmp"
  mv "$out" "${CACHED}.tmp"
  rm -rf "$CACHED"
  mv "${CACHED}.tmp" "$CACHED"
fi

echo "$CACHED"
