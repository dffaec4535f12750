#!/usr/bin/env bash
# A kind cluster for the e2e suite on machines with Docker (contributors' laptops; not used in
# CI, whose machines cannot pull kind's node image).
#
#   kind.sh up           create the cluster "qdmesh", load build/images/*.tar, write its kubeconfig
#   kind.sh load FILE... load image archives (docker save / OCI) into the nodes
#   kind.sh down         delete the cluster
#   kind.sh kubeconfig   print the kubeconfig path
#
# kind itself comes from `go install sigs.k8s.io/kind@$QDMESH_KIND_VERSION`. Then:
#   export QDMESH_E2E_KUBECONFIG=$(tests/e2e/cluster/kind.sh kubeconfig); bash tests/e2e/run.sh
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
KIND_VERSION=${QDMESH_KIND_VERSION:-v0.33.0}
CLUSTER=${QDMESH_KIND_CLUSTER:-qdmesh}
STATE=${QDMESH_KIND_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/qdmesh-kind}
KUBECONFIG_PATH=$STATE/$CLUSTER.kubeconfig

log() { echo "[kind $(date -u +%H:%M:%S)] $*" >&2; }

kind_bin() {
    local bin
    bin=$(command -v kind || true)
    if [ -z "$bin" ]; then
        bin="$(go env GOPATH)/bin/kind"
        if [ ! -x "$bin" ]; then
            log "installing kind $KIND_VERSION with go install"
            go install "sigs.k8s.io/kind@$KIND_VERSION"
        fi
    fi
    echo "$bin"
}

load() {
    local kind file
    kind=$(kind_bin)
    for file in "$@"; do
        [ -f "$file" ] || { log "no image archive $file"; exit 1; }
        log "loading $(basename "$file")"
        "$kind" load image-archive "$file" --name "$CLUSTER"
    done
}

up() {
    local kind start=$SECONDS
    command -v docker >/dev/null && docker info >/dev/null 2>&1 || { log "kind needs a running Docker engine"; exit 1; }
    kind=$(kind_bin)
    mkdir -p "$STATE"
    if ! grep -qx "$CLUSTER" <<<"$("$kind" get clusters 2>/dev/null)"; then
        # QDMESH_KIND_NODE_IMAGE picks a Kubernetes version (kindest/node:v1.36.x); kind's default otherwise.
        "$kind" create cluster --name "$CLUSTER" --wait 120s ${QDMESH_KIND_NODE_IMAGE:+--image "$QDMESH_KIND_NODE_IMAGE"}
    fi
    "$kind" get kubeconfig --name "$CLUSTER" > "$KUBECONFIG_PATH"
    shopt -s nullglob
    local archives=("$REPO"/build/images/*.tar)
    [ "${#archives[@]}" -eq 0 ] || load "${archives[@]}"
    log "cluster $CLUSTER up in $((SECONDS - start)) s; export KUBECONFIG=$KUBECONFIG_PATH"
    echo "$KUBECONFIG_PATH"
}

case "${1:-}" in
    up) up ;;
    load) shift; load "$@" ;;
    down) "$(kind_bin)" delete cluster --name "$CLUSTER"; rm -f "$KUBECONFIG_PATH" ;;
    kubeconfig) echo "$KUBECONFIG_PATH" ;;
    *) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
