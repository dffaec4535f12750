#!/usr/bin/env bash
# Build the qdmesh router and operator images and save them as docker-archive tarballs:
#   build/images/qdmesh-router-VERSION.tar, build/images/qdmesh-operator-VERSION.tar
# VERSION is the Python package version (pyproject.toml); images are tagged
# qdmesh/router:VERSION and qdmesh/operator:VERSION, never latest.
#
# Usage: images/build.sh [--base IMAGE] [--engine docker|buildah] [--no-save] [--push PREFIX]
#                        [router|router-pypy|operator|e2e-broker]...
# (router-pypy: the router on PyPy, qdmesh/router-pypy:VERSION, from the router's Containerfile;
#  e2e-broker: RabbitMQ for the end-to-end tests, qdmesh/e2e-broker:VERSION; neither is built by default.)
#   --base IMAGE   Debian bookworm image with python3 to build from (default: python:3.11-slim-bookworm
#                  if it is present locally or can be pulled, otherwise qdmesh/base:bookworm made
#                  here with debootstrap from Debian's packages).
#   --engine       docker (default when the docker CLI exists; the daemon is started if needed) or buildah.
#   --push PREFIX  also tag each image PREFIX/NAME:VERSION (e.g. registry.example.com/qdmesh/router:0.1.0)
#                  and push it (log in to the registry first); prints the chart values that use them.
# Environment: QDMESH_IMAGE_CACHE (default ~/.cache/qdmesh-images) keeps the debootstrap root
# filesystem between runs; DEBIAN_MIRROR (default http://deb.debian.org/debian).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

base=""
engine=""
save=yes
push=""
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        --base) base=$2; shift 2 ;;
        --engine) engine=$2; shift 2 ;;
        --no-save) save=""; shift ;;
        --push) push=${2:-}; push=${push%/}; shift $(( $# > 1 ? 2 : 1 ))
                [ -n "$push" ] || { echo "build.sh: --push needs REGISTRY/PREFIX" >&2; exit 2; } ;;
        router|router-pypy|operator|e2e-broker) targets+=("$1"); shift ;;
        -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
        *) echo "build.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done
[ ${#targets[@]} -gt 0 ] || targets=(router operator)

version=$(sed -n 's/^version *= *"\(.*\)"/\1/p' pyproject.toml | head -1)
[ -n "$version" ] || { echo "build.sh: no version in pyproject.toml" >&2; exit 1; }
cache=${QDMESH_IMAGE_CACHE:-$HOME/.cache/qdmesh-images}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
out=$repo/build/images
context=$out/context
mkdir -p "$cache" "$out"
log() { echo "build.sh: $*" >&2; }

# -- engine ------------------------------------------------------------------------------------
if [ -z "$engine" ]; then
    if command -v docker >/dev/null; then engine=docker; elif command -v buildah >/dev/null; then engine=buildah; fi
fi
case "$engine" in
    docker)
        bash "$(dirname "$0")/start-dockerd.sh" "$cache"
        image_exists() { docker image inspect "$1" >/dev/null 2>&1; }
        pull() { docker pull -q "$1" >/dev/null 2>&1; }
        import_rootfs() { docker import "$2" "$1" >/dev/null; }  # import_rootfs TAG TARFILE
        build() {  # build TAG CONTAINERFILE [BUILD-ARG...]
            # Host network: RUN steps reach Debian's mirror like the host does.
            docker build --network host -q -t "$1" -f "$2" --build-arg "BASE_IMAGE=$base" \
                --build-arg "QDMESH_VERSION=$version" "${@:3}" "$context" >/dev/null
        }
        run_in() { docker run --rm --network none --entrypoint "$2" "$1" "${@:3}"; }
        save_image() { docker save -o "$2" "$1"; }
        push_image() { docker tag "$1" "$2" && docker push -q "$2" >/dev/null; }  # push_image TAG REMOTE
        ;;
    buildah)
        image_exists() { buildah inspect --type image "$1" >/dev/null 2>&1; }
        pull() { buildah pull -q "$1" >/dev/null 2>&1; }
        import_rootfs() {  # import_rootfs TAG TARFILE (buildah add unpacks a local tar archive)
            local c; c=$(buildah from scratch)
            buildah add --quiet "$c" "$2" / >/dev/null
            buildah commit -q "$c" "$1" >/dev/null; buildah rm "$c" >/dev/null
        }
        build() {
            buildah bud --network host -q -t "$1" -f "$2" --build-arg "BASE_IMAGE=$base" \
                --build-arg "QDMESH_VERSION=$version" "${@:3}" "$context" >/dev/null
        }
        run_in() {  # run_in IMAGE COMMAND ARGS... in a throwaway working container (no podman needed)
            local c rc=0; c=$(buildah from -q "$1")
            buildah run --network none "$c" -- "${@:2}" || rc=$?
            buildah rm "$c" >/dev/null
            return $rc
        }
        save_image() { buildah push -q "$1" "docker-archive:$2:$1"; }
        push_image() { buildah tag "$1" "$2" && buildah push -q "$2" "docker://$2"; }
        ;;
    "") log "neither docker nor buildah found (apt-get install docker.io, or buildah)"; exit 1 ;;
    *) log "unknown --engine: $engine (docker or buildah)"; exit 2 ;;
