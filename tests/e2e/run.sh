#!/usr/bin/env bash
# Run the e2e suite. Without QDMESH_E2E_KUBECONFIG: bring up the local cluster (building the
# binaries first if needed), load build/images/*.tar into it, run the suite, and take the
# cluster down again (QDMESH_E2E_KEEP=1 leaves it running). With QDMESH_E2E_KUBECONFIG (kind,
# or any cluster): just run the suite against it. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/../.."

started_here=""
start=$SECONDS
# The cluster comes down however this script ends (a failed import included).
take_down() {
    if [ -n "$started_here" ] && [ "${QDMESH_E2E_KEEP:-}" != 1 ]; then
        bash tests/e2e/cluster/local-cluster.sh down
    fi
}
trap take_down EXIT

if [ -z "${QDMESH_E2E_KUBECONFIG:-}" ]; then
    started_here=yes
    QDMESH_E2E_KUBECONFIG=$(bash tests/e2e/cluster/local-cluster.sh up)
    echo "== e2e: local cluster up in $((SECONDS - start)) s"
    shopt -s nullglob
    archives=(build/images/*.tar)
    # A failed import or a node left tainted is reported there; the suite still runs, and its
    # first test (test_nodes_ready) fails on it with the taints and conditions.
    [ "${#archives[@]}" -eq 0 ] || bash tests/e2e/cluster/local-cluster.sh import "${archives[@]}" \
        || echo "== e2e: image import or the node check after it failed (see above)"
fi
export QDMESH_E2E=1 QDMESH_E2E_KUBECONFIG

set +e
python3 -m pytest tests/e2e -q "$@"
status=$?
set -e
take_down
started_here=""
echo "== e2e: finished in $((SECONDS - start)) s (pytest exit $status)"
exit "$status"
