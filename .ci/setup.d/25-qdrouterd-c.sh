#!/usr/bin/env bash
# The C router, qdrouterd 1.19.0 (the last Apache Qpid Dispatch release), and its upstream tools
# (qdstat-c, qdmanage-c), built from the source archive in the shared peers folder, as a live
# peer: mixed meshes, the upstream tools against qdmesh, and the behaviour tests run against
# both (tests/interop). No package registry here ships it. Idempotent: the build script's stamp
# makes a second run return at once (under a minute cold on 2 cores).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)

# The peers folder sits beside the checkout on the project's machines (../shared/peers); a clone
# elsewhere names it with QDMESH_PEERS.
for peers in "${QDMESH_PEERS:-}" "$repo/../shared/peers" /work/shared/peers; do
    if [ -n "$peers" ] && [ -f "$peers/build-qdrouterd.sh" ]; then
        break
    fi
    peers=""
done
if [ -z "$peers" ]; then
    echo "setup qdrouterd-c: no peers folder (set QDMESH_PEERS to the folder holding build-qdrouterd.sh)" >&2
    exit 1
fi
bash "$peers/build-qdrouterd.sh"
prefix=${QDR_PREFIX:-$HOME/.cache/qdr-1.19.0}
"$prefix/bin/qdrouterd-c" --version | sed 's/^/setup qdrouterd-c: /'
