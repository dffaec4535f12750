#!/usr/bin/env bash
# The e2e tests on a multi-node kind cluster (tests/e2e/cluster/kind.sh): up, the tests, down.
# The cluster comes down however this script ends (a failed `up` or test included), unless
# QDMESH_E2E_KEEP=1.
#
#   bash tests/e2e/run-kind.sh            the tests that need several nodes (what CI runs): only
#                                         the router and operator images are loaded
#   bash tests/e2e/run-kind.sh --all      the whole e2e suite, every image of build/images
#   bash tests/e2e/run-kind.sh -- ARGS    extra pytest arguments after --
#
# Needs root, Docker, and what kind.sh build needs (docs/e2e.md); the images in build/images
# (.ci/setup.d/35-images.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."

# The tests that need more than one node; each skips where fewer than two nodes take pods.
MULTI_NODE=(tests/e2e/test_product_multi_node.py tests/e2e/test_product_node_loss.py)
version=$(sed -n 's/^version *= *"\(.*\)"/\1/p' pyproject.toml | head -1)
tests=("${MULTI_NODE[@]}")
archives=(build/images/qdmesh-router-"$version".tar build/images/qdmesh-operator-"$version".tar)
if [ "${1:-}" = --all ]; then
    shift
    tests=(tests/e2e)
    shopt -s nullglob
    archives=(build/images/*.tar)
fi
[ "${1:-}" = -- ] && shift

start=$SECONDS
take_down() {
    if [ "${QDMESH_E2E_KEEP:-}" != 1 ]; then
        local down=$SECONDS
        bash tests/e2e/cluster/kind.sh down || true
        echo "== e2e on kind: down in $((SECONDS - down)) s"
    fi
}
trap take_down EXIT
# A CI timeout or Ctrl-C ends the script through exit, so the EXIT trap takes the cluster down.
trap 'exit 143' TERM
trap 'exit 130' INT

# kind.sh up loads build/images/*.tar; it is given only the archives these tests need.
QDMESH_KIND_ARCHIVES="${archives[*]}" bash tests/e2e/cluster/kind.sh up > /dev/null
echo "== e2e on kind: up in $((SECONDS - start)) s"
QDMESH_E2E=1 QDMESH_E2E_KUBECONFIG=$(bash tests/e2e/cluster/kind.sh kubeconfig)
export QDMESH_E2E QDMESH_E2E_KUBECONFIG QDMESH_E2E_IMAGE_LOADER=kind

set +e
tests_start=$SECONDS
python3 -m pytest "${tests[@]}" -q "$@"
status=$?
set -e
echo "== e2e on kind: tests in $((SECONDS - tests_start)) s (pytest exit $status)"
take_down
trap - EXIT
echo "== e2e on kind: finished in $((SECONDS - start)) s"
exit "$status"
