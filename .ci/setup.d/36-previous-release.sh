#!/usr/bin/env bash
# The previous release's router and operator images and its chart, for the upgrade test
# (tests/e2e/test_product_upgrade.py, docs/e2e.md). Built from git, at the ref below, with
# that release's own images/build.sh and Containerfiles; tagged VERSION-previous so that they
# never take the place of this checkout's images. Leaves:
#   build/images/qdmesh-{router,operator}-previous.tar  (tests/e2e/run.sh loads them)
#   build/previous-release/chart/                       (the release's charts/qdmesh)
#   build/previous-release/release.env                  (ref, version, the two image tags)
# Cached under ${QDMESH_IMAGE_CACHE:-~/.cache/qdmesh-images}/previous/ by the ref's tree, so a
# machine builds them once; run after 35-images.sh, whose image layers the build reuses.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD

# The previous release: the commit at which CHANGELOG.md first records 0.1.0 as released (the
# repository carries no release tags). Move it forward when a version is released.
ref=${QDMESH_PREVIOUS_REF:-5ae50a6027c6f8bec4f1f76200734431b2382b47}
targets=(router operator)

log() { echo "setup previous release: $*" >&2; }
if ! git cat-file -e "$ref^{commit}" 2>/dev/null; then
    # A shallow clone: fetch just that commit.
    git fetch --quiet --depth=1 origin "$ref" 2>/dev/null ||
        { log "commit $ref is not in this clone and could not be fetched (clone with history)"; exit 1; }
fi
tree=$(git rev-parse "$ref^{tree}")
version=$(git show "$ref:pyproject.toml" | sed -n 's/^version *= *"\(.*\)"/\1/p' | head -1)
tag=$version-previous
cache=${QDMESH_IMAGE_CACHE:-$HOME/.cache/qdmesh-images}
stash=$cache/previous/${tree:0:16}
out=$repo/build/previous-release
mkdir -p build/images "$out"

cached=yes
for target in "${targets[@]}"; do
    [ -s "$stash/qdmesh-$target-previous.tar" ] || cached=""
done
[ -s "$stash/chart.tar" ] || cached=""
start=$(date +%s)
if [ -z "$cached" ]; then
    work=$(mktemp -d "${TMPDIR:-/tmp}/qdmesh-previous.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    git archive "$ref" | tar -x -C "$work"
    log "building $version at $ref in $work"
    QDMESH_IMAGE_CACHE=$cache bash "$work/images/build.sh" --no-save "${targets[@]}"
    mkdir -p "$stash.tmp"
    for target in "${targets[@]}"; do
        docker tag "qdmesh/$target:$version" "qdmesh/$target:$tag"
        docker save -o "$stash.tmp/qdmesh-$target-previous.tar" "qdmesh/$target:$tag"
        # The release's build took this version's tag: give it back to this checkout's image.
        current=build/images/qdmesh-$target-$version.tar
        if [ -s "$current" ]; then docker load -q -i "$current" >/dev/null; else docker rmi -f "qdmesh/$target:$version" >/dev/null; fi
    done
    tar -C "$work/charts" -cf "$stash.tmp/chart.tar" qdmesh
    rm -rf "$stash" && mv "$stash.tmp" "$stash"
    log "built in $(( $(date +%s) - start )) s"
fi
for target in "${targets[@]}"; do
    cp "$stash/qdmesh-$target-previous.tar" build/images/
done
rm -rf "$out/chart" && mkdir -p "$out/chart" && tar -C "$out/chart" -xf "$stash/chart.tar" --strip-components=1
cat >"$out/release.env" <<EOF
ref=$ref
version=$version
router_image=qdmesh/router:$tag
operator_image=qdmesh/operator:$tag
EOF
log "$version ($ref) ready in $(( $(date +%s) - start )) s: build/images/qdmesh-*-previous.tar, $out"
