#!/usr/bin/env bash
# python-qpid-proton with Cyrus SASL (PLAIN, SCRAM-SHA-*, sasldb users) for the router's
# authentication. The PyPI wheel is built without Cyrus (proton.SASL.extended() is False), so
# rebuild it from its source distribution against Debian's libsasl2-dev. Idempotent: does
# nothing but check when the installed proton already has Cyrus. Runs with the CI venv's pip
# first on PATH (python3 is the venv's python there).
set -euo pipefail

# python3 from PATH: the CI venv's (or, run by hand, the machine's). Not $PYTHON, which
# .ci/run may have used to make the venv.
PYTHON=${CYRUS_PROTON_PYTHON:-python3}
PROTON_VERSION=0.40.0
# The Cyrus-enabled wheel is kept here, so a fresh venv installs it in seconds.
WHEEL_CACHE=${QDMESH_CACHE:-$HOME/.cache/qdmesh}/proton-cyrus-wheels

has_cyrus() {
    "$PYTHON" -c 'import proton, sys; sys.exit(0 if proton.SASL.extended() else 1)' 2>/dev/null
}

# shellcheck source=../lib/apt.sh
. "$(dirname "$0")/../lib/apt.sh"
apt_install_missing libsasl2-dev sasl2-bin libsasl2-modules libsasl2-modules-db pkg-config

if ! has_cyrus && [ -d "$WHEEL_CACHE" ]; then
    "$PYTHON" -m pip install --quiet --no-index --find-links "$WHEEL_CACHE" --force-reinstall --no-deps \
        "python-qpid-proton==$PROTON_VERSION" || true
fi
if ! has_cyrus; then
    # --no-cache-dir: a wheel pip built earlier without Cyrus would be reused otherwise.
    build=$(mktemp -d)
    "$PYTHON" -m pip wheel --quiet --no-cache-dir --no-deps --no-binary python-qpid-proton \
        -w "$build" "python-qpid-proton==$PROTON_VERSION"
    "$PYTHON" -m pip install --quiet --no-index --force-reinstall --no-deps "$build"/python_qpid_proton-*.whl
    if has_cyrus; then
        mkdir -p "$WHEEL_CACHE"
        cp "$build"/python_qpid_proton-*.whl "$WHEEL_CACHE"/
    fi
    rm -rf "$build"
fi
has_cyrus || { echo "python-qpid-proton still lacks Cyrus SASL after the rebuild" >&2; exit 1; }
echo "python-qpid-proton $PROTON_VERSION with Cyrus SASL: ok"
