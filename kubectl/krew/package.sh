#!/usr/bin/env bash
# Package the krew launcher as build/krew/kubectl-qdstat-VERSION.tar.gz and write the krew
# manifest build/krew/qdstat.yaml with its sha256 (from qdstat.yaml.in).
#   kubectl/krew/package.sh [BASE_URL]   (BASE_URL: where the archive will be published)
set -euo pipefail
cd "$(dirname "$0")/../.."
version=$(sed -n 's/^version *= *"\(.*\)"/\1/p' pyproject.toml | head -1)
base_url=${1:-https://github.com/qdmesh/qdmesh/releases/download/v$version}
out=${QDMESH_KREW_OUT:-build/krew}
mkdir -p "$out"
archive=$out/kubectl-qdstat-$version.tar.gz
# Reproducible archive: fixed order, owner and time, so the sha256 only changes with content.
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@1700000000 \
    -C kubectl/krew -cf - kubectl-qdstat | gzip -n >"$archive"
sha=$(sha256sum "$archive" | cut -d' ' -f1)
sed -e "s|@VERSION@|$version|g" -e "s|@URI@|$base_url/kubectl-qdstat-$version.tar.gz|g" \
    -e "s|@SHA256@|$sha|g" kubectl/krew/qdstat.yaml.in >"$out/qdstat.yaml"
echo "$out/qdstat.yaml ($archive, sha256 $sha)"
