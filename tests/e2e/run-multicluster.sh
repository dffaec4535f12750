#!/usr/bin/env bash
# The two-cluster stage: two single-node kind clusters (tests/e2e/cluster/kind.sh), "east" and
# "west", on kind's one Docker network, so that a pod in one reaches a NodePort of the other at
# the other's node container address; then `pytest tests/e2e/multicluster`; then both down,
# however this script ends (a failed `up` or test included), unless QDMESH_E2E_KEEP=1.
#
#   bash tests/e2e/run-multicluster.sh            up, the tests, down
#   bash tests/e2e/run-multicluster.sh -- ARGS    extra pytest arguments after --
#
# The clusters are created at the same time (QDMESH_MC_SERIAL=1: one after the other). The
# router, operator and broker images are loaded, from $QDMESH_IMAGES_DIR (default build/images).
# Needs root, Docker, and what kind.sh build needs (docs/e2e.md).
set -euo pipefail
cd "$(dirname "$0")/../.."

EAST=${QDMESH_MC_EAST:-qdmesh-east}
WEST=${QDMESH_MC_WEST:-qdmesh-west}
KIND=tests/e2e/cluster/kind.sh
images=${QDMESH_IMAGES_DIR:-build/images}
version=$(sed -n 's/^version *= *"\(.*\)"/\1/p' pyproject.toml | head -1)
# The broker (RabbitMQ) too: a link route in one cluster leads to it from the other.
archives="$images/qdmesh-router-$version.tar $images/qdmesh-operator-$version.tar $images/qdmesh-e2e-broker-$version.tar"
[ "${1:-}" = -- ] && shift
LOGS=$(mktemp -d /tmp/qdmesh-multicluster.XXXXXX)

# kind.sh for one cluster: single node (the control plane takes pods when there is no worker).
kind_sh() {
    local cluster=$1; shift
    QDMESH_KIND_CLUSTER=$cluster QDMESH_KIND_WORKERS=0 QDMESH_KIND_ARCHIVES=$archives bash "$KIND" "$@"
}

start=$SECONDS
take_down() {
    if [ "${QDMESH_E2E_KEEP:-}" != 1 ]; then
        local down=$SECONDS
        # One after the other: kind.sh down removes kind's network once the last cluster is gone.
        kind_sh "$EAST" down >/dev/null 2>&1 || true
        kind_sh "$WEST" down >/dev/null 2>&1 || true
        echo "== two clusters: down in $((SECONDS - down)) s"
    else
        echo "== two clusters kept: $EAST, $WEST (QDMESH_E2E_KEEP=1)"
    fi
    rm -rf "$LOGS"
}
trap take_down EXIT
# A CI timeout or Ctrl-C ends the script through exit, so the EXIT trap takes the clusters down.
trap 'exit 143' TERM
trap 'exit 130' INT

for f in $archives; do [ -f "$f" ] || { echo "no image archive $f (.ci/setup.d/35-images.sh)" >&2; exit 1; }; done
# The node image (and kind, and dockerd) once, before the two creations share it.
bash "$KIND" build >/dev/null

# Each cluster's `up` in the background, its log kept for when it fails.
up_one() {
    local cluster=$1
    if kind_sh "$cluster" up >"$LOGS/$cluster.out" 2>"$LOGS/$cluster.log"; then
        echo "== $cluster up in $((SECONDS - start)) s"
    else
        echo "== $cluster: kind.sh up failed:" >&2
        cat "$LOGS/$cluster.log" >&2
        return 1
    fi
}
if [ "${QDMESH_MC_SERIAL:-}" = 1 ]; then
    up_one "$EAST"
    up_one "$WEST"
else
    # West starts once east has made kind's Docker network, so that both use the same one.
    up_one "$EAST" & east_pid=$!
    for _ in $(seq 60); do docker network inspect kind >/dev/null 2>&1 && break; sleep 1; done
    up_one "$WEST" & west_pid=$!
    failed=0
    wait "$east_pid" || failed=1
    wait "$west_pid" || failed=1
    [ "$failed" = 0 ] || exit 1
fi
echo "== two clusters: up in $((SECONDS - start)) s"

QDMESH_E2E=1
QDMESH_E2E_EAST_KUBECONFIG=$(kind_sh "$EAST" kubeconfig)
QDMESH_E2E_WEST_KUBECONFIG=$(kind_sh "$WEST" kubeconfig)
export QDMESH_E2E QDMESH_E2E_EAST_KUBECONFIG QDMESH_E2E_WEST_KUBECONFIG
# The single-cluster fixtures must not find a cluster of their own here.
unset QDMESH_E2E_KUBECONFIG

set +e
tests_start=$SECONDS
python3 -m pytest tests/e2e/multicluster -q "$@"
status=$?
set -e
echo "== two clusters: tests in $((SECONDS - tests_start)) s (pytest exit $status)"
take_down
trap - EXIT
echo "== two clusters: finished in $((SECONDS - start)) s"
exit "$status"