esac

# -- base image ----------------------------------------------------------------------------------
make_debootstrap_base() {
    local tag=qdmesh/base:bookworm rootfs_tar=$cache/bookworm-rootfs.tar
    if image_exists "$tag"; then base=$tag; return; fi
    if [ ! -s "$rootfs_tar" ]; then
        command -v debootstrap >/dev/null || { log "no base image and no debootstrap (apt-get install debootstrap)"; exit 1; }
        local dir; dir=$(mktemp -d "$cache/rootfs.XXXXXX")
        log "debootstrap bookworm into $dir (minbase + python3)"
        debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
            bookworm "$dir" "$mirror" >"$cache/debootstrap.log" 2>&1 ||
            { log "debootstrap failed: see $cache/debootstrap.log"; rm -rf "$dir"; exit 1; }
        echo "deb $mirror bookworm main" >"$dir/etc/apt/sources.list"
        rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
        tar -C "$dir" --numeric-owner -cf "$rootfs_tar.tmp" . && mv "$rootfs_tar.tmp" "$rootfs_tar"
        rm -rf "$dir"
    fi
    import_rootfs "$tag" "$rootfs_tar"
    base=$tag
}
if [ -z "$base" ]; then
    if image_exists python:3.11-slim-bookworm || pull python:3.11-slim-bookworm; then
        base=python:3.11-slim-bookworm
    else
        make_debootstrap_base
    fi
fi
log "base image: $base, engine: $engine, version: $version"

# -- context: the qdmesh source distribution, and every dependency for the base's Python -------
py=$(run_in "$base" python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
rm -rf "$context"; mkdir -p "$context/wheels/qdmesh"
# A source distribution, not a wheel: each image builds qdmesh with its own interpreter
# (CPython or PyPy), compiling the router's proton shim for it (setup.py).
tar -C "$repo" --exclude=__pycache__ --exclude='*.pyc' --exclude='*.so' --exclude='*.egg-info' \
    --transform "s,^,qdmesh-$version/," -czf "$context/wheels/qdmesh/qdmesh-$version.tar.gz" \
    pyproject.toml setup.py README.md router operator telemetry kubectl
# The dependencies change rarely: download them once per requirement set and Python, and copy
# them from the cache (same bytes, so the image layers built from them stay cached too).
# cffi below 2 as pyproject.toml pins it on CPython (its call path is faster).
requirements=("kopf>=1.37" "kubernetes>=29.0" "jinja2>=3.1" "pyyaml>=6.0" "cryptography>=42" setuptools wheel "cffi>=1.15,<2" pycparser)
# The PyPy router image (Python 3.9) builds proton with these, and PyPy's built-in cffi.
pypy_build_requirements=(setuptools wheel pycparser)
deps_key=$(printf '%s\n' "$py" "${requirements[@]}" python-qpid-proton==0.40.0 pypy39 "${pypy_build_requirements[@]}" |
           sha256sum | cut -c1-16)
deps=$cache/wheels-$deps_key
if [ ! -e "$deps/.complete" ]; then
    rm -rf "$deps"; mkdir -p "$deps"
    platform=(--only-binary=:all: --python-version "$py" --implementation cp --abi "cp${py/./}" --abi abi3
              --abi none --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64)
    python3 -m pip download --quiet -d "$deps" "${platform[@]}" "${requirements[@]}"
    # python-qpid-proton is built from its sdist inside the image (PyPI has no wheel pip takes
    # here, and the router needs it built against Cyrus SASL anyway).
    python3 -m pip download --quiet -d "$deps" --no-deps --no-binary :all: python-qpid-proton==0.40.0
    python3 -m pip download --quiet -d "$deps" --only-binary=:all: --python-version 3.9 --implementation py \
        --abi none --platform any "${pypy_build_requirements[@]}"
    touch "$deps/.complete"
fi
mkdir -p "$context/wheels/deps"
cp -p "$deps"/*.whl "$deps"/*.tar.gz "$context/wheels/deps/"

# -- images ----------------------------------------------------------------------------------------
for target in "${targets[@]}"; do
    tag=qdmesh/$target:$version
    start=$(date +%s)
    log "building $tag"
    case "$target" in
        router-pypy) build "$tag" "$repo/images/router/Containerfile" --build-arg ROUTER_PYTHON=pypy3 ;;
        *) build "$tag" "$repo/images/$target/Containerfile" ;;
    esac
    log "built $tag in $(( $(date +%s) - start )) s"
    if [ -n "$save" ]; then
        archive=$out/qdmesh-$target-$version.tar
        save_image "$tag" "$archive"
        log "saved $archive ($(du -m "$archive" | cut -f1) MiB)"
    fi
    if [ -n "$push" ]; then
        remote=$push/$target:$version
        push_image "$tag" "$remote" || { log "pushing $remote failed (logged in to the registry?)"; exit 1; }
        log "pushed $remote"
    fi
done
if [ -n "$push" ]; then
    log "install the chart with these images (add --set imagePullSecrets[0].name=SECRET for a private registry):"
    echo "helm install qdmesh charts/qdmesh -n qdmesh-system --create-namespace --set image.repository=$push/operator --set routerImage=$push/router:$version"
fi
