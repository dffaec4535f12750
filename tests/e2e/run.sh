#!/usr/bin/env bash
# Run the e2e suite. Without QDMESH_E2E_KUBECONFIG: bring up the local cluster (building the
# binaries first if needed), load build/images/*.tar into it, run the suite, and take the
# cluster down again (QDMESH_E2E_KEEP=1 leaves it running). With QDMESH_E2E_KUBECONFIG (kind,
# or any cluster): just run the suite against it. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/../.."

started_here=""
start=$SECONDS
if [ -z "${QDMESH_E2E_KUBECONFIG:-}" ]; then
    QDMESH_E2E_KUBECONFIG=$(bash tests/e2e/cluster/local-cluster.sh up)
    started_here=yes
    echo "== e2e: local cluster up in $((SECONDS - start)) s"
    shopt -s nullglob
    archives=(build/images/*.tar)
    [ "${#archives[@]}" -eq 0 ] || bash tests/e2e/cluster/local-cluster.sh import "${archives[@]}"
fi
export QDMESH_E2E=1 QDMESH_E2E_KUBECONFIG

set +e
python3 -m pytest tests/e2e -q "$@"
status=$?
set -e
if [ -n "$started_here" ] && [ "${QDMESH_E2E_KEEP:-}" != 1 ]; then
    bash tests/e2e/cluster/local-cluster.sh down
fi
echo "== e2e: finished in $((SECONDS - start)) s (pytest exit $status)"
exit "$status"
