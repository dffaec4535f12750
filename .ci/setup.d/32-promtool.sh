#!/usr/bin/env bash
# Install Debian's Prometheus: its promtool checks and unit-tests the chart's alert rules, and
# the server evaluates them against a real operator (tests/alerts). Idempotent. The tests start
# the server themselves, on their own ports; nothing here starts it.
set -euo pipefail
# shellcheck source=../lib/apt.sh
. "$(dirname "$0")/../lib/apt.sh"

apt_install_missing prometheus
# The package's own server, where an init system started it, is not wanted: the tests start
# theirs, and it would only take CPU beside them.
if command -v systemctl >/dev/null && systemctl is-active --quiet prometheus 2>/dev/null; then
    systemctl stop prometheus || true
fi
command -v promtool >/dev/null && command -v prometheus >/dev/null ||
    { echo "setup promtool: promtool or prometheus missing" >&2; exit 1; }
echo "setup promtool: $(promtool --version 2>&1 | head -1)"
