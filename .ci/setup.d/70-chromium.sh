#!/usr/bin/env bash
# Install Debian's Chromium and ChromeDriver for the web console's browser tests (tests/console).
# Idempotent: only checks when both are there. Selenium itself comes from the [test] extra.
set -euo pipefail

have_browser() {
    command -v chromium >/dev/null && command -v chromedriver >/dev/null
}

if ! have_browser; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then
        SUDO="sudo -n"
    fi
    export DEBIAN_FRONTEND=noninteractive
    status=0
    for attempt in 1 2 3 4; do
        # Other setup steps (or a developer) may be running apt-get: wait for dpkg's lock.
        if $SUDO apt-get -o DPkg::Lock::Timeout=600 update -q &&
            $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends \
                chromium chromium-driver fonts-dejavu-core; then
            status=0
            break
        else
            status=$?
        fi
        echo "setup chromium: apt-get failed (attempt $attempt), retrying" >&2
        sleep $((attempt * 5))
    done
    if [ "$status" -ne 0 ]; then
        echo "setup chromium: could not install chromium and chromium-driver" >&2
        exit "$status"
    fi
fi

have_browser || { echo "setup chromium: chromium or chromedriver missing" >&2; exit 1; }
echo "setup chromium: $(chromium --version 2>/dev/null | head -1); $(chromedriver --version | head -1)"
