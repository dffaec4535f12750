#!/usr/bin/env bash
# Install Debian's Prometheus for its promtool: the chart's alert rules are checked and
# unit-tested with it (tests/alerts). Idempotent. The server the package brings is not started
# by the tests (no init system runs it here either).
set -euo pipefail

if ! command -v promtool >/dev/null || ! command -v prometheus >/dev/null; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then
        SUDO="sudo -n"
    fi
    export DEBIAN_FRONTEND=noninteractive
    status=0
    for attempt in 1 2 3 4; do
        # Other setup steps (or a developer) may be running apt-get: wait for dpkg's lock.
        if $SUDO apt-get -o DPkg::Lock::Timeout=600 update -q &&
            $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends prometheus; then
            status=0
            break
        else
            status=$?
        fi
        echo "setup promtool: apt-get failed (attempt $attempt), retrying" >&2
        sleep $((attempt * 5))
    done
    if [ "$status" -ne 0 ]; then
        echo "setup promtool: could not install prometheus (promtool)" >&2
        exit "$status"
    fi
fi

command -v promtool >/dev/null && command -v prometheus >/dev/null || { echo "setup promtool: promtool or prometheus missing" >&2; exit 1; }
echo "setup promtool: $(promtool --version 2>&1 | head -1)"
