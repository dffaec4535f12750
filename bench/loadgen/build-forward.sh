#!/bin/sh
# Build qdm-forward, the C forwarder (bench/run.py --forward), into bench/build/.
#
#   build-forward.sh PYTHON     against the proton-C that PYTHON's python-qpid-proton bundles:
#                               the engine the router runs on there, so the two compare like
#                               for like. Its source distribution comes from the package
#                               index (pip download) once, into bench/build/.
#   build-forward.sh --system   against the system's proton-C (libqpid-proton11-dev), as
#                               build.sh builds the load generators; for its tests.
#
# Environment: CC (default cc), CFLAGS (default -O2 -g), BUILD_DIR (default bench/build),
# OUT (default BUILD_DIR/qdm-forward).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD_DIR:-$here/../build}
mkdir -p "$build"
build=$(cd "$build" && pwd)
out=${OUT:-$build/qdm-forward}
cc=${CC:-cc}
cflags=${CFLAGS:--O2 -g}
warn="-std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter"
# common.c's proactor helpers are not used here, and a bundled proton has no proactor:
# dropping unused sections lets the link leave them out.
gc="-ffunction-sections -fdata-sections -Wl,--gc-sections"

if [ "${1:-}" = "--system" ]; then
  pkgs=$(pkg-config --exists libqpid-proton-core 2>/dev/null && echo libqpid-proton-core || echo libqpid-proton)
  # shellcheck disable=SC2046,SC2086  # word splitting of flag lists is intended
  $cc $cflags $warn $gc $(pkg-config --cflags $pkgs) -o "$out" "$here/qdm-forward.c" "$here/common.c" \
    $(pkg-config --libs $pkgs)
  echo "built: $out (system proton-C $(pkg-config --modversion $pkgs))"
  exit 0
fi

python=${1:?usage: build-forward.sh PYTHON | --system}
version=$("$python" -c 'import proton; print(".".join(str(n) for n in proton.VERSION))')
src=$build/python_qpid_proton-$version
if [ ! -d "$src/src/core" ]; then
  "$python" -m pip download --quiet --no-deps --no-binary :all: \
    -d "$build" "python-qpid-proton==$version"
  tar -xzf "$build/python_qpid_proton-$version.tar.gz" -C "$build"
fi
# The sources python-qpid-proton's own build (ext_build.py) compiles, with SASL and TLS
# stubbed: the forwarder offers ANONYMOUS only, on plain TCP.
sources=$(find "$src/src/core" -name '*.c' | sort)
# shellcheck disable=SC2086
$cc $cflags $warn -Wno-sign-compare -Wno-missing-field-initializers $gc -DPROTON_DECLARE_STATIC \
  -I"$src/include" -I"$src/src" -o "$out" "$here/qdm-forward.c" "$here/common.c" $sources \
  "$src/src/compiler/gcc/start.c" "$src/src/sasl/sasl.c" "$src/src/sasl/default_sasl.c" \
  "$src/src/sasl/cyrus_stub.c" "$src/src/ssl/ssl_stub.c"
echo "built: $out (proton-C $version, python-qpid-proton's bundled source)"
