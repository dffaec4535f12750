#!/usr/bin/env bash
# proton-C's headers, a C compiler and pkg-config, for the benchmark's load generators
# (bench/loadgen/build.sh). tests/router/test_bench_loadgen.py builds them and checks that they
# speak correct AMQP, since every figure in bench/README.md is measured with them.
set -euo pipefail

# shellcheck source=../lib/apt.sh
. "$(dirname "$0")/../lib/apt.sh"
apt_install_missing libqpid-proton11-dev gcc pkg-config
pkg-config --modversion libqpid-proton | sed 's/^/setup loadgen: proton-C /'
