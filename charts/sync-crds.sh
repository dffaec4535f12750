#!/usr/bin/env bash
# Copy the CRDs (sources of truth: crds/qdmesh.io_<plural>.yaml) into the chart's crds/.
# Run after changing a CRD; tests/chart checks the copies are identical.
# --check: change nothing, exit 1 and name the files that differ.
set -euo pipefail
cd "$(dirname "$0")/.."
src=crds
dst=charts/qdmesh/crds
check=""
[ "${1:-}" = "--check" ] && check=yes
shopt -s nullglob
sources=("$src"/qdmesh.io_*.yaml)
[ ${#sources[@]} -gt 0 ] || { echo "sync-crds: no $src/qdmesh.io_*.yaml" >&2; exit 1; }
status=0
for f in "${sources[@]}"; do
    target=$dst/$(basename "$f")
    if ! cmp -s "$f" "$target"; then
        if [ -n "$check" ]; then echo "sync-crds: $target differs from $f" >&2; status=1
        else cp "$f" "$target"; echo "sync-crds: updated $target"; fi
    fi
done
for f in "$dst"/qdmesh.io_*.yaml; do
    if [ ! -e "$src/$(basename "$f")" ]; then
        if [ -n "$check" ]; then echo "sync-crds: $f has no source in $src/" >&2; status=1
        else rm "$f"; echo "sync-crds: removed $f"; fi
    fi
done
exit $status
