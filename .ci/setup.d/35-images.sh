#!/usr/bin/env bash
# Build the router and operator images (images/build.sh) and leave their archives in
# build/images/ for tests/images and the end-to-end cluster. The archives are cached in
# ${QDMESH_IMAGE_CACHE:-~/.cache/qdmesh-images}/archives under a hash of everything that goes
# into them, so a warm run only loads them (seconds); cold: see docs/images.md.
set -euo pipefail
cd "$(dirname "$0")/../.."

version=$(sed -n 's/^version *= *"\(.*\)"/\1/p' pyproject.toml | head -1)
cache=${QDMESH_IMAGE_CACHE:-$HOME/.cache/qdmesh-images}
# The images hold the package (its sources and metadata) and the Containerfiles.
key=$( (git ls-files -s pyproject.toml setup.py README.md images router operator telemetry kubectl 2>/dev/null ||
        find pyproject.toml setup.py README.md images router operator telemetry kubectl -type f -print0 |
        sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-16)
stash=$cache/archives/$version-$key
mkdir -p build/images

# The router images (CPython and PyPy), the operator image, and RabbitMQ for the end-to-end tests.
targets=(router router-pypy operator e2e-broker)
cached=yes
for target in "${targets[@]}"; do
    [ -s "$stash/qdmesh-$target-$version.tar" ] || cached=""
done
if [ -n "$cached" ]; then
    echo "setup images: cached archives for $version ($key)" >&2
    cp "$stash"/qdmesh-*-"$version".tar build/images/
    # tests/images runs the images in Docker: its daemon may not be running (after a reboot).
    bash images/start-dockerd.sh "$cache"
    for archive in build/images/qdmesh-*-"$version".tar; do docker load -q -i "$archive" >/dev/null; done
    exit 0
fi

start=$(date +%s)
bash images/build.sh "${targets[@]}"
mkdir -p "$stash"
for target in "${targets[@]}"; do
    cp build/images/qdmesh-"$target"-"$version".tar "$stash/"
done
# Keep only the newest few builds.
ls -1dt "$cache"/archives/*/ 2>/dev/null | tail -n +4 | xargs -r rm -rf
echo "setup images: built in $(( $(date +%s) - start )) s" >&2
