#!/bin/sh
# Build the qdmesh load generators (qdm-send, qdm-recv, qdm-hold) and the byte relay (qdm-relay)
# into bench/build/.
#
# Needs proton-C >= 0.31 with the proactor (Debian/Ubuntu: libqpid-proton11-dev).
# Environment: CC (default cc), CFLAGS (default -O2 -g), BUILD_DIR (default bench/build).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
out=${BUILD_DIR:-$here/../build}
cc=${CC:-cc}
cflags=${CFLAGS:--O2 -g}

# Distributions differ: upstream installs separate core/proactor .pc files,
# Debian ships a single libqpid-proton.pc whose library includes the proactor.
if pkg-config --exists libqpid-proton-proactor libqpid-proton-core 2>/dev/null; then
  pkgs="libqpid-proton-proactor libqpid-proton-core"
elif pkg-config --exists libqpid-proton 2>/dev/null; then
  pkgs="libqpid-proton"
else
  echo "build.sh: proton-C not found by pkg-config; install libqpid-proton11-dev (apt) or qpid-proton-c-devel" >&2
  exit 1
fi
pc_cflags=$(pkg-config --cflags $pkgs)
pc_libs=$(pkg-config --libs $pkgs)

mkdir -p "$out"
out=$(cd "$out" && pwd)
warn="-std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter"
# shellcheck disable=SC2086  # word splitting of flag lists is intended
$cc $cflags $warn $pc_cflags -o "$out/qdm-send" "$here/qdm-send.c" "$here/common.c" $pc_libs
# shellcheck disable=SC2086
$cc $cflags $warn $pc_cflags -o "$out/qdm-recv" "$here/qdm-recv.c" "$here/common.c" \
  "$here/body_walk.c" "$here/latency_stats.c" $pc_libs
# shellcheck disable=SC2086
$cc $cflags $warn $pc_cflags -o "$out/qdm-hold" "$here/qdm-hold.c" "$here/common.c" $pc_libs
# The byte relay (bench/run.py --relay) is plain sockets, no proton.
$cc $cflags $warn -o "$out/qdm-relay" "$here/qdm-relay.c"
echo "built: $out/qdm-send $out/qdm-recv $out/qdm-hold $out/qdm-relay (proton $(pkg-config --modversion $pkgs | head -n 1))"
