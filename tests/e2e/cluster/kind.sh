#!/usr/bin/env bash
# A multi-node kind cluster for the e2e suite, made on this machine without a registry: the
# node image and the images it preloads are built here (kind/node.sh: Debian's packages, the
# Go module proxy, build.sh's Kubernetes), and so is kind itself (kind/tools.sh). Cached by
# content under /var/cache/qdmesh/kind: a warm `up` only creates the cluster.
#
#   kind.sh up           create the cluster "qdmesh" (1 control plane + $QDMESH_KIND_WORKERS
#                        workers, default 2), load build/images/*.tar (or the archives named
#                        in $QDMESH_KIND_ARCHIVES), write its kubeconfig
#   kind.sh build        only build (or check) the node image; prints its name
#   kind.sh load FILE... load image archives (docker save / OCI) into the nodes
#   kind.sh down         delete the cluster (node containers, their volumes, the kind network)
#   kind.sh kubeconfig   print the kubeconfig path
#
# QDMESH_KIND_NODE_IMAGE=kindest/node:v1.36.x uses a registry's node image instead (laptops).
# Then: export QDMESH_E2E_KUBECONFIG=$(tests/e2e/cluster/kind.sh kubeconfig); bash tests/e2e/run.sh
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
KIND_VERSION=${QDMESH_KIND_VERSION:-v0.33.0}
CLUSTER=${QDMESH_KIND_CLUSTER:-qdmesh}
STATE=${QDMESH_KIND_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/qdmesh-kind}
KUBECONFIG_PATH=$STATE/$CLUSTER.kubeconfig

log() { echo "[kind $(date -u +%H:%M:%S)] $*" >&2; }

WORKERS=${QDMESH_KIND_WORKERS:-2}
# kind runs `docker` through kind/shim (for machines whose root lacks a capability).
export PATH="$HERE/kind/shim:$PATH"

kind_bin() {
    echo "$(bash "$HERE/kind/tools.sh")/kind"
}

node_image() {
    if [ -n "${QDMESH_KIND_NODE_IMAGE:-}" ]; then echo "$QDMESH_KIND_NODE_IMAGE"; return; fi
    bash "$HERE/kind/node.sh"
}

# kind's cluster config: the node count, and kubeadm settings for the images built here (etcd
# and CoreDNS are build.sh's versions, not kubeadm's defaults) and for cgroup v1 hosts.
write_config() {
    local file=$1 i
    (
        IMAGES_NAMES_ONLY=1
        # shellcheck source=kind/images.sh
        . "$HERE/kind/images.sh"
        cat <<CONFIG
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
nodes:
- role: control-plane
$(for ((i = 0; i < WORKERS; i++)); do echo "- role: worker"; done)
kubeadmConfigPatches:
- |
  kind: ClusterConfiguration
  etcd:
    local:
      imageTag: "$ETCD_TAG"
  dns:
    imageTag: "$COREDNS_TAG"
- |
  kind: KubeletConfiguration
  failCgroupV1: false
  # Mounted Secrets are refreshed at each pod sync: every 10 s rather than the default minute,
  # so tests of files the operator changes at run time (certificates, links) wait less.
  syncFrequency: 10s
  # Images loaded here cannot be pulled again: never garbage-collect them.
  imageGCHighThresholdPercent: 100
  imageGCLowThresholdPercent: 99
CONFIG
    ) > "$file"
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
    local kind image start=$SECONDS
    bash "$REPO/images/start-dockerd.sh" >&2
    kind=$(kind_bin)
    image=$(node_image)
    mkdir -p "$STATE"
    if ! grep -qx "$CLUSTER" <<<"$("$kind" get clusters 2>/dev/null)"; then
        write_config "$STATE/$CLUSTER.yaml"
        log "creating cluster $CLUSTER: 1 control plane, $WORKERS workers, image $image"
        "$kind" create cluster --name "$CLUSTER" --image "$image" --config "$STATE/$CLUSTER.yaml" \
            --kubeconfig "$KUBECONFIG_PATH" --wait 180s ${QDMESH_KIND_RETAIN:+--retain}
    fi
    "$kind" get kubeconfig --name "$CLUSTER" > "$KUBECONFIG_PATH"
    log "nodes Ready in $((SECONDS - start)) s"
    shopt -s nullglob
    local archives=("$REPO"/build/images/*.tar)
    # Loading takes ~20 s per image (each goes to every node): callers that need fewer say which.
    [ -z "${QDMESH_KIND_ARCHIVES:-}" ] || read -r -a archives <<< "$QDMESH_KIND_ARCHIVES"
    [ "${#archives[@]}" -eq 0 ] || load "${archives[@]}"
    log "cluster $CLUSTER up in $((SECONDS - start)) s; export KUBECONFIG=$KUBECONFIG_PATH"
    echo "$KUBECONFIG_PATH"
}

down() {
    local kind
    kind=$(kind_bin)
    "$kind" delete cluster --name "$CLUSTER"
    rm -f "$KUBECONFIG_PATH" "$STATE/$CLUSTER.yaml"
    # kind's Docker network, once no cluster uses it (kind leaves it behind).
    if docker network inspect kind >/dev/null 2>&1 \
        && [ "$(docker network inspect -f '{{len .Containers}}' kind)" = 0 ]; then
        docker network rm kind >/dev/null && log "removed Docker network kind"
    fi
}

case "${1:-}" in
    up) up ;;
    build) node_image ;;
    load) shift; load "$@" ;;
    down) down ;;
    kubeconfig) echo "$KUBECONFIG_PATH" ;;
    *) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
