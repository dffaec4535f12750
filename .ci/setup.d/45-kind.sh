#!/usr/bin/env bash
# The kind node image for the multi-node e2e tests (tests/e2e/run-kind.sh): built here from
# Debian's packages, the Go module proxy and build.sh's Kubernetes (40-kubernetes.sh), cached by
# content under ${QDMESH_KIND_CACHE:-/var/cache/qdmesh/kind} (cold: a few minutes, see
# docs/e2e.md; warm: about a second). debootstrap and Docker come from 30-helm-tools.sh, the
# running daemon from images/start-dockerd.sh. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/../.."

bash images/start-dockerd.sh
start=$(date +%s)
image=$(bash tests/e2e/cluster/kind.sh build)
echo "setup kind: node image $image ready in $(( $(date +%s) - start )) s"
