#!/usr/bin/env bash
# PyPy with python-qpid-proton, for tests/router/test_pypy.py: the router must keep running on PyPy (Python
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

# shellcheck source=../lib/apt.sh
. "$(dirname "$0")/../lib/apt.sh"
apt_install_missing pypy3 pypy3-dev gcc

rm -rf "$VENV"
mkdir -p "$(dirname "$VENV")"
pypy3 -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet "python-qpid-proton==$PROTON_VERSION"
works || { echo "the PyPy venv at $VENV cannot import proton" >&2; exit 1; }
echo "PyPy venv with python-qpid-proton $PROTON_VERSION: ok ($VENV)"
