#!/usr/bin/env bash
# PyPy with python-qpid-proton, for tests/pypy: the router must keep running on PyPy (Python
# 3.9), which is how it reaches its throughput targets (bench/README.md). Debian's pypy3, and a
# venv holding only python-qpid-proton, built from source (PyPI has no PyPy wheel; about a
# minute). The tests run the checkout's router in it through PYTHONPATH, so the venv never holds
# a stale copy of the router. Idempotent: does nothing but check when the venv works.
set -euo pipefail

PROTON_VERSION=0.40.0
VENV=${QDMESH_PYPY_VENV:-${QDMESH_CACHE:-$HOME/.cache/qdmesh}/pypy-venv}

works() {
    "$VENV/bin/python" -c 'import proton, sys; sys.exit(0 if sys.implementation.name == "pypy" else 1)' \
        2>/dev/null
}

if works; then
    echo "PyPy venv with python-qpid-proton: ok ($VENV)"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo -n"
fi
packages="pypy3 pypy3-dev gcc"
missing=""
for package in $packages; do
    dpkg -s "$package" >/dev/null 2>&1 || missing="$missing $package"
done
if [ -n "$missing" ]; then
    export DEBIAN_FRONTEND=noninteractive
    status=1
    for attempt in 1 2 3; do
        # shellcheck disable=SC2086
        if $SUDO apt-get update -q && $SUDO apt-get install -y -q --no-install-recommends $missing; then
            status=0
            break
        fi
        echo "apt-get failed (attempt $attempt); retrying" >&2
        sleep $((attempt * 10))
    done
    [ "$status" -eq 0 ] || { echo "cannot install$missing" >&2; exit 1; }
fi

rm -rf "$VENV"
mkdir -p "$(dirname "$VENV")"
pypy3 -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet "python-qpid-proton==$PROTON_VERSION"
works || { echo "the PyPy venv at $VENV cannot import proton" >&2; exit 1; }
echo "PyPy venv with python-qpid-proton $PROTON_VERSION: ok ($VENV)"
